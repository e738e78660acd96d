"""Hooks named by a string: a function that calls, on each object of a list, the method a parameter names.

``self._fire("on_batch_end", logs)`` with ``def _fire(self, hook, *args): for cb in self.callbacks:
getattr(cb, hook)(self, *args)`` runs the ``on_batch_end`` of every callback the list holds, with
``(self, logs)``: at the call, it is a hook called on each object of a list handed in
(``analysis.hooks.EACH_HOOK_KEY``), so every project method of that name runs there, with the
arguments' kinds. ``dispatchers`` finds such functions in a file (before the walk, so a call above
the definition knows it); ``hook_call`` turns a call of one into the hook's name and arguments.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from syncfree_lint.analysis.hooks import is_hook_name
from syncfree_lint.analysis.nodes import walk_code


@dataclass(frozen=True)
class Dispatcher:
    position: int  # of the parameter that names the hook, among the arguments a call passes
    lead: Tuple[cst.BaseExpression, ...]  # what the dispatcher passes the hook before the arguments it forwards
    forwards: bool  # it forwards the call's further positional arguments (``*args``)


#: the last module asked about and its answer: every walk of a file asks again (``arguments.analyse``)
_LAST: List[Tuple[cst.Module, Dict[str, Dispatcher]]] = []


def dispatchers(module: cst.Module, source: str) -> Dict[str, Dispatcher]:
    """Local qualname -> the dispatcher, for the module's functions and the methods of its classes."""
    if "getattr(" not in source:
        return {}
    if _LAST and _LAST[0][0] is module:
        return _LAST[0][1]
    out: Dict[str, Dispatcher] = {}
    _LAST[:] = [(module, out)]
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            _add(out, statement.name.value, statement, method=False)
        elif isinstance(statement, cst.ClassDef):
            for member in getattr(statement.body, "body", ()):
                if isinstance(member, cst.FunctionDef):
                    _add(out, f"{statement.name.value}.{member.name.value}", member, method=True)
    return out


def _add(out: Dict[str, Dispatcher], qualname: str, node: cst.FunctionDef, method: bool) -> None:
    params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
    star = node.params.star_arg.name.value if isinstance(node.params.star_arg, cst.Param) else None
    targets = _loop_targets(node)
    named_by: Dict[str, str] = {}  # `fn = getattr(cb, hook, None)`: fn -> the parameter naming the hook
    for inner in walk_code(node.body):
        if (isinstance(inner, cst.Assign) and len(inner.targets) == 1 and isinstance(inner.targets[0].target, cst.Name)
                and (param := _named_method(inner.value, targets, params)) is not None):
            named_by[inner.targets[0].target.value] = param
    for inner in walk_code(node.body):
        if not isinstance(inner, cst.Call):
            continue
        # `getattr(cb, hook)(...)`, or `fn(...)` of `fn = getattr(cb, hook, None)`: `cb` a loop variable, `hook` a
        # parameter
        hook_param = (named_by.get(inner.func.value) if isinstance(inner.func, cst.Name)
                      else _named_method(inner.func, targets, params))
        if hook_param is None:
            continue
        lead: List[cst.BaseExpression] = []
        forwards = False
        for arg in inner.args:
            if arg.star == "*" and isinstance(arg.value, cst.Name) and arg.value.value == star:
                forwards = True
            elif arg.star or arg.keyword is not None or forwards:
                break
            else:
                lead.append(arg.value)
        position = params.index(hook_param) - (1 if method and params[:1] == ["self"] else 0)
        if position >= 0:
            out[qualname] = Dispatcher(position, tuple(lead), forwards)
            return


def _named_method(expr: cst.BaseExpression, targets: List[str], params: List[str]) -> Optional[str]:
    """The parameter ``hook`` of ``getattr(cb, hook)`` or ``getattr(cb, hook, None)``, ``cb`` a loop variable."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "getattr"
            and len(expr.args) in (2, 3) and all(arg.keyword is None and not arg.star for arg in expr.args)):
        return None
    owner, name = expr.args[0].value, expr.args[1].value
    if isinstance(owner, cst.Name) and owner.value in targets and isinstance(name, cst.Name) and name.value in params:
        return name.value
    return None


def _loop_targets(node: cst.FunctionDef) -> List[str]:
    return [n.target.value for n in walk_code(node.body) if isinstance(n, cst.For) and isinstance(n.target, cst.Name)]


def hook_call(dispatcher: Dispatcher, args: Sequence[cst.Arg]) -> Optional[Tuple[str, List[cst.Arg]]]:
    """(the hook a call of ``dispatcher`` runs, the arguments the hook gets), when the call names it with a
    string (``"on_batch_end"``) that reads as a hook; None otherwise."""
    positional = [arg for arg in args if arg.keyword is None and not arg.star]
    if dispatcher.position >= len(positional):
        return None
    named = positional[dispatcher.position].value
    hook = named.evaluated_value if isinstance(named, cst.SimpleString) else None
    if not isinstance(hook, str) or not is_hook_name(hook):
        return None
    forwarded = positional[dispatcher.position + 1:] if dispatcher.forwards else []
    return hook, [cst.Arg(value=value) for value in dispatcher.lead] + forwarded
