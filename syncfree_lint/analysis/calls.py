"""Calls: what a call in this file may run, as typed references resolved against the file.

A call is recorded as a reference (``NameRef``: ``f()``; ``SelfRef``: ``self.m()``; ``DottedRef``:
an imported ``pkg.mod.f``). ``resolve_local`` turns a reference into the qualnames of functions
defined in this module; imported ones are resolved by the whole run (``analysis.callgraph``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from syncfree_lint.analysis.autograd_functions import applied_class, is_autograd_class
from syncfree_lint.analysis.dispatch_tables import module_tables, table_read
from syncfree_lint.analysis.events import named_registration, registered_handler
from syncfree_lint.analysis.factories import returned_nested_function
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.nodes import walk_code
from syncfree_lint.analysis.filefacts import CallSite
from syncfree_lint.analysis.instances import ClassRef, InstanceTable, ScopedNames, constructed_class
from syncfree_lint.analysis.kinds import MODULE
from syncfree_lint.analysis.passed_callables import PassedCallables, parameter_names
from syncfree_lint.analysis.call_refs import (  # re-exported: the analysis reads them as calls.X
    METHOD_KEY as METHOD_KEY, CallRef as CallRef, DottedRef as DottedRef, NameRef as NameRef, SelfRef as SelfRef,
    by_method_name as by_method_name, callee_name as callee_name, method_ref as method_ref,
)
from syncfree_lint.knowledge.callables import BUILTIN_BASES, CALLABLE_WRAPPERS
from syncfree_lint.knowledge.frequency import PER_PASS_HOOK_REGISTRATIONS

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.scope import ClassFrame, FunctionFrame, LoopFrame, Placement

#: modules whose functions never run user code (no edge is recorded for them)
LIBRARY_HEADS = frozenset({"torch", "numpy", "math", "os", "sys", "time", "logging", "random"})
#: wrappers whose first argument is the iterable a loop really runs
_ITERATION_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "zip"})
#: suffix of a ``callables`` name for what ``next(name)`` runs (``it = iter(sampler)``: ``Sampler.__iter__``)
NEXT_OF = " next()"


def _is_super_call(expr: cst.BaseExpression) -> bool:
    """``super()`` or ``super(Cls, self)``."""
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


class CallsMixin:
    """Call references for ``ModuleAnalysis`` (which provides the attributes declared here)."""

    imports: ImportMap
    functions: Dict[str, "FunctionFrame"]
    classes: Dict[str, "ClassFrame"]
    class_frame: Optional["ClassFrame"]
    _prefix: List[str]
    _generators: Dict[str, str]
    instances: InstanceTable
    results_of: ScopedNames[str]
    objects_wanted: Set[str]
    callables: ScopedNames["CallRef"]
    alternatives: ScopedNames[Tuple["CallRef", ...]]
    passed_callables: PassedCallables
    named_handlers: Dict[str, List[str]]
    calls: List[CallSite]
    function: Optional["FunctionFrame"]
    unknown_reads: Set[Tuple[str, str]]
    loops: List["LoopFrame"]
    placement: Callable[[], "Placement"]
    statement: Optional[cst.CSTNode]
    _call_args: Sequence[cst.Arg]
    pass_hooks: List[Tuple["CallRef", Optional[cst.CSTNode], Tuple[Optional[str], ...], Optional["Placement"], str]]
    argument_records: List[Any]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    module: cst.Module
    module_name: str
    _tables: Optional[Dict[str, List[str]]] = None
    returned_functions: Dict[str, str]
    instance_class: Callable[[cst.BaseExpression], Optional[ClassRef]]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    _callable_elements: Callable[[cst.BaseExpression], Tuple["CallRef", ...]]
    _record_arguments: Callable[[CallRef, Sequence[cst.Arg]], None]

    def _call_ref(self, func: cst.BaseExpression, qual: Optional[str]) -> Optional[CallRef]:
        prefix = ".".join(self._prefix)
        if isinstance(func, cst.Name):
            if func.value == "next" and self._call_args and isinstance(self._call_args[0].value, cst.Name):
                it = self._call_args[0].value.value
                if it in self._generators:
                    return NameRef(it, prefix)
                drawn = self.callables.lookup(prefix, it + NEXT_OF)
                if drawn is not None:
                    return drawn
            held = self.callables.lookup(prefix, func.value)
            if held is not None:  # `step(batch)` on `step = torch.compile(train_step)`
                return held
            instance = self.instances.lookup(prefix, func.value)
            if instance is not None:  # `criterion(x, y)` on `criterion = PairLoss()`
                return method_ref(instance, "__call__")
            if self.imports.imported(func.value):
                return DottedRef(qual or func.value)
            if func.value == "self" and self.class_frame is not None:  # `self("after_pred")`: the class's __call__
                return SelfRef(self.class_frame.qualname, "__call__")
            return NameRef(func.value, prefix)
        if isinstance(func, (cst.Subscript, cst.Call)):  # `LOSSES[name](x, y)`, `LOSSES.get(name)(x, y)`
            return self.function_value(func)
        if isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value == "self" and self.class_frame is not None:
                attribute_class = self.class_frame.attr_classes.get(f"self.{func.attr.value}")
                if attribute_class is not None:  # `self.loss_fn(x)` on `self.loss_fn = PairLoss()`: its __call__
                    return method_ref(ClassRef(*attribute_class), "__call__")
                return SelfRef(self.class_frame.qualname, func.attr.value)
            if _is_super_call(func.value) and self.class_frame is not None:  # super().m(): from the bases on
                return self._method_of(self.class_frame, func.attr.value, False)
            if isinstance(func.value, cst.Name):
                instance = self.instances.lookup(prefix, func.value.value)
                if instance is not None:  # `meter.update(x)` on `meter = Meter()`
                    return self.member_ref(instance, func.attr.value)
                origin = self.results_of.lookup(prefix, func.value.value)
                if origin is not None:  # `scorer.score(x)` on `scorer = create_scorer()`: its class is worth learning
                    self.objects_wanted.add(origin)
                elif self.function is not None and func.value.value in parameter_names(self.function):
                    # `evaluator.update(x)` on a parameter: the class a caller passes is worth learning
                    self.unknown_reads.add((self.function.qualname, func.value.value))
            element = self.instance_class(func.value) if isinstance(func.value, cst.Subscript) else None
            if element is not None:  # `meters["loss"].update(x)` on `meters = {k: Meter() for k in names}`
                return self.member_ref(element, func.attr.value)
            text = dotted(func)
            if text is None:  # `clients[i].local_train()`, `make()().run()`
                return self._unknown_receiver(func, None)
            owner = text.rsplit(".", 1)[0]
            if self.class_frame is not None and owner in self.class_frame.attr_classes:
                local, class_name = self.class_frame.attr_classes[owner]
                return self.member_ref(ClassRef(local, class_name), func.attr.value)
            if self.imports.imported(text.split(".")[0]):
                if (qual or "").split(".")[0] in LIBRARY_HEADS:
                    return None
                return DottedRef(qual or text)
            return self._unknown_receiver(func, NameRef(text, prefix))
        return None

    def member_ref(self, cls: ClassRef, name: str) -> CallRef:
        """A call of ``name`` on an instance of ``cls``: its method, or the ``__call__`` of an object of a known class
        it keeps there (``model.users(x)`` on ``self.users = Tower()``; of another file: ``callgraph.lookup``)."""
        frame = self.classes.get(cls.name) if cls.local else None
        held = frame.attr_classes.get(f"self.{name}") if frame is not None else None
        if held is not None and frame is not None and self._method_of(frame, name, True) is None:
            return method_ref(ClassRef(*held), "__call__")
        return method_ref(cls, name)

    def _unknown_receiver(self, func: cst.Attribute, ref: Optional[NameRef]) -> Optional[CallRef]:
        """``ref`` (``Class.static_method()`` of this module, or a hook on an unknown object), else
        the method by its name when nothing says what the receiver is."""
        if ref is not None and (self.resolve_local(ref) or ref.name.split(".")[0] in self.classes):
            return ref
        return self.method_by_name(func) or ref

    def method_by_name(self, func: cst.BaseExpression) -> Optional[DottedRef]:
        """``renderer.render(...)`` where nothing says what ``renderer`` is (not ``self``, an import, a
        class of this file or an instance of a known class, and of no known kind): the call by the
        method's name (``by_method_name``), for the call graph and for what the call returns."""
        if not isinstance(func, cst.Attribute):
            return None
        head = func.value.value if isinstance(func.value, cst.Name) else None
        if head is not None and (head == "self" or head in self.classes or self.imports.imported(head)
                                 or self.instances.lookup(".".join(self._prefix), head) is not None):
            return None
        kind = self.kind(func.value)
        if kind == MODULE:  # a model's own method (``self.model.log_likelihood(batch)``): a module class's
            return by_method_name(func.attr.value, module=True)
        return by_method_name(func.attr.value) if kind is None else None

    def inherited(self, ref: SelfRef) -> Optional[DottedRef]:
        """``self.m()`` where neither the class nor a local base defines ``m``: the method of the
        first base imported from the project (``base.Base.m``), which the run resolves through that
        class's own bases (``callgraph.lookup``)."""
        frame = self.classes.get(ref.class_qualname)
        found = self._method_of(frame, ref.method, True) if frame is not None else None
        return found if isinstance(found, DottedRef) else None

    def _method_of(self, frame: "ClassFrame", method: str, own: bool) -> Optional[CallRef]:
        """Where ``method`` is defined for ``frame``'s class: in the class itself (``own``) or a
        local base (a ``SelfRef`` to that class), else in the first imported base (a bound
        ``DottedRef``). None when no class of the chain defines it and every base is a library's."""
        pending = [frame] if own else [self.classes[b] for b in frame.bases if b in self.classes]
        imported = [] if own else [b for b in frame.bases if b and b not in self.classes]
        seen: Set[str] = set()
        while pending:
            current = pending.pop(0)
            if current.qualname in seen:
                continue
            seen.add(current.qualname)
            if method in current.methods:
                return SelfRef(current.qualname, method, exact=not own)
            for base in current.bases:
                if base in self.classes:
                    pending.append(self.classes[base])
                elif base:
                    imported.append(base)
        for base in imported:
            if base.split(".")[0] not in LIBRARY_HEADS and base not in BUILTIN_BASES:
                return DottedRef(f"{base}.{method}", bound=True)
        return None

    def function_value(self, expr: cst.BaseExpression) -> Optional[CallRef]:
        """The function ``expr`` stands for as a value: a local function (``train_step``), a bound
        method (``self.to_device``), a name bound to one, or a wrapper of one
        (``torch.compile(step)``, ``functools.partial(step, model=m)``)."""
        prefix = ".".join(self._prefix)
        if applied_class(expr) is not None:  # `grad_guard = GradGuard.apply`
            return next(iter(self._applied(applied_class(expr), "forward")), None)
        if isinstance(expr, cst.Name):
            held = self.callables.lookup(prefix, expr.value)
            if held is not None:
                return held
            ref: CallRef = NameRef(expr.value, prefix)
            if any(found.rsplit(".", 1)[-1] == expr.value for found in self.resolve_local(ref)):
                return ref  # a function of that name (not a name bound to a generator's result)
            return self._imported_function(expr)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            if expr.value.value == "self" and self.class_frame is not None:
                ref = SelfRef(self.class_frame.qualname, expr.attr.value)
                # a method defined further down (``__init__`` registering ``self._record``) is known by name
                return ref if expr.attr.value in self.class_frame.methods or self.resolve_local(ref) else None
            instance = self.instances.lookup(prefix, expr.value.value)
            if instance is not None:  # `callback=meter.update`
                return method_ref(instance, expr.attr.value)
            return self._imported_function(expr)
        if isinstance(expr, cst.Call) and expr.args and self.wraps_callable(expr):
            return self.function_value(expr.args[0].value)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):  # `hook = make_hook(server)`
            found = self._returned_function(NameRef(expr.func.value, prefix))
            if found is not None:
                return found
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and isinstance(expr.func.value, cst.Name) \
                and expr.func.value.value == "self" and self.class_frame is not None:  # `self._hook(name)`
            found = self._returned_by_method(self.class_frame, expr.func.attr.value)
            if found is not None:
                return found
        if isinstance(expr, cst.Call) and isinstance(expr.func, (cst.Name, cst.Attribute)):
            returned = self.returned_functions.get(self.qualname(expr.func) or "")  # another file's factory
            if returned is not None:
                return DottedRef(returned)
        if isinstance(expr, cst.IfExp):  # `make_pinned if args.pin else make` (the other: ``alternative_refs``)
            return self.function_value(expr.body) or self.function_value(expr.orelse)
        table = table_read(expr)
        return self.table_functions(table) if table is not None else None  # `SELECTORS[name]`

    def table_functions(self, table: cst.Name) -> Optional[CallRef]:
        """Any function of a dispatch table of this file (``function_tables``) or of an imported name."""
        if table.value in self.function_tables():
            return DottedRef(f"{self.module_name}.{table.value}" if self.module_name else table.value)
        return self._imported_function(table)

    def function_tables(self) -> Dict[str, List[str]]:
        """The file's dispatch tables and aliases (``dispatch_tables.module_tables``)."""
        if self._tables is None:
            self._tables = module_tables(self.module, self.classes)
        return self._tables

    def _returned_function(self, factory: NameRef) -> Optional[CallRef]:
        """The function a factory of this file returns: ``def make_hook(...): def hook(...): ...;
        return hook`` (the factory walked before the call; every ``return`` of its own body names
        the same function defined in it)."""
        found = self.resolve_local(factory)
        frame = self.functions.get(found[0]) if len(found) == 1 else None
        nested = returned_nested_function(frame.node) if frame is not None else None
        return NameRef(nested, found[0]) if nested is not None else None

    @staticmethod
    def _returned_by_method(frame: "ClassFrame", method: str) -> Optional[CallRef]:
        """The closure a factory method of the class returns (``def _hook(self, name): def record(...): ...;
        return record``), read from the class body: ``__init__`` may call it before the walk reaches it."""
        body = frame.node.body.body if isinstance(frame.node, cst.ClassDef) else ()
        node = next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == method), None)
        nested = returned_nested_function(node) if node is not None else None
        return NameRef(nested, f"{frame.qualname}.{method}") if nested is not None else None

    def alternative_refs(self, func: cst.BaseExpression) -> List[CallRef]:
        """The other functions a called name may stand for: ``build = f if c else g`` (``g``), each
        element of a list or dict of callables (``for cb in callbacks["on_step_end"]: cb(state)``, ``loss_map[name](x)``
        of ``loss_map = {"boxes": self.loss_boxes, ...}`` or of the display itself);
        the ``forward`` and ``backward`` a custom autograd function's ``apply`` runs (``autograd_functions``)."""
        if applied_class(func) is not None:
            return self._applied(applied_class(func), "forward") + self._applied(applied_class(func), "backward")
        if isinstance(func, cst.Subscript):  # `loss_map[name](...)`, `{"boxes": self.loss_boxes, ...}[name](...)`
            base = func.value
            if isinstance(base, (cst.Dict, cst.List, cst.Tuple)):
                return list(self._callable_elements(base))
            return list(self.alternatives.lookup(".".join(self._prefix), base.value) or ()) \
                if isinstance(base, cst.Name) else []
        if not isinstance(func, cst.Name):
            return []
        held = self.alternatives.lookup(".".join(self._prefix), func.value)
        forward = self.callables.lookup(".".join(self._prefix), func.value)  # `grad_guard = GradGuard.apply`
        backward = [SelfRef(forward.class_qualname, "backward")] if isinstance(forward, SelfRef) \
            and forward.method == "forward" and is_autograd_class(forward.class_qualname, self.classes) else []
        return (list(held) if held is not None else []) + backward

    def _applied(self, cls: Optional[cst.BaseExpression], method: str) -> List[CallRef]:
        """``Cls.forward`` for ``Cls.apply`` of a local autograd class or of an imported class."""
        text = dotted(cls) if cls is not None else None
        if text is None:
            return []
        if text in self.classes and is_autograd_class(text, self.classes):
            return [SelfRef(text, method)]
        if self.imports.imported(text.split(".")[0]):
            qual = self.imports.qualname(cls) or text  # type: ignore[arg-type]
            return [] if qual.split(".")[0] in LIBRARY_HEADS else [DottedRef(f"{qual}.{method}")]
        return []

    def _imported_function(self, expr: cst.BaseExpression) -> Optional[CallRef]:
        """``evaluate_batch`` or ``steps.evaluate_batch`` imported from the project (the run
        resolves it; a class or a value of that name resolves to no function)."""
        text = dotted(expr)
        if text is None or not self.imports.imported(text.split(".")[0]):
            return None
        qual = self.imports.qualname(expr) or text
        return None if qual.split(".")[0] in LIBRARY_HEADS else DottedRef(qual)

    def wraps_callable(self, call: cst.Call) -> bool:
        """``torch.compile(f)``, ``functools.partial(f, ...)``: a callable that runs its first argument."""
        func = call.func
        return isinstance(func, (cst.Name, cst.Attribute)) and (self.imports.qualname(func) or "") in CALLABLE_WRAPPERS

    def _passed_functions(self, node: cst.Call, ref: Optional[CallRef]) -> None:
        """A function handed to a call as a value (``map(self.to_device, xs)``,
        ``checkpoint(self.block, x)``, ``apply(fn=step)``) may run during that call; handed to a
        function of this file, it runs where that function calls the parameter (``passed_callables``)."""
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else dotted(node.func) or ""
        called_with = PER_PASS_HOOK_REGISTRATIONS.get(name.rsplit(".", 1)[-1])
        if called_with is not None and node.args:  # `head.register_forward_hook(monitor)`
            hook = self.function_value(node.args[0].value) or self._called_instance(node.args[0].value)
            if hook is not None:  # kept until a `.remove()` of this code: as often as this code runs
                temporary = self._removes_hooks(node)
                self.pass_hooks.append((hook, self.statement, called_with, self.placement() if temporary else None,
                                        "registered as a forward/backward hook"))
                if not isinstance(hook, DottedRef):  # this file's hook learns what torch calls it with
                    self.argument_records.append((hook, called_with, ()))
        handler = registered_handler(node)
        if handler is not None:  # `engine.add_event_handler(Events.ITERATION_COMPLETED, log_loss)`: every step
            hook = self.function_value(handler) or self._called_instance(handler)
            if hook is not None:
                self.pass_hooks.append((hook, self.statement, (None,), None, "registered for a per-iteration event"))
                if isinstance(node.func, cst.Attribute):  # the engine calls it with itself: `log_loss(engine)`
                    self._record_arguments(hook, [cst.Arg(node.func.value)])
        named = named_registration(node)
        if named is not None:  # `bus.subscribe("critic_updated", on_critic)`: runs where that name is emitted
            registered = self.function_value(named[1])
            local: List[str] = [f"{registered.class_qualname}.{registered.method}"] if isinstance(registered, SelfRef) \
                else self.resolve_local(registered) if isinstance(registered, NameRef) else []
            self.named_handlers.setdefault(named[0], []).extend(q for q in local if q in self.functions)
        if isinstance(ref, NameRef) and ref.name in self.classes:  # `Trainer(model, callbacks=[...])`: to `__init__`
            ref = SelfRef(ref.name, "__init__")
        if ref is not None:
            self.passed_callables.function_passed(ref, isinstance(ref, SelfRef), node.args, self._passed_values)
        if self.function is None and not self.loops:
            return
        for arg in node.args:
            if isinstance(arg.value, (cst.Name, cst.Attribute)):
                passed = self.function_value(arg.value)
                if passed is not None:
                    self.calls.append(CallSite(self.placement(), passed, self.statement))

    def _removes_hooks(self, registration: cst.Call) -> bool:
        """The registration's handle is kept (not a bare call) and the code around it removes hooks
        (``handle.remove()``) or returns what it kept: a hook for the forward passes made there.
        In a method, the class may remove them in another method (a detector used as a context
        manager: ``__exit__`` removes what ``__init__`` registered): the hooks live as long as it."""
        statement = self.statement
        if isinstance(statement, cst.Expr) and statement.value is registration:
            return False
        scope = self.function.node if self.function is not None else None
        for node in walk_code(scope) if scope is not None else ():
            if _removes(node):
                return True
            if isinstance(node, cst.Return) and isinstance(node.value, cst.Name):
                return True
        owner = self.class_frame.node if self.class_frame is not None else None
        return owner is not None and any(_removes(node) for node in walk_code(owner))

    def _passed_values(self, expr: cst.BaseExpression) -> List[CallRef]:
        """What an argument hands over to be called: a function (``function_value``), an object
        whose ``__call__`` runs (``JsonlLogger(fh)``), or each of a list or tuple of them
        (``hooks=[JsonlLogger(fh), print_loss]``)."""
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [ref for element in expr.elements if not isinstance(element, cst.StarredElement)
                    for ref in self._passed_values(element.value)]
        ref = self.function_value(expr) or self._called_instance(expr)
        if ref is None and isinstance(expr, cst.Name):  # `callbacks = [Printer(10), meter]`, handed over by name
            return list(self.alternatives.lookup(".".join(self._prefix), expr.value) or ())
        if ref is None:  # `self.PHASES` of a class body's `PHASES = (forward, backward)`
            return list(self.class_alternatives(expr) or ())
        return [ref] if ref is not None else []

    def class_alternatives(self, expr: cst.BaseExpression) -> Optional[Tuple[CallRef, ...]]:
        """The callables ``self.NAME`` holds where the class body binds ``NAME`` to a display of them."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self" \
                and self.class_frame is not None:
            return self.alternatives.held_in(self.class_frame.qualname, expr.attr.value)
        return None

    def context_methods(self, expr: cst.BaseExpression) -> List[CallRef]:
        """``with timer:`` (``timer = StepTimer()``, ``self.timer``, ``StepTimer()``, ``timer("fwd")``): its class's
        ``__enter__`` and ``__exit__`` run there."""
        if self.function is None and not self.loops:
            return []
        cls = constructed_class(expr, self.classes, self.imports) if isinstance(expr, cst.Call) else self.instance_class(expr)
        if cls is None and isinstance(expr, cst.Call):  # `with timer("fwd"):` on `timer = RegionTimer()`, whose
            cls = self.instance_class(expr.func)  # `__call__` names the region and returns the timer
        return [method_ref(cls, "__enter__"), method_ref(cls, "__exit__")] if cls is not None else []

    def _called_instance(self, expr: cst.BaseExpression) -> Optional[CallRef]:
        """``monitor`` (``monitor = LogitMonitor()``) or ``LogitMonitor()`` given as a callable: its ``__call__``."""
        cls = self.instances.lookup(".".join(self._prefix), expr.value) if isinstance(expr, cst.Name) else \
            constructed_class(expr, self.classes, self.imports)
        return method_ref(cls, "__call__") if cls is not None else None

    def _iterated_function(self, iterable: cst.BaseExpression) -> Optional[CallRef]:
        """A generator run by the loop: ``for b in batches():``, ``for b in it`` (it = batches()),
        or a generator method of an instance (``for b in logger.log_every(loader, 10):``)."""
        prefix = ".".join(self._prefix)
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            if iterable.func.value in _ITERATION_WRAPPERS:
                return self._iterated_function(iterable.args[0].value) if iterable.args else None
            return NameRef(iterable.func.value, prefix)
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
                and isinstance(iterable.func.value, cst.Name):
            instance = self.instances.lookup(prefix, iterable.func.value.value)
            if instance is not None:
                return method_ref(instance, iterable.func.attr.value)
        if isinstance(iterable, cst.Name) and iterable.value in self._generators:
            return NameRef(iterable.value, prefix)
        instance = self.instances.lookup(prefix, iterable.value) if isinstance(iterable, cst.Name) else None
        if instance is not None:  # `for tasks in sampler:` runs `Sampler.__iter__`
            return method_ref(instance, "__iter__")
        return None

    def resolve_local(self, ref: CallRef) -> List[str]:
        """The local qualnames a call may run, when they are defined in this module.

        A bare name is looked up from the innermost enclosing function outwards; ``self.m()``
        finds ``m`` in the class or its local bases, plus overrides in local subclasses."""
        if isinstance(ref, NameRef):
            parts = ref.scope.split(".") if ref.scope else []
            for depth in range(len(parts), -1, -1):
                key = ".".join(parts[:depth] + [ref.name])
                if key in self.functions:
                    return [key]
                if key in self._generators:
                    return [self._generators[key]]
            return []
        if isinstance(ref, SelfRef):
            found: List[str] = []
            # the class, then its local bases depth first, left to right (mixins: `class T(LogMixin, StatusMixin)`)
            pending = [ref.class_qualname]
            seen = 0
            while pending and seen < 20:
                owner = self.classes.get(pending.pop(0))
                seen += 1
                if owner is None:
                    continue
                key = f"{owner.qualname}.{ref.method}"
                if key in self.functions:
                    found.append(key)
                    break
                pending[:0] = [b for b in owner.bases if b in self.classes]
            for sub in self._subclasses(ref.class_qualname) if not ref.exact else ():
                key = f"{sub}.{ref.method}"
                if key in self.functions and key not in found:
                    found.append(key)
            if not found and ref.method == "__call__":  # an `nn.Module` called runs its `forward`
                return self.resolve_local(SelfRef(ref.class_qualname, "forward"))
            return found
        return []

    def _subclasses(self, qualname: str) -> List[str]:
        out: List[str] = []
        frontier = [qualname]
        while frontier:
            base = frontier.pop()
            for name, frame in self.classes.items():
                if base in frame.bases and name not in out:
                    out.append(name)
                    frontier.append(name)
        return out


def _removes(node: cst.CSTNode) -> bool:
    """``handle.remove()``: a hook handle removed."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "remove" \
        and not node.args

