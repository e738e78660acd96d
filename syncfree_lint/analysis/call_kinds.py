"""Call results: what a call of a function, method or held callable returns, as far as the walk knows.

A local function's return kind (``returns``, settled by ``arguments.analyse``), a class built, a callable held in a
name (``step = torch.compile(train_step)``), a method of an instance of a known class, a custom autograd function's
``forward``, or another file's function once the run says (``run_kinds``; asking records the name, so the run knows a
return kind could settle a read here).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Set

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.autograd_functions import applied_class
from syncfree_lint.analysis.calls import LIBRARY_HEADS, DottedRef, method_ref
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.instances import InstanceTable, ScopedNames

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef
    from syncfree_lint.analysis.scope import ClassFrame

#: suffix of a key recording what calling a name bound to a lambda returns (``f = lambda m: -10 * torch.log10(m)``)
CALL_RESULT = " ()"


class CallKindsMixin:
    """Return kinds of calls for ``ModuleAnalysis`` (which provides the attributes below)."""

    imports: ImportMap
    class_frame: Optional["ClassFrame"]
    classes: Dict[str, "ClassFrame"]
    returns: Dict[str, Optional[str]]
    forward_returns: Set[str]
    imported_returns: Dict[str, str]
    unknown_imports: Set[str]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    _prefix: List[str]
    instances: InstanceTable
    callables: ScopedNames["CallRef"]
    method_by_name: Callable[[cst.BaseExpression], Optional[DottedRef]]
    resolve_local: Callable[["CallRef"], List[str]]
    alternative_refs: Callable[[cst.BaseExpression], List["CallRef"]]
    lookup: Callable[[str], Optional[str]]
    _instance_call_kind: Callable[[str], Optional[str]]
    _passed_return_kind: Callable[[str], Optional[str]]
    _yielded: Callable[[cst.BaseExpression], Optional[str]]
    _applied: Callable[[Optional[cst.BaseExpression], str], List["CallRef"]]

    def _call_kind(self, call: cst.Call) -> Optional[str]:
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
            if name == "next" and call.args and self._yielded(call.args[0].value) is not None:
                return self._yielded(call.args[0].value)  # `x, y = next(batches)` of a local generator
            if name in self.returns:
                return self.returns[name]
            self.forward_returns.add(name)  # a function defined further down: the next walk knows (``analyse``)
            if name in self.classes:
                return tensors.MODULE if self.classes[name].is_module else None
            held = self.callables.lookup(".".join(self._prefix), name)
            if held is not None:  # `build = make_pinned if pin else make`; `step = torch.compile(train_step)`
                found = {self._ref_return_kind(ref) for ref in [held] + self.alternative_refs(func)}
                return found.pop() if len(found) == 1 else None
            result = self.lookup(name + CALL_RESULT) or self._instance_call_kind(name) or self._passed_return_kind(name)
            if result is not None:
                return result
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            if self.class_frame is not None:
                key = f"{self.class_frame.qualname}.{func.attr.value}"
                if key in self.returns:
                    return self.returns[key]
                self.forward_returns.add(key)
            return self._passed_return_kind(f"self.{func.attr.value}")
        applied = self._applied(applied_class(func), "forward") if applied_class(func) is not None else []
        if applied:  # `Sparsemax.apply(z)` of a custom autograd function: what its forward returns, tensors
            return self._ref_return_kind(applied[0]) or tensors.TENSOR
        return self._imported_call_kind(func) or self._method_call_kind(func)

    def _method_call_kind(self, func: cst.BaseExpression) -> Optional[str]:
        """What ``renderer.render(rays)`` returns: the method of ``renderer``'s class when it is known
        (``renderer = Renderer(...)``), else the one project method of that name
        (``calls.by_method_name``); another file's, once the run says."""
        cls = self.instances.lookup(".".join(self._prefix), func.value.value) \
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) else None
        ref = method_ref(cls, func.attr.value) if cls is not None and isinstance(func, cst.Attribute) \
            else self.method_by_name(func)
        return self._ref_return_kind(ref, method=True) if ref is not None else None

    def _ref_return_kind(self, ref: "CallRef", method: bool = False) -> Optional[str]:
        """What a call of a function held as a value (``method``: of a method of an instance of a
        known class) returns: a local function's return kind, or an imported one's when another file
        of the run says (asking records the name)."""
        if isinstance(ref, DottedRef):
            if (ref.bound and not method) or ref.qualname.split(".", 1)[0] in LIBRARY_HEADS:
                return None
            kind = self.imported_returns.get(ref.qualname)
            if kind is None or tensors.incomplete(kind):
                self.unknown_imports.add(ref.qualname)
            return kind
        found = {self.returns.get(qualname) for qualname in self.resolve_local(ref)}
        return found.pop() if len(found) == 1 else None

    def _imported_call_kind(self, func: cst.BaseExpression) -> Optional[str]:
        """What an imported function returns, when another file of the run says (``run_kinds``);
        asking records the name, so the run knows a return kind could settle a read here."""
        text = dotted(func)
        if text is None or not self.imports.imported(text.split(".", 1)[0]):
            return None
        qual = self.qualname(func)
        if qual is None or qual.split(".", 1)[0] in LIBRARY_HEADS:
            return None
        kind = self.imported_returns.get(qual)
        if kind is None or tensors.incomplete(kind):  # `(tensor,?,?)`: a later round may know the rest
            self.unknown_imports.add(qual)
        return kind
