"""The walk's answers to the ``SemanticModel`` questions that read where it is and what it has
seen (``analysis.model``); the questions about values (``kind``, ``qualname``, ``report``) live
with the walk in ``analysis.module``. Mixed into ``ModuleAnalysis``; reads, never writes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.eval_loops import decorated_grad_off
from syncfree_lint.analysis.filefacts import ExternalKinds, Finding
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.instances import ClassRef, InstanceTable, class_of_elements, constant_item
from syncfree_lint.analysis.metric_sites import MetricSite
from syncfree_lint.analysis.model import Keyed
from syncfree_lint.analysis.scope import (
    ClassFrame, FunctionFrame, LoopFrame,
)
from syncfree_lint.analysis.guards import (
    is_flag_guard,
)
from syncfree_lint.knowledge.library_methods import LIBRARY_METHOD_NAMES, MODULE_METHOD_NAMES
from syncfree_lint.knowledge.meters import MeterShape
from syncfree_lint.knowledge.torch_api import looks_like_module

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef


class AnswersMixin:
    """Needs the walk's state (set by ``ModuleAnalysis.__init__`` and kept by the walk)."""

    source: str
    module: cst.Module
    imports: ImportMap
    function: Optional[FunctionFrame]
    statement: Optional[cst.CSTNode]
    loops: List[LoopFrame]
    functions: Dict[str, FunctionFrame]
    resolve_local: Callable[["CallRef"], List[str]]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    findings: List[Finding]
    all_metric_sites: List[MetricSite]
    metric_escapes: Set[str]
    metric_lightning_logged: Set[str]
    instances: InstanceTable
    _stores: Set[int]
    _state: Dict[str, Dict[Any, Any]]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    default_on_accelerator: bool
    class_frame: Optional[ClassFrame]
    _prefix: List[str]
    external: ExternalKinds
    logging_words: Tuple[str, ...]
    opt_in_words: Tuple[str, ...]
    _tests_off_option: Callable[[cst.BaseExpression], bool]

    # objects
    def imported_dtype(self, qualname: str) -> Optional[str]:
        """What a function another file of the run defines returns (``"float"``, ``"same:<i>"``),
        by the dotted name this file imports it as (taught by ``run_kinds`` when a fix asked)."""
        for name, dtype in self.external.dtypes:
            if name == qualname:
                return dtype
        return None

    def imported_meter(self, qualname: str) -> Optional[MeterShape]:
        """The running-average meter shape of a class another file of the run defines, by the
        dotted name this file imports it as (taught by ``run_kinds`` when a fix asked)."""
        for name, shape in self.external.meters:
            if name == qualname:
                return shape
        return None

    def instance_class(self, expr: cst.BaseExpression) -> Optional[ClassRef]:
        """The class ``expr`` is an instance of, when the code says (``meter = Meter()``,
        ``self.scaler = GradScaler()``, ``meter: Meter``); see ``analysis.instances``."""
        if isinstance(expr, cst.Name):
            return self.instances.lookup(".".join(self._prefix), expr.value)
        item = constant_item(expr)
        holder = dotted(item[0]) if item is not None else None
        if item is not None and holder is not None:  # `meters["tput"]` of `{"loss": Ema(), "tput": Throughput()}`
            kept = self.class_frame.attr_classes.get(holder + item[1]) if self.class_frame is not None else None
            held = ClassRef(*kept) if kept is not None and holder.startswith("self.") else \
                self.instances.lookup(".".join(self._prefix), holder + item[1])
            if held is not None:
                return held
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name):  # `meters["loss"]` of `{k: Meter() ...}`
            return class_of_elements(self.kind(expr.value))
        if isinstance(expr, cst.Subscript) and self.class_frame is not None:  # `self.meters[name]`: every item alike
            holder = dotted(expr.value)
            alike = {held for attribute, held in self.class_frame.attr_classes.items()
                     if holder is not None and holder.startswith("self.") and attribute.startswith(holder + "[")}
            if len(alike) == 1:
                return ClassRef(*alike.pop())
        name = dotted(expr) if isinstance(expr, cst.Attribute) else None
        if name is not None and name.startswith("self.") and self.class_frame is not None:
            found = self.class_frame.attr_classes.get(name)
            return ClassRef(*found) if found is not None else None
        return None


    # values
    def _is_model(self, func: cst.BaseExpression) -> bool:
        """Is the callee a model: known as one, or named like one (``model``, ``self.net``)?"""
        if self.kind(func) == tensors.MODULE:
            return True
        name = dotted(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        return name is not None and looks_like_module(name) and not self.imports.imported(name.split(".")[0])

    def _is_model_entry(self, func: cst.BaseExpression) -> bool:
        """A model, or a method of one that no library class shares (``model.score``, ``net.encode``)."""
        if self._is_model(func):
            return True
        return isinstance(func, cst.Attribute) and (func.attr.value == "forward" or func.attr.value not in MODULE_METHOD_NAMES) \
            and self._is_model(func.value)

    def _runs_model(self, call: cst.Call) -> bool:
        """``sample(policy, prompt)`` (handed a model and no data loader), ``policy(x)``, or
        ``agent.act(obs)`` (a method of a model that no library class shares)."""
        kinds = [self.kind(arg.value) for arg in call.args]
        if tensors.MODULE in kinds:
            return not any(kind in tensors.LOADERS for kind in kinds)
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value not in LIBRARY_METHOD_NAMES \
                and self.kind(func.value) == tensors.MODULE:
            return True
        return bool(call.args) and self.kind(func) == tensors.MODULE

    def _grad_off_function(self, ref: Optional["CallRef"]) -> bool:
        """A function of this file decorated ``@torch.no_grad()`` (or ``inference_mode``)."""
        return ref is not None and any(isinstance(frame.node, cst.FunctionDef) and decorated_grad_off(frame.node, self.qualname)
                                       for frame in map(self.functions.get, self.resolve_local(ref)) if frame is not None)

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        """Positive evidence that ``expr`` is a tensor that may live on an accelerator."""
        return self.kind(expr) in tensors.DEVICE_TENSORS

    def maybe_tensor(self, expr: cst.BaseExpression) -> bool:
        """Not known to be anything but a device tensor (numpy, number, host tensor, module)."""
        return not tensors.not_device(self.kind(expr))

    def is_store(self, node: cst.CSTNode) -> bool:
        """True for an assignment target (``t[mask] = ...``)."""
        return id(node) in self._stores

    def state(self, rule: Keyed) -> Dict[Any, Any]:
        """Per-file scratch space for one rule."""
        return self._state.setdefault(rule.code, {})

    # imports
    def is_imported(self, name: str) -> bool:
        return self.imports.imported(name)

    def alias_of(self, qualname: str) -> Optional[str]:
        return next((local for local, target in self.imports.aliases.items() if target == qualname), None)

    def origin_of(self, name: str) -> Optional[str]:
        return self.imports.aliases.get(name)

    def import_statement(self, name: str) -> Optional[cst.CSTNode]:
        return self.imports.sources.get(name)

    def default_device_is_accelerator(self) -> bool:
        return self.default_on_accelerator

    def is_cpu_device(self, expr: cst.BaseExpression) -> bool:
        return tensors.is_cpu_device(expr, self.imports)

    def is_off_switch(self, expr: cst.BaseExpression) -> bool:
        return is_flag_guard(expr, self.logging_words, self.opt_in_words) or self._tests_off_option(expr)

    # where the walk is
    def current_statement(self) -> Optional[cst.CSTNode]:
        return self.statement

    def current_function_name(self) -> Optional[str]:
        return self.function.name if self.function is not None else None

    def current_scope(self) -> cst.CSTNode:
        scope = self.function.scope_node() if self.function is not None else None
        return scope if scope is not None else self.module

    def enclosing_scopes(self) -> Tuple[cst.CSTNode, ...]:
        scope = self.function.scope_node() if self.function is not None else None
        return (scope, self.module) if scope is not None else (self.module,)

    def enclosing_loops(self) -> Tuple[cst.CSTNode, ...]:
        return tuple(loop.node for loop in self.loops)

    def source_text(self) -> str:
        return self.source

    # what it has seen
    def metric_constructions(self) -> Tuple[MetricSite, ...]:
        return tuple(self.all_metric_sites)

    def escaped_metrics(self) -> FrozenSet[str]:
        return frozenset(self.metric_escapes)

    def lightning_logged_metrics(self) -> FrozenSet[str]:
        return frozenset(self.metric_lightning_logged)

    def findings_so_far(self) -> Tuple[Finding, ...]:
        return tuple(self.findings)
