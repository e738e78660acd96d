"""Names that hold objects: instances of a known class, functions, and the arguments a
``functools.partial`` binds.

``meter = Meter()`` makes ``meter.update(x)`` run ``Meter.update``; ``step = torch.compile(train_step)``
makes ``step(b)`` run ``train_step``; ``on_step = partial(log_scalars, writer, prefix="train")``
makes ``on_step(i, d)`` run ``log_scalars(writer, i, d, prefix="train")``; ``loss_fn.center`` on an
instance of a class that registers the buffer ``center`` is a tensor, also when the class is another
file's (``FileFacts.attributes``). The walk (``ModuleAnalysis``) records these as assignments finish;
calls read them back (``analysis.calls``, ``analysis.arguments``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.calls import NEXT_OF, DottedRef, NameRef, method_ref
from syncfree_lint.analysis.factories import returned_function_table
from syncfree_lint.analysis.dispatch_tables import iterated_table
from syncfree_lint.analysis.passed_callables import PassedCallables, parameter_key
from syncfree_lint.analysis.properties import PROPERTY_KEY, property_names
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.instances import (
    ClassRef,
    InstanceTable,
    ScopedNames,
    annotated_class,
    keyed_instances,
    class_of_kind,
    constructed_class,
    unwrap_returning_self,
)

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef
    from syncfree_lint.analysis.scope import ClassFrame, FunctionFrame

#: what binds a function's first arguments and keywords, keeping the function (``knowledge`` of one name)
_PARTIAL = "functools.partial"


class ObjectsMixin:
    """Instances, functions and bound arguments held by names, for ``ModuleAnalysis``."""

    imports: ImportMap
    classes: Dict[str, "ClassFrame"]
    class_frame: Optional["ClassFrame"]
    function: Optional["FunctionFrame"]
    functions: Dict[str, "FunctionFrame"]
    module_name: str
    unknown_imports: Set[str]
    results_of: ScopedNames[str]
    instances: InstanceTable
    callables: ScopedNames["CallRef"]
    alternatives: ScopedNames[Tuple["CallRef", ...]]
    bound_arguments: ScopedNames[Tuple[cst.Arg, ...]]
    imported_returns: Dict[str, str]
    passed_callables: PassedCallables
    path: str
    _prefix: Sequence[str]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    function_value: Callable[[cst.BaseExpression], Optional["CallRef"]]
    table_functions: Callable[[cst.Name], Optional["CallRef"]]
    wraps_callable: Callable[[cst.Call], bool]
    _iterated_function: Callable[[cst.BaseExpression], Optional["CallRef"]]
    _passed_values: Callable[[cst.BaseExpression], List["CallRef"]]
    class_alternatives: Callable[[cst.BaseExpression], Optional[Tuple["CallRef", ...]]]
    _ref_return_kind: Callable[["CallRef", bool], Optional[str]]
    lookup: Callable[[str], Optional[str]]
    resolve_local: Callable[["CallRef"], List[str]]
    yields: Dict[str, Set[Optional[str]]]
    _generators: Dict[str, str]
    _envs: List[Dict[str, Optional[str]]]
    _kinds: Dict[int, Optional[str]]
    _rules: Callable[[cst.CSTNode], None]
    _children: Callable[[cst.CSTNode], None]
    _stores: Set[int]
    _called_attributes: Set[int]
    instance_class: Callable[[cst.BaseExpression], Optional[ClassRef]]
    _add_call_site: Callable[["CallRef"], None]

    def _remember_instance(self, name: str, value: cst.BaseExpression) -> None:
        """``meter = Meter()``: calls of ``meter.m()`` run ``Meter.m`` (``analysis.instances``);
        ``step = torch.compile(train_step)``: calls of ``step()`` run ``train_step``."""
        scope = ".".join(self._prefix)
        cls = constructed_class(value, self.classes, self.imports)
        inner = unwrap_returning_self(value)
        if cls is None and inner is not value and isinstance(inner, cst.Name):  # `model = model.to(device)`
            cls = self.instances.lookup(scope, inner.value)
        if cls is None and isinstance(value, cst.Call) and value.args and isinstance(value.args[0].value, cst.Name) \
                and self.wraps_callable(value):
            cls = self.instances.lookup(scope, value.args[0].value.value)  # `model = torch.compile(model)`
        if cls is None and isinstance(value, cst.Call):  # `trainer = build_trainer(cfg)`: what the factory returns
            cls = self._local_class(class_of_kind(self.kind(value)))
            origin = self.qualname(value.func) if cls is None and isinstance(value.func, (cst.Name, cst.Attribute)) else None
            if origin is not None or self.results_of.lookup(scope, name) is not None:
                self.results_of.bind(scope, name, origin if origin in self.unknown_imports else None)
        if cls is not None or self.instances.lookup(scope, name) is not None:
            self.instances.bind(scope, name, cls)
        for key, member in keyed_instances(value, self.classes, self.imports):
            self.instances.bind(scope, name + key, member)  # `meters = {"loss": Ema(), "tput": Throughput()}`
        function = self.function_value(value)
        if function is not None or self.callables.lookup(scope, name) is not None:
            self.callables.bind(scope, name, function)
        bound = tuple(value.args[1:]) if function is not None and isinstance(value, cst.Call) \
            and self.qualname(value.func) == _PARTIAL else ()
        if bound or self.bound_arguments.lookup(scope, name) is not None:
            self.bound_arguments.bind(scope, name, bound or None)
        drawn = self._iterated_function(value) if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
            and value.func.value == "iter" else None
        if drawn is not None or self.callables.lookup(scope, name + NEXT_OF) is not None:
            self.callables.bind(scope, name + NEXT_OF, drawn)  # `it = iter(sampler)`: `next(it)` runs its `__iter__`
        other = self.function_value(value.orelse) if isinstance(value, cst.IfExp) and function is not None else None
        others = (other,) if other is not None and other != function else \
            self._callable_elements(value) or self._factory_table(value)
        if others or self.alternatives.lookup(scope, name) is not None:
            self.alternatives.bind(scope, name, others or None)

    def _instance_call_kind(self, name: str) -> Optional[str]:
        """``out = miner(emb, labels)`` with ``miner = BatchHardTriplet(m)``: what its ``__call__``
        returns; a model's call is a tensor already (``analysis.tensors``), or the tuple its ``forward``
        returns (``logits, mask = tagger(tokens, lengths)``)."""
        cls = self.instances.lookup(".".join(self._prefix), name)
        if cls is None:
            return None
        if self.lookup(name) == tensors.MODULE or (cls.local and cls.name in self.classes and self.classes[cls.name].is_module):
            returned = self._ref_return_kind(method_ref(cls, "forward"), True)
            return returned if returned is not None and tensors.tuple_elements(returned) is not None else None
        return self._ref_return_kind(method_ref(cls, "__call__"), True)

    def _passed_return_kind(self, name: str) -> Optional[str]:
        """``pw = self.pair_loss(est, ref)`` with ``self.pair_loss`` kept from a parameter of ``__init__`` (or
        ``out = step_fn(batch)`` of a parameter): what the functions the run passes there return, when it says
        (asking records the parameter's name)."""
        held = self.passed_callables.held(self.function, name) if self.function is not None else None
        if held is None:
            return None
        key = parameter_key(self.path, held)
        kind = self.imported_returns.get(key)
        if kind is None:
            self.unknown_imports.add(key)
        return kind

    def _factory_table(self, value: cst.BaseExpression) -> Tuple["CallRef", ...]:
        """``phases = make_phases(model, opt)`` of a local factory returning a dict of the closures it defines
        (``calls.returned_function_table``): ``phases[name](out)`` runs one of them."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
            return ()
        found = self.resolve_local(NameRef(value.func.value, ".".join(self._prefix)))
        frame = self.functions.get(found[0]) if len(found) == 1 else None
        names = returned_function_table(frame.node) if frame is not None else ()
        return tuple(NameRef(name, found[0]) for name in names)

    def _callable_elements(self, value: cst.BaseExpression) -> Tuple["CallRef", ...]:
        """``[record, Progress(10)]``, ``{"on_step_end": [record, tracker]}``: the functions and
        called objects a list, tuple or dict display holds (a dict's values, or their elements)."""
        if isinstance(value, (cst.List, cst.Tuple)):
            return tuple(self._passed_values(value))
        if isinstance(value, cst.IfExp):  # `[Printer(10), meter] if rank == 0 else []`
            return self._callable_elements(value.body) + self._callable_elements(value.orelse)
        if isinstance(value, cst.Dict):
            return tuple(ref for element in value.elements if isinstance(element, cst.DictElement)
                         for ref in self._passed_values(element.value))
        return ()

    def _loop_callables(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """``for cb in callbacks:`` / ``callbacks["end"]`` / ``callbacks.values()``: calling ``cb``
        calls each callable the display held; ``for name, fn in METRICS.items():`` (or ``.values()``) over a
        dispatch table calls any function of the table."""
        table, element = iterated_table(target, iterable)
        ref = self.table_functions(table) if table is not None else None
        if element is not None and ref is not None:
            self.callables.bind(".".join(self._prefix), element.value, ref)
        while isinstance(iterable, cst.Subscript) or (isinstance(iterable, cst.Call) and not iterable.args
                                                       and isinstance(iterable.func, cst.Attribute)
                                                       and iterable.func.attr.value == "values"):
            iterable = iterable.value if isinstance(iterable, cst.Subscript) else iterable.func.value  # type: ignore[attr-defined]
        if not isinstance(target, cst.Name):
            return
        scope = ".".join(self._prefix)
        if not isinstance(iterable, cst.Name):  # `for phase in self.PHASES:` of a class body's display
            held = self.class_alternatives(iterable)
            if held is not None:
                self.alternatives.bind(scope, target.value, held)
            return
        held = self.alternatives.lookup(scope, iterable.value)
        if held is not None or self.alternatives.lookup(scope, target.value) is not None:
            self.alternatives.bind(scope, target.value, held)

    def _local_class(self, cls: Optional[ClassRef]) -> Optional[ClassRef]:
        """``cls``, named as a class of this file when it is one (an object kind names classes by
        their module's dotted name)."""
        prefix = f"{self.module_name}." if self.module_name else ""
        if cls is not None and cls.name.startswith(prefix) and cls.name[len(prefix):] in self.classes:
            return ClassRef(True, cls.name[len(prefix):])
        return cls

    def _remember_annotated_instance(self, target: cst.BaseExpression, annotation: cst.Annotation) -> None:
        """``optim: Optimizer`` in a class body (a dataclass field) or ``self.optim: Optimizer = ...``:
        ``self.optim.m()`` runs ``Optimizer.m``; ``meter: Meter = ...`` in a function: ``meter.m()``."""
        cls = annotated_class(annotation, self.classes, self.imports)
        if cls is None:
            return
        name = dotted(target)
        if name is None or self.class_frame is None and "." in name:
            return
        if self.class_frame is not None and (self.function is None and "." not in name or name.startswith("self.")):
            attribute = name if name.startswith("self.") else f"self.{name}"
            self.class_frame.attr_classes[attribute] = (cls.local, cls.name)
        elif "." not in name:
            self.instances.bind(".".join(self._prefix), name, cls)

    def _remember_attribute_class(self, name: str, value: cst.BaseExpression) -> None:
        """``self.head = BoxHead(cfg)`` (or ``BoxHead(cfg).to(device)``, or ``head`` holding one, a
        parameter every call gives one): calls of ``self.head.m()`` run ``BoxHead.m``."""
        cls = constructed_class(value, self.classes, self.imports) or (
            self.instances.lookup(".".join(self._prefix), value.value) if isinstance(value, cst.Name) else None)
        if cls is not None and self.class_frame is not None:
            self.class_frame.attr_classes[name] = (cls.local, cls.name)
        frame = self.class_frame
        if frame is not None:
            for key, member in keyed_instances(value, self.classes, self.imports):
                frame.attr_classes[name + key] = (member.local, member.name)  # `self.meters["loss"]`

    def with_bound_arguments(self, func: cst.BaseExpression, args: Sequence[cst.Arg]) -> Sequence[cst.Arg]:
        """The arguments a call of ``func`` hands the function: ``on_step(i, d)`` with
        ``on_step = partial(log_scalars, writer, prefix="train")`` gives ``(writer, i, d, prefix="train")``."""
        bound = self.bound_arguments.lookup(".".join(self._prefix), func.value) if isinstance(func, cst.Name) else None
        if not bound:
            return args
        return (*[arg for arg in bound if arg.keyword is None], *args, *[arg for arg in bound if arg.keyword is not None])

    def _property_read(self, node: cst.Attribute) -> None:
        """``self.model.attention_entropy`` read (not called, not assigned) on an instance of a known class: a call
        of the property's getter here (``analysis.properties``)."""
        if id(node) in self._stores or id(node) in self._called_attributes:
            return
        receiver, name = node.value, node.attr.value
        if isinstance(receiver, cst.Name) and receiver.value == "self" and self.class_frame is not None:
            if name in property_names(self.class_frame.node):
                self._add_call_site(method_ref(ClassRef(True, self.class_frame.qualname), name))
            return
        cls = self.instance_class(receiver)
        if cls is None and isinstance(receiver, cst.Attribute):  # `model.cluster.n_active`: what `model` keeps
            owner = self.instance_class(receiver.value)
            if owner is not None and not owner.local:
                self._add_call_site(DottedRef(f"{PROPERTY_KEY}{owner.name}.{receiver.attr.value}.{name}", bound=True))
                return
            kept = self.classes[owner.name].attr_classes.get(f"self.{receiver.attr.value}") \
                if owner is not None and owner.name in self.classes else None
            cls = ClassRef(*kept) if kept is not None else None
        if cls is None:
            return
        if not cls.local:
            self._add_call_site(DottedRef(f"{PROPERTY_KEY}{cls.name}.{name}", bound=True))
            return
        frame = self.classes.get(cls.name)
        if frame is not None and name in property_names(frame.node):
            self._add_call_site(method_ref(cls, name))

    def _instance_attribute(self, name: str) -> Optional[str]:
        """``loss_fn.center`` / ``self.loss_fn.center`` on an instance of a known class: what that
        class keeps there (its own frame, or another file's facts through ``imported_returns``)."""
        parts = name.split(".")
        if parts[0] == "self" and len(parts) > 2 and self.class_frame is not None:
            found = self.class_frame.attr_classes.get(".".join(parts[:2]))
            cls = ClassRef(*found) if found is not None else None
            attribute = ".".join(parts[2:])
        elif parts[0] != "self":
            cls = self.instances.lookup(".".join(self._prefix), parts[0])
            attribute = ".".join(parts[1:])  # `engine.state.output`: what the class keeps at `self.state.output`
        else:
            return None
        if cls is None:
            return None
        if cls.local:
            frame = self.classes.get(cls.name)
            return frame.attrs.get(f"self.{attribute}") if frame is not None else None
        key = f"{cls.name}.{attribute}"
        if key not in self.imported_returns:
            self.unknown_imports.add(key)
        return self.imported_returns.get(key)

    def _yield(self, node: cst.Yield) -> None:
        """``yield x.to(dev), y.to(dev)`` in a generator: what ``next()`` of it, or a loop over it, gives."""
        self._rules(node)
        self._children(node)
        value = node.value
        if self.function is not None and isinstance(value, cst.BaseExpression):
            kind = tensors.tuple_kind([None if isinstance(el, cst.StarredElement) else self.kind(el.value)
                                       for el in value.elements]) if isinstance(value, cst.Tuple) else self.kind(value)
            self.yields.setdefault(self.function.qualname, set()).add(kind)

    def _yielded(self, iterable: cst.BaseExpression) -> Optional[str]:
        """What a local generator gives: ``gen(...)``, or a name bound to one (``it = gen(...)``)."""
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            local = self.resolve_local(NameRef(iterable.func.value, ".".join(self._prefix)))
            qualname = local[0] if local else None
        else:
            qualname = self._generators.get(iterable.value) if isinstance(iterable, cst.Name) else None
        kinds = self.yields.get(qualname or "", set())
        return next(iter(kinds)) if len(kinds) == 1 else None

    def _lambda_result(self, node: cst.Lambda) -> Optional[str]:
        """The kind of the lambda's body with its parameters unknown."""
        params = node.params
        self._envs.append({p.name.value: None for p in (*params.posonly_params, *params.params, *params.kwonly_params)})
        try:
            return self.kind(node.body)
        finally:
            self._envs.pop()
            self._kinds.clear()
