"""Definitions: what the walk learns at each ``def`` and ``class``.

A function gets a frame (is it a step function by name, by being ``forward`` of a module, or by
stepping the optimizer in its own body; does it hold its own step loop), its parameters' kinds,
and its return kind. A class records whether it is an ``nn.Module`` and its local bases.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.annotations import host_annotation_kind
from syncfree_lint.analysis.arguments import PASSED
from syncfree_lint.analysis.bindings import EVERY_STEP, OFF_BY_DEFAULT
from syncfree_lint.analysis.calls import CallRef, NameRef
from syncfree_lint.analysis.decorators import decorator_wrappers, memoised
from syncfree_lint.analysis.filefacts import CallSite
from syncfree_lint.analysis.imports import ImportMap
from syncfree_lint.analysis.eval_loops import decorated_grad_off
from syncfree_lint.analysis.events import named_event, per_iteration_engine
from syncfree_lint.analysis.scope import moves_items
from syncfree_lint.analysis.instances import MODULE_OBJECT_KIND_PREFIX, InstanceTable, annotated_class, class_of_kind
from syncfree_lint.analysis.scope import ClassFrame, FunctionFrame, LoopFrame, Placement, mark_step
from syncfree_lint.knowledge import frequency as facts


class DefinitionsMixin:
    """``def`` and ``class`` handling for ``ModuleAnalysis`` (which provides the attributes below)."""

    imports: ImportMap
    statement: Optional[cst.CSTNode]
    named_handlers: Dict[str, List[str]]
    function: Optional[FunctionFrame]
    class_frame: Optional[ClassFrame]
    loops: List[LoopFrame]
    guard_depth: int
    guard_nodes: List[cst.CSTNode]
    step_functions: frozenset
    uses_accelerator: bool
    parameter_kinds: Dict[str, Dict[str, str]]
    functions: Dict[str, FunctionFrame]
    classes: Dict[str, ClassFrame]
    returns: Dict[str, Optional[str]]
    module_env: Dict[str, Optional[str]]
    _envs: List[Dict[str, Optional[str]]]
    _kinds: Dict[int, Optional[str]]
    grad_off: bool
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    instances: InstanceTable
    _prefix: List[str]
    _marker_functions: Set[str]
    _stepping_functions: Set[str]
    _rules: Callable[[cst.CSTNode], None]
    _visit: Callable[[cst.CSTNode], None]
    _suite: Callable[[Optional[cst.CSTNode]], None]
    _annotated_kind: Callable[[Optional[cst.Annotation]], Optional[str]]
    calls: List[CallSite]
    unknown_reads: Set[Tuple[str, str]]
    named_batches: Set[str]
    placement: Callable[[], Placement]
    returned_functions: Dict[str, str]
    unknown_imports: Set[str]
    function_value: Callable[[cst.BaseExpression], Optional[CallRef]]
    _returned_function: Callable[[NameRef], Optional[CallRef]]
    _ref_return_kind: Callable[[CallRef], Optional[str]]
    _record_arguments: Callable[[CallRef, Sequence[cst.Arg]], None]

    def _function(self, node: cst.FunctionDef) -> None:
        self.statement = node
        self._rules(node)
        for decorator in node.decorators:
            self._visit(decorator.decorator)
        name = node.name.value
        qualname = ".".join(self._prefix + [name])
        engine = per_iteration_engine(node)
        per_event = engine is not None
        if engine is not None and self.class_frame is None:  # `@trainer.on(Events.ITERATION_COMPLETED) def log(eng)`
            self._record_arguments(NameRef(name, ".".join(self._prefix)), [cst.Arg(engine)])
        is_step = (name in self.step_functions or (
            name == "forward" and self.class_frame is not None and self.class_frame.is_module
        ) or self._is_batch_hook(name) or per_event) and self.uses_accelerator
        frame = FunctionFrame(qualname, name, is_step, self.class_frame, node)
        frame.memoised = memoised(node, self.qualname)
        for event in named_event(node):  # `@bus.on("critic_updated")`: runs where that name is emitted
            self.named_handlers.setdefault(event, []).append(qualname)
        if is_step:
            frame.why = "forward of an nn.Module" if name == "forward" and name not in self.step_functions else \
                "an event handler run every iteration" if per_event and name not in self.step_functions else \
                "a framework hook run per batch" if name not in self.step_functions else "named as a step"
        self.functions[qualname] = frame
        frame.outer = self.function  # a closure: the parameters of the functions around it are in reach
        saved = (self.function, self.loops, self.guard_depth, self.guard_nodes)
        self.function, self.loops, self.guard_depth, self.guard_nodes = frame, [], 0, []
        saved_grad, self.grad_off = self.grad_off, decorated_grad_off(node, self.qualname)
        wrappers = decorator_wrappers(self, node)  # type: ignore[arg-type]
        self.calls.extend(CallSite(self.placement(), wrapper, node) for wrapper in wrappers)
        env: Dict[str, Optional[str]] = {}
        self._envs.append(env)
        self._kinds.clear()
        for param in self._params(node.params):
            pname = param.name.value
            if pname == "self" and self.class_frame is not None:
                env[pname] = tensors.MODULE if self.class_frame.is_module else None
            elif self._batch_parameter(param, qualname, is_step) and param is not node.params.star_arg:  # not `*inputs`
                seeded = self.parameter_kinds.get(qualname, {}).get(pname)
                # a call handing it a device tensor says it is one (`coords_grid(n, h, w)` of `n = x.sum()`)
                env[pname] = seeded if seeded in (tensors.TENSOR, tensors.MASK) else tensors.BATCH
                self.unknown_reads.add((qualname, pname))  # by its name only: calls that all pass a number say otherwise
                self.named_batches.add(qualname)
            else:
                env[pname] = self._annotated_kind(param.annotation) or self.parameter_kinds.get(qualname, {}).get(pname)
            if env.get(pname) == tensors.BATCH and moves_items(node.body, {pname}):
                env[pname] = tensors.HOST_BATCH  # it moves parts of it itself (`images["crops"].cuda()`): handed on the host
            cls = annotated_class(param.annotation, self.classes, self.imports) or class_of_kind(env.get(pname))
            if class_of_kind(env.get(pname)) is not None:  # the calls pass an instance (``analysis.arguments``)
                env[pname] = tensors.MODULE if str(env.get(pname)).startswith(MODULE_OBJECT_KIND_PREFIX) else None
            if cls is not None or self.instances.lookup(qualname, pname) is not None:
                self.instances.bind(qualname, pname, cls)  # `meter: Meter`; a plain parameter hides an outer name
            if param.default is not None:
                self._visit(param.default)
                if isinstance(param.default, cst.Name) and param.default.value == "False" \
                        and pname + PASSED not in self.parameter_kinds.get(qualname, {}):
                    env[pname + OFF_BY_DEFAULT] = tensors.OTHER  # `dump=False` no call sets: an opt-in switch
                if isinstance(param.default, cst.Integer) and param.default.value == "1":
                    env[pname + EVERY_STEP] = tensors.NUMBER  # `period=1`: every step unless configured
        self._prefix.append(name)
        self._suite(node.body)
        self._prefix.pop()
        self._envs.pop()
        self._kinds.clear()
        self.function, self.loops, self.guard_depth, self.guard_nodes = saved
        self.grad_off = saved_grad
        if frame.has_step_loop:  # an epoch function: its own markers run once per call
            self._marker_functions.discard(qualname)
        elif qualname in self._stepping_functions and self.uses_accelerator \
                and not name.startswith(facts.TEST_FUNCTION_PREFIX):
            mark_step(frame, "steps the optimizer or calls backward() itself")
        kinds = set(frame.returns)
        if len(kinds) == 1:
            self.returns[qualname] = kinds.pop()
        elif kinds and kinds <= tensors.DEVICE_TENSORS | {None} and kinds & tensors.DEVICE_TENSORS:
            self.returns[qualname] = tensors.TENSOR
        elif len(kinds - {None}) == 1 and tensors.tuple_elements(next(iter(kinds - {None}))) is not None:
            self.returns[qualname] = next(iter(kinds - {None}))  # a tuple, or None on some paths
        wrapped = self._ref_return_kind(wrappers[0]) if wrappers else None
        if wrapped is not None:  # a call runs the outermost wrapper: `@guard(5.0)` returning the norm it checked
            self.returns[qualname] = wrapped

    @staticmethod
    def _params(params: cst.Parameters) -> List[cst.Param]:
        out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        if isinstance(params.star_arg, cst.Param):
            out.append(params.star_arg)
        if params.star_kwarg is not None:
            out.append(params.star_kwarg)
        return out

    def _class(self, node: cst.ClassDef) -> None:
        self.statement = node
        self._rules(node)
        for decorator in node.decorators:
            self._visit(decorator.decorator)
        bases = []
        is_module = False
        for base in node.bases:
            self._visit(base.value)
            qual = self.imports.qualname(base.value) or ""
            bases.append(qual)
            last = qual.rsplit(".", 1)[-1]
            if qual.startswith("torch.nn.") or last.endswith(facts.MODULE_BASE_SUFFIXES) or (
                qual in self.classes and self.classes[qual].is_module
            ):
                is_module = True
        name = node.name.value
        qualname = ".".join(self._prefix + [name])
        methods = frozenset(statement.name.value for statement in getattr(node.body, "body", ())
                            if isinstance(statement, cst.FunctionDef))
        frame = ClassFrame(qualname, name, is_module, tuple(bases), methods, node)
        self.classes[qualname] = frame
        if is_module and not self._prefix:
            self.module_env[name] = tensors.MODULE_CLASS
        saved = self.class_frame
        self.class_frame = frame
        self._prefix.append(name)
        self._suite(node.body)
        self._prefix.pop()
        self.class_frame = saved

    def _batch_parameter(self, param: cst.Param, qualname: str, is_step: bool) -> bool:
        """``batch`` (or, in a step function, ``samples``, ``inputs``...) holds a batch, unless it says it is a
        host value (an annotation), a size (``batch=16``, or every call passes a number) or a switch (``sample=True``)."""
        name, default = param.name.value, param.default
        if not (name == "batch" or (is_step and name.startswith(facts.BATCH_PARAMS) and name not in facts.BATCH_PARAM_EXCLUDE)):
            return False
        if param.annotation is not None and host_annotation_kind(param.annotation.annotation):
            return False
        if default is not None and (self.kind(default) == tensors.NUMBER or (
                isinstance(default, cst.Name) and default.value in ("True", "False"))):
            return False
        return self.parameter_kinds.get(qualname, {}).get(name) != tensors.NUMBER

    def _lambda(self, node: cst.Lambda) -> None:
        """A lambda; one bound to a name (``to_np = lambda x: x.detach().cpu().numpy()``) is a function of that
        name: a call of the name runs its body, with the caller's frequency."""
        self._rules(node)
        statement = self.statement
        named = isinstance(statement, cst.Assign) and statement.value is node and len(statement.targets) == 1 \
            and isinstance(statement.targets[0].target, cst.Name)
        name = statement.targets[0].target.value if named else None  # type: ignore[union-attr]
        qualname = ".".join(self._prefix + [name]) if name is not None else ""
        owner = self.class_frame if self.function is None else None  # in a class body: a method; in a method: not
        frame = FunctionFrame(qualname, name, False, owner, node) if name is not None \
            and qualname not in self.functions else None
        saved = (self.function, self.loops, self.guard_depth, self.guard_nodes)
        if frame is not None:
            frame.outer = self.function
            self.functions[qualname] = frame
            self.function, self.loops, self.guard_depth, self.guard_nodes = frame, [], 0, []
        seeds = self.parameter_kinds.get(qualname, {}) if frame is not None else {}
        self._envs.append({p.name.value: seeds.get(p.name.value) for p in self._params(node.params)})
        self._kinds.clear()
        self._visit(node.body)
        self._envs.pop()
        self._kinds.clear()
        self.function, self.loops, self.guard_depth, self.guard_nodes = saved

    def _is_batch_hook(self, name: str) -> bool:
        """A method a framework calls once per batch (``BaseMetric.process``, ``Callback.on_train_batch_end``)."""
        if self.class_frame is None:
            return False
        for base in self.class_frame.bases:
            hooks = facts.FRAMEWORK_BATCH_HOOKS.get(base.rsplit(".", 1)[-1])
            if hooks is not None and name in hooks:
                return True
        return False

