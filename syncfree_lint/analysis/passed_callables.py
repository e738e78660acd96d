"""Functions handed to a parameter that the callee calls: ``run(train_step)`` with
``def run(step_fn): for batch in loader: step_fn(batch)`` runs ``train_step`` once per batch.

The walk records where each function calls one of its own parameters, and which functions each
call passes into which parameters of this file's functions; ``sites`` joins the two into call
sites placed where the parameter is called (in a step loop: a step; elsewhere in the callee: as
often as the callee runs). A parameter kept on ``self`` (``self.callbacks = list(callbacks)`` in
``__init__``) is called where a method calls the attribute or an element of it (``for cb in
self.callbacks: cb(self, loss)``): the call counts as a call of ``__init__``'s parameter.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import libcst as cst

from syncfree_lint.analysis.filefacts import CallSite
from syncfree_lint.analysis.nodes import local_names

#: name of a call of a parameter (``PARAMETER_KEY + function id + "|" + parameter``) in ``calls_out`` and in the
#: return kinds a file asks for: the run hands the argument kinds to the functions passed there, and tells what they
#: return (``run_kinds``)
PARAMETER_KEY = "parameter "


def parameter_key(path: str, held: Tuple[str, str]) -> str:
    """The run-wide name of parameter ``held`` (function qualname, parameter) of the file at ``path``."""
    return f"{PARAMETER_KEY}{path}::{held[0]}|{held[1]}"


if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef
    from syncfree_lint.analysis.scope import FunctionFrame, Placement


@dataclass
class PassedCallables:
    #: (function qualname, parameter) -> where the function calls that parameter
    called: Dict[Tuple[str, str], List[Tuple["Placement", Optional[cst.CSTNode]]]] = field(default_factory=dict)
    #: (callee reference, is it a method called on an instance, argument position or keyword, the function passed)
    passed: List[Tuple["CallRef", bool, object, "CallRef"]] = field(default_factory=list)
    #: (function qualname, loop variable) -> the parameter it iterates (``for hook in hooks:``), as
    #: (the function whose parameter it is, the parameter)
    elements: Dict[Tuple[str, str], Tuple[str, str]] = field(default_factory=dict)
    #: (class qualname, ``self.attr``) -> (the method that keeps a parameter there, the parameter)
    kept: Dict[Tuple[str, str], Tuple[str, str]] = field(default_factory=dict)
    #: nested function qualname -> the names it binds itself (a closure's own names hide the outer parameters)
    locals_of: Dict[str, FrozenSet[str]] = field(default_factory=dict)

    def keep(self, frame: "FunctionFrame", attribute: str, value: cst.BaseExpression) -> None:
        """``self.callbacks = callbacks`` (or ``list(callbacks)``, ``tuple(...)``) in a method."""
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "tuple") \
                and len(value.args) == 1:
            value = value.args[0].value
        if frame.class_frame is not None and isinstance(value, cst.Name) and value.value in parameter_names(frame):
            self.kept[(frame.class_frame.qualname, attribute)] = (frame.qualname, value.value)

    def held(self, frame: "FunctionFrame", name: str) -> Optional[Tuple[str, str]]:
        """(function, parameter) that ``name`` stands for in ``frame``: a parameter, a loop variable
        over one, or an attribute a method keeps one in."""
        if name in parameter_names(frame):
            return frame.qualname, name
        if name.startswith("self.") and frame.class_frame is not None:
            return self.kept.get((frame.class_frame.qualname, name))
        element = self.elements.get((frame.qualname, name))
        if element is None and frame.outer is not None and "." not in name and isinstance(frame.node, cst.FunctionDef):
            own = self.locals_of.get(frame.qualname)
            if own is None:
                own = self.locals_of[frame.qualname] = local_names(frame.node)
            if name not in own:
                return self.held(frame.outer, name)  # a closure calling a parameter of the function around it
        return element

    def iterates(self, frame: Optional["FunctionFrame"], name: str) -> bool:
        """``name`` is a loop variable over a parameter of ``frame`` or a list kept from one (``for cb in callbacks``)."""
        return frame is not None and (frame.qualname, name) in self.elements

    def loop_over(self, frame: "FunctionFrame", target: str, iterable: str) -> None:
        """``for target in iterable:`` in ``frame``: calling ``target`` calls an element of the parameter."""
        parameter = self.held(frame, iterable)
        if parameter is not None:
            self.elements[(frame.qualname, target)] = parameter

    def parameter_called(self, frame: "FunctionFrame", name: str, placement: "Placement",
                         statement: Optional[cst.CSTNode]) -> None:
        parameter = self.held(frame, name)
        if parameter is not None:
            self.called.setdefault(parameter, []).append((placement, statement))

    def function_passed(self, callee: "CallRef", bound: bool, args: Sequence[cst.Arg],
                        values_of: Callable[[cst.BaseExpression], List["CallRef"]]) -> None:
        """Record the functions ``args`` pass to ``callee`` (``bound``: ``self`` is not among them)."""
        position = 0
        for arg in args:
            if arg.star:
                break
            slot: object = arg.keyword.value if arg.keyword is not None else position
            if arg.keyword is None:
                position += 1
            if isinstance(arg.value, (cst.Name, cst.Attribute, cst.Call, cst.List, cst.Tuple)):
                self.passed.extend((callee, bound, slot, function) for function in values_of(arg.value))

    def sites(self, resolve: Callable[["CallRef"], List[str]], functions: Dict[str, "FunctionFrame"]) -> List[CallSite]:
        """Call sites of the passed functions, where their parameters are called."""
        out: List[CallSite] = []
        if not self.called:
            return out
        for callee, bound, slot, function in self.passed:
            for qualname in resolve(callee):
                frame = functions.get(qualname)
                if frame is None:
                    continue
                name = slot if isinstance(slot, str) else _positional(frame, slot, bound)
                for placement, statement in self.called.get((qualname, name or ""), ()):
                    out.append(CallSite(placement, function, statement))
        return out


def parameter_names(frame: "FunctionFrame") -> List[str]:
    node = frame.node
    if not isinstance(node, cst.FunctionDef):
        return []
    params = node.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _positional(frame: "FunctionFrame", index: object, bound: bool) -> Optional[str]:
    node = frame.node
    if not isinstance(node, cst.FunctionDef) or not isinstance(index, int):
        return None
    names = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
    if bound and frame.class_frame is not None:
        names = names[1:]
    return names[index] if index < len(names) else None

