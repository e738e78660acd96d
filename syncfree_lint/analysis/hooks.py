"""Callback protocols: a hook called on an object whose class the code does not say.

``for cb in self.callbacks: cb.on_batch_end(self, outputs)`` runs the ``on_batch_end`` of every
callback the trainer holds. Their classes are not known at the call, but the project declares the
protocol: a class defines the hook with a do-nothing body (``pass``, ``...``, a docstring,
``return``, ``raise NotImplementedError``) and its subclasses override it. So such a call, on a
receiver of unknown class, runs every method of that name in the project (the same import root),
when the name reads as a hook (``knowledge.callables.HOOK_METHOD_PREFIXES``) and some project class
declares it as one. Each file publishes its methods (``FileFacts.methods``); the
run's index keys them under ``HOOK_KEY``/``DECLARED_KEY`` (``callgraph``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

import libcst as cst

from syncfree_lint.analysis.calls import NameRef
from syncfree_lint.knowledge.callables import HOOK_METHOD_PREFIXES

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.module import ModuleAnalysis

#: index keys (a space: never part of a dotted name): every hook-named method, and declarations
HOOK_KEY = "hook "
DECLARED_KEY = "declared hook "
#: a hook called on each object of a list handed in (``for cb in callbacks: cb.on_step_end(...)``, ``callbacks`` a
#: parameter or kept from one): the list is the protocol, so every project method of that name may run, declared
#: or not (a lookup key only, never indexed)
EACH_HOOK_KEY = "each hook "


def is_hook_name(name: str) -> bool:
    return name.startswith(HOOK_METHOD_PREFIXES) and not name.startswith("__")


def does_nothing(node: cst.CSTNode) -> bool:
    """A function whose body only declares it: ``pass``, ``...``, a docstring, ``return``
    (``return None``) or ``raise NotImplementedError``."""
    if not isinstance(node, cst.FunctionDef):
        return False  # a lambda bound to a name computes its value
    body = node.body
    if isinstance(body, cst.SimpleStatementSuite):  # `def on_batch_end(self, batch, logs): pass` on one line
        lines: Sequence[Sequence[cst.BaseSmallStatement]] = [body.body]
    else:
        lines = [statement.body if isinstance(statement, cst.SimpleStatementLine) else () for statement in body.body]
        if not all(lines):
            return False
    for smalls in lines:
        for small in smalls:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, (cst.Ellipsis, cst.SimpleString,
                                                                       cst.ConcatenatedString)):
                continue
            if isinstance(small, cst.Return) and (small.value is None or (
                    isinstance(small.value, cst.Name) and small.value.value == "None")):
                continue
            if isinstance(small, cst.Raise) and _names_not_implemented(small.exc):
                continue
            return False
    return True


def _names_not_implemented(exc: Optional[cst.BaseExpression]) -> bool:
    """``NotImplementedError`` or ``NotImplementedError(...)`` (no code generation needed)."""
    if isinstance(exc, cst.Call):
        exc = exc.func
    return isinstance(exc, cst.Name) and exc.value == "NotImplementedError"


def published_methods(walk: "ModuleAnalysis",
                      function_id: Callable[[str], str]) -> List[Tuple[str, str, bool, bool]]:
    """(method name, function id, declared with a do-nothing body, of an ``nn.Module`` class) of the file's
    methods, dunders aside: hook-named ones for the protocols above, the others for calls by method name
    (``calls.by_method_name``)."""
    out = []
    for qual, frame in walk.functions.items():
        if frame.class_frame is not None and not frame.name.startswith("__"):
            out.append((frame.name, function_id(qual), does_nothing(frame.node), frame.class_frame.is_module))
    return out


def hook_key(ref: object, iterated: Callable[[str, str], bool]) -> Optional[str]:
    """The lookup key of a hook called on an object of unknown class (``hook_called``); ``iterated(function,
    name)`` says whether the receiver's name is a loop variable over a list handed in (``EACH_HOOK_KEY``)."""
    hook = hook_called(ref)
    if hook is None or not isinstance(ref, NameRef):
        return None
    return (EACH_HOOK_KEY if iterated(ref.scope, ref.name.split(".")[0]) else HOOK_KEY) + hook


def hook_called(ref: object) -> Optional[str]:
    """The hook a call runs when its receiver's class is unknown (``cb.on_batch_end`` -> ``on_batch_end``)."""
    if not isinstance(ref, NameRef) or ref.name.count(".") != 1:
        return None
    receiver, method = ref.name.split(".")
    return method if receiver != "self" and is_hook_name(method) else None
