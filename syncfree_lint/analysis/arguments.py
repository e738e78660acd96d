"""Argument kinds: what a file's own calls pass into its functions' parameters.

A helper's parameter has no kind of its own: ``def log_stats(loss): print(f"{loss:.3f}")`` says
nothing about ``loss``. Its call sites do: ``log_stats(loss)`` in a step passes a device tensor,
``log_stats(loss.item())`` a number. The walk records, for every call of a plain name or of
``self.method``, the kinds of its arguments; after the walk, ``parameter_seeds`` turns them into
kinds for the parameters, and ``analyse`` walks the file again with those kinds bound at the
top of each function, until nothing changes (a helper's helper learns from the second walk).

A parameter gets a seed only from evidence that holds for every call the file shows:

- a device kind when some call passes a device tensor and none passes a value known to live
  elsewhere (calls passing an unknown value do not count against it: the tensor call alone
  syncs);
- a host kind (a number, numpy, a host tensor, ...) when every call passes that same kind.

An annotation that names a kind (``torch.Tensor``) wins over the seed. Calls from other files
arrive as ``ExternalKinds.calls_in`` (``analysis.run_kinds``) and count like the file's own; the
file's own calls of imported functions are kept in ``calls_out`` for the other files.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.autograd_functions import takes_ctx
from syncfree_lint.analysis.calls import CallRef, DottedRef, NameRef, SelfRef
from syncfree_lint.analysis.filefacts import ArgKinds, ExternalKinds
from syncfree_lint.analysis.hooks import hook_key
from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.passed_callables import PassedCallables, parameter_key
from syncfree_lint.knowledge import frequency as facts
from syncfree_lint.knowledge.torch_api import looks_like_module
from syncfree_lint.analysis.instances import (
    MODULE_OBJECT_KIND_PREFIX, OBJECT_KIND_PREFIX, ClassRef, class_of_elements, class_of_kind, constructed_class,
    object_kind, objects_kind,
)

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.module import ModuleAnalysis
    from syncfree_lint.analysis.imports import ImportMap
    from syncfree_lint.analysis.scope import ClassFrame, FunctionFrame, Placement

#: function qualname -> parameter name -> kind (and ``name + PASSED`` for a parameter some call sets)
Seeds = Dict[str, Dict[str, str]]
#: suffix of a seed key recording that a call passes the parameter a value other than ``False``:
#: ``def run(x, naflex=False)`` called as ``run(x, naflex=mode)`` is a mode the caller chooses,
#: not a switch that stays off
PASSED = " passed"
#: what the walk records for a literal ``False`` argument
_LITERAL_FALSE = "False"
#: (reference, positional kinds up to the first ``*args``, keyword kinds)
_Record = Tuple[CallRef, Tuple[Optional[str], ...], Tuple[Tuple[str, Optional[str]], ...]]
#: at most this many walks of one file (the first plus re-walks with new seeds)
MAX_WALKS = 3


class ArgumentsMixin:
    """Records argument kinds for ``ModuleAnalysis`` and derives parameter seeds from them."""

    functions: Dict[str, "FunctionFrame"]
    argument_records: List[_Record]
    calls_out: List[Tuple[str, ArgKinds, "Placement"]]
    external: ExternalKinds
    placement: Callable[[], "Placement"]
    unknown_reads: Set[Tuple[str, str]]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    resolve_local: Callable[[CallRef], List[str]]
    instance_class: Callable[[cst.BaseExpression], Optional[ClassRef]]
    module_name: str
    classes: Dict[str, "ClassFrame"]
    imports: "ImportMap"
    path: str
    function: Optional["FunctionFrame"]
    passed_callables: PassedCallables
    metric_value_kind: Callable[[cst.BaseExpression], Optional[str]]
    class_frame: Optional["ClassFrame"]
    #: set while recording the arguments an engine's emit hands its handlers: ``self`` is the engine's class
    _handing_itself: bool = False

    def _record_arguments(self, ref: CallRef, args: Sequence[cst.Arg]) -> None:
        if not args:
            return
        constructor = False
        if isinstance(ref, NameRef) and ref.name in self.classes:  # `Trainer(model, loss_fn)`: its `__init__` learns
            ref, constructor = SelfRef(ref.name, "__init__"), True  # (and what the call builds: `Trainer(net, Miner())`)
        hook = hook_key(ref, lambda scope, name: self.passed_callables.iterates(self.functions.get(scope), name))
        if hook is not None:  # `cb.on_batch_end(self, out)`: the project's overrides learn the kinds
            ref = DottedRef(hook, bound=True)
        held = self.passed_callables.held(self.function, ref.name if isinstance(ref, NameRef) else f"self.{ref.method}") \
            if isinstance(ref, (NameRef, SelfRef)) and self.function is not None and not self.resolve_local(ref) else None
        if held is not None:
            # `on_step(loss)` on a parameter (or `cb(loss)` in `for cb in callbacks`, `self.on_step(loss)`
            # of a kept one): the functions other files pass there learn the kinds
            ref = DottedRef(parameter_key(self.path, held))
        imported = isinstance(ref, DottedRef)
        if not (imported or isinstance(ref, SelfRef) or (isinstance(ref, NameRef) and "." not in ref.name)):
            return
        # an imported method called on an instance: other files see ``self`` as its first argument,
        # as in ``Class.method(obj, x)``
        positional: List[Optional[str]] = [None] if isinstance(ref, DottedRef) and ref.bound else []
        keywords: List[Tuple[str, Optional[str]]] = []
        for arg in args:
            if arg.star:
                if arg.star == "*" and not keywords:
                    positional.extend(self._spread(arg.value))
                break
            value = arg.value
            kind = _LITERAL_FALSE if isinstance(value, cst.Name) and value.value == "False" else self.kind(value)
            if kind is None or kind == tensors.METRIC or isinstance(value, cst.Call):
                kind = self.metric_value_kind(value) or kind  # `evaluate(model, MulticlassAccuracy(n).to(device))`
            if kind is None or kind == tensors.OTHER:  # an instance of a known class says more than "not a tensor"
                kind = self._object_kind(value, constructed=constructor) or self._objects_kind(value) or kind
            elif kind == tensors.MODULE or (kind == tensors.TENSOR and isinstance(value, cst.Name)
                                            and self.instance_class(value) is not None):
                # a module of a known class: both (`model = GRU4Rec(n).to(device)` reads as moved, a tensor, here:
                # the class it was built from says more to the callee)
                named = self._object_kind(value, constructed=constructor)
                kind = MODULE_OBJECT_KIND_PREFIX + named[len(OBJECT_KIND_PREFIX):] if named else kind
            if arg.keyword is not None:
                keywords.append((arg.keyword.value, kind))
            elif not keywords:
                positional.append(kind)
        if not imported:
            self.argument_records.append((ref, tuple(positional), tuple(keywords)))
        elif any(k not in (None, _UNKNOWN_REST) for k in positional + [k for _, k in keywords]):
            assert isinstance(ref, DottedRef)  # for the type checker
            self.calls_out.append((ref.qualname, (tuple(positional), tuple(keywords)), self.placement()))  # for others

    def _spread(self, value: cst.BaseExpression) -> List[Optional[str]]:
        """What ``*value`` passes: the elements of a tuple whose parts are known (``*self.unpack(batch)`` of a
        function returning ``x.to(dev), n``), every further parameter a device tensor for a sequence of them
        (``*(t.to(dev) for t in batch)``), or parameters not known from here on."""
        kind = self.kind(value)
        elements = tensors.tuple_elements(kind)
        if elements is not None:
            return [*elements, _UNKNOWN_REST]
        return [tensors.TENSOR_REST] if kind == tensors.TENSORS else [_UNKNOWN_REST]

    def _object_kind(self, value: cst.BaseExpression, constructed: bool = False) -> Optional[str]:
        """``train(..., logger)`` with ``logger = RunLogger()``: the parameter holds a RunLogger;
        with ``constructed``, ``RunLogger(...)`` too (``return RunLogger(...)`` of a factory, an argument of a
        constructor: ``Trainer(net, PairMiner(0.8))`` keeps it; of other calls an argument built in the call stays
        unknown, set-up code passes many and a step seldom)."""
        cls = self.instance_class(value) or (constructed_class(value, self.classes, self.imports) if constructed else None)
        if cls is None and isinstance(value, cst.Name) and value.value == "self" and self._handing_itself:
            frame = self.class_frame  # an engine handing its handlers itself (``module._emitter_given``)
            return object_kind(f"{self.module_name}.{frame.qualname}" if self.module_name else frame.qualname) \
                if frame is not None else None
        if cls is None:
            return None
        if cls.local:
            return object_kind(f"{self.module_name}.{cls.name}" if self.module_name else cls.name)
        return object_kind(cls.name)

    def _objects_kind(self, value: cst.BaseExpression) -> Optional[str]:
        """``train(..., hooks=[monitor])`` / ``[JsonlLogger(fh)]``: a list of instances of one class; a dict of them
        (``{k: Meter() for k in names}``) too, for its values."""
        if isinstance(value, cst.DictComp):
            items = [value.value]
        elif isinstance(value, cst.Dict) and all(isinstance(element, cst.DictElement) for element in value.elements):
            items = [element.value for element in value.elements]
        elif isinstance(value, (cst.List, cst.Tuple)) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            items = [element.value for element in value.elements]
        else:
            return None
        if not items:
            return None
        kinds = {self._object_kind(item, constructed=True) for item in items}
        kind = kinds.pop() if len(kinds) == 1 else None
        cls = class_of_kind(kind)
        return objects_kind(cls.name) if cls is not None else None

    def parameter_seeds(self) -> Seeds:
        """Kinds for parameters that every call of this file agrees on (see the module doc)."""
        passed: Dict[Tuple[str, str], List[Optional[str]]] = {}
        # (function, how ``self`` is given: "bound" by the instance, "first" positional, or None:
        # a local unbound call, too ambiguous), then the argument kinds
        records = [(qualname, "bound" if isinstance(ref, SelfRef) else None, positional, keywords)
                   for ref, positional, keywords in self.argument_records for qualname in self.resolve_local(ref)]
        records.extend((qualname, "first", positional, keywords)
                       for qualname, (positional, keywords) in self.external.calls_in)
        # `StepState(batch=batch.to(dev))` of a dataclass: its generated `__init__` takes the fields, in order
        records.extend((f"{ref.class_qualname}.__init__", "fields", positional, keywords)
                       for ref, positional, keywords in self.argument_records
                       if isinstance(ref, SelfRef) and ref.method == "__init__" and not self.resolve_local(ref)
                       and dataclass_fields(self.classes.get(ref.class_qualname)))
        for qualname, self_given, positional, keywords in records:
            frame = self.functions.get(qualname)
            if self_given == "fields":
                self._field_seeds(passed, qualname, positional, keywords)
                continue
            if frame is None:
                continue
            names = _positional_names(frame, self_given, takes_ctx(frame.class_frame, frame.name, self.classes))
            if names is None or not _accepts(frame, names, positional, keywords):
                continue
            given = dict(keywords)
            for index, name in enumerate(names):
                if index < len(positional):
                    if positional[index] == _UNKNOWN_REST:
                        break
                    if positional[index] == tensors.TENSOR_REST:  # `f(*tensors)`: this one and the rest are device tensors
                        positional = (*positional[:index], *[tensors.TENSOR] * (len(names) - index))
                    given.setdefault(name, positional[index])
            for name in names + _keyword_only_names(frame):
                passed.setdefault((qualname, name), []).append(given.get(name, _MISSING))
            collected = _keywords_collected(frame, given, names)
            if collected is not None:  # `def update(self, **metrics)` called as `update(loss=loss.detach())`
                passed.setdefault((qualname, collected[0]), []).append(collected[1])
        seeds: Seeds = {}
        for (qualname, name), kinds in passed.items():
            if any(k not in (_MISSING, _LITERAL_FALSE) for k in kinds) and qualname in self.functions \
                    and _defaults_to_false(self.functions[qualname], name):
                seeds.setdefault(qualname, {})[name + PASSED] = PASSED
            seed = _agreed_kind([tensors.OTHER if k == _LITERAL_FALSE else None if k == _MISSING else k for k in kinds])
            if seed is not None:
                seeds.setdefault(qualname, {})[name] = seed
        return seeds

    def _field_seeds(self, passed: Dict[Tuple[str, str], List[Optional[str]]], qualname: str,
                     positional: Sequence[Optional[str]], keywords: Sequence[Tuple[str, Optional[str]]]) -> None:
        """What one construction of a dataclass gives each field (``analysis.definitions`` reads the seeds of
        ``Cls.__init__`` as what its instances hold)."""
        fields = dataclass_fields(self.classes.get(qualname[: -len(".__init__")]))
        given = dict(keywords)
        for index, name in enumerate(fields):
            if index < len(positional) and positional[index] not in (_UNKNOWN_REST, tensors.TENSOR_REST):
                given.setdefault(name, positional[index])
        for name in fields:
            passed.setdefault((qualname, name), []).append(given.get(name, _MISSING))


def _accepts(frame: "FunctionFrame", names: List[str], positional: Sequence[Optional[str]],
             keywords: Sequence[Tuple[str, Optional[str]]]) -> bool:
    """Whether a call with these arguments can run the function: a call of a table of functions
    (``LOSSES[name](logits, y, w)``) hands its arguments only to those that take that many, and those names."""
    if not isinstance(frame.node, cst.FunctionDef):
        return True
    params = frame.node.params
    given = [kind for kind in positional if kind not in (_UNKNOWN_REST, tensors.TENSOR_REST)]
    if len(given) > len(names) and not isinstance(params.star_arg, cst.Param):
        return False
    if params.star_kwarg is not None:
        return True
    known = set(names) | {p.name.value for p in (*params.params, *params.kwonly_params)}
    return all(name in known for name, _ in keywords)


#: a positional ``*args`` at the call: the parameters from here on are not known
_UNKNOWN_REST = "*"
#: a parameter a call leaves to its default
_MISSING = "-"


def _agreed_kind(kinds: List[Optional[str]]) -> Optional[str]:
    known = {k for k in kinds if k is not None}
    if len(known) == 1 and (class_of_kind(next(iter(known))) or class_of_elements(next(iter(known)))) is not None:
        return next(iter(known))  # every call that says passes the same class (or a list of its instances)
    if known and known <= tensors.DEVICE_TENSORS:
        return known.pop() if len(known) == 1 else tensors.TENSOR
    if len(known) == 1 and tensors.is_metric(next(iter(known))):
        return known.pop()  # a torchmetrics object (or a dict of them) built the same way by every call that says
    if len(known) == 1 and known <= tensors.CONTAINERS:
        return known.pop()  # a dict of device tensors (``log_tensors(losses, step)``), a list of such dicts
    if len(known) == 1 and None not in kinds:
        only = known.pop()
        return only if only in tensors.NOT_DEVICE else None
    return None


def _positional_names(frame: "FunctionFrame", self_given: Optional[str], ctx: bool = False) -> Optional[List[str]]:
    """The parameters a call's positional arguments fill. For a method, ``self_given`` says how
    the instance arrives: "bound" (``obj.m(x)`` in this file: the arguments start after ``self``),
    "first" (another file's call, where the run passes ``self`` first), None (``Class.m(obj, x)``
    in this file: not worth the ambiguity). A custom autograd function's ``forward``/``backward`` (``ctx``)
    take the arguments of ``apply`` after ``ctx``, whoever calls."""
    node = frame.node
    if not isinstance(node, cst.FunctionDef):
        return None
    names = [p.name.value for p in list(node.params.posonly_params) + list(node.params.params)]
    if ctx:
        return names[1:]
    static = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)
    if frame.class_frame is not None and not static:
        if self_given is None:
            return None
        if self_given == "bound":
            names = names[1:]
    return names


def _keywords_collected(frame: "FunctionFrame", given: Dict[str, Optional[str]],
                        names: List[str]) -> Optional[Tuple[str, Optional[str]]]:
    """(the ``**`` parameter, the kind of the dict it collects) for one call: a dict of device tensors
    when some keyword it collects is one (the others may be numbers: formatting its values still
    reads the tensors), else unknown."""
    node = frame.node
    if not isinstance(node, cst.FunctionDef) or not isinstance(node.params.star_kwarg, cst.Param):
        return None
    named = set(names) | set(_keyword_only_names(frame))
    extra = [kind for name, kind in given.items() if name not in named]
    return node.params.star_kwarg.name.value, tensors.TENSORS if any(k in tensors.DEVICE_TENSORS for k in extra) else None


def _keyword_only_names(frame: "FunctionFrame") -> List[str]:
    node = frame.node
    return [p.name.value for p in node.params.kwonly_params] if isinstance(node, cst.FunctionDef) else []


def _defaults_to_false(frame: "FunctionFrame", name: str) -> bool:
    node = frame.node
    if not isinstance(node, cst.FunctionDef):
        return False
    params = list(node.params.posonly_params) + list(node.params.params) + list(node.params.kwonly_params)
    return any(p.name.value == name and isinstance(p.default, cst.Name) and p.default.value == "False" for p in params)


def worth_another_walk(analysis: "ModuleAnalysis", found: Seeds, used: Seeds) -> bool:
    """Could the new seeds change a finding? Only in a file that has a step, only for a parameter
    the walk read without knowing its kind (``unknown_reads``), and only through a kind that a
    rule tells apart (a device tensor, or a host array that looks like one) or a switch a call
    sets. Other seeds (numbers, modules) ride along when the file is walked again."""
    candidates = [
        qualname for qualname, kinds in found.items() for name, kind in kinds.items()
        if _decisive(name, kind) and (qualname, name) in analysis.unknown_reads and used.get(qualname, {}).get(name) != kind
    ]
    analysis.deferred_seeds = set()
    if not candidates:
        return False
    # a generator handed device data may be what makes a loop drawing from it a step loop (``loops._device_data``)
    reached = _reached_from_steps(analysis) | set(analysis.yields)
    analysis.deferred_seeds = {qualname for qualname in candidates if qualname not in reached}
    return any(qualname in reached for qualname in candidates)


def _reached_from_steps(analysis: "ModuleAnalysis") -> Set[str]:
    """Local functions that this file's own steps call, directly or through other local functions
    (and those that other files' steps call: the run only sends those, see ``run_kinds``)."""
    calls: Dict[Optional[str], List[str]] = {}
    reached: Set[str] = {qualname for qualname, _ in analysis.external.calls_in} | set(analysis.external.reached)
    for site in analysis.calls:
        caller = site.placement.function
        targets = analysis.resolve_local(site.ref)
        if any(loop.is_step for loop in site.placement.loops) or (caller is not None and caller.is_step):
            reached.update(targets)
        calls.setdefault(caller.qualname if caller is not None else None, []).extend(targets)
    # a function that is a step or holds a step loop runs its own code per step, whoever calls it
    reached.update(qualname for qualname, frame in analysis.functions.items() if frame.is_step or frame.has_step_loop)
    frontier = list(reached)
    while frontier:
        for target in calls.get(frontier.pop(), ()):
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    # `__init__` keeps what it is given on `self` for the methods a step calls (`self.loss_fn(...)`)
    owners = {qualname.rsplit(".", 1)[0] for qualname in reached if "." in qualname}
    reached.update(f"{owner}.__init__" for owner in owners if f"{owner}.__init__" in analysis.functions)
    return reached


#: kinds whose arrival in a parameter can change what the rules report
_DECISIVE = tensors.DEVICE_TENSORS | {tensors.TENSORS, tensors.NUMPY, tensors.HOST_TENSOR, tensors.HOST_BATCH, PASSED}


def _decisive(name: str, kind: str) -> bool:
    """Could ``kind`` arriving in parameter ``name`` change a finding? A module does where the name
    does not already say so (``criterion(out, y)`` gives a tensor once ``criterion`` is known to be
    ``nn.CrossEntropyLoss()``; ``model(x)`` gives one anyway)."""
    if kind == tensors.MODULE:
        return not looks_like_module(name)
    if kind == tensors.NUMBER and name.startswith(facts.BATCH_PARAMS):
        return True  # a size named like a batch (``coords_grid(batch, h, w)``)
    return kind in _DECISIVE or class_of_kind(kind) is not None or class_of_elements(kind) is not None \
        or (tensors.is_metric(kind) and kind != tensors.METRIC)


Returns = Dict[str, Optional[str]]
#: where a file's walks settled: the seeds and earlier returns its last walk used (``analyse``'s ``start``)
Settled = Tuple[Seeds, Returns]


def analyse(walk: Callable[[Seeds, Returns], "ModuleAnalysis"], start: Optional[Settled] = None) -> "ModuleAnalysis":
    """Walk a file (``walk(seeds, returns)`` builds and runs one analysis) until its parameter seeds
    settle and every function called before its definition was walked is known to return what it returns.

    ``start``: where an earlier analysis of the same text settled (the file walked again with what
    other files teach it): the walks go on from there instead of from nothing."""
    seeds: Seeds = dict(start[0]) if start is not None else {}
    returns: Returns = dict(start[1]) if start is not None else {}
    analysis = walk(seeds, returns)
    if start is not None:
        found = analysis.parameter_seeds()
        if found != seeds:  # what the file was taught changed what its calls pass: the start no longer holds
            seeds, returns = found, dict(analysis.returns)
            analysis = walk(seeds, returns)
    for _ in range(MAX_WALKS - 1):
        found = analysis.parameter_seeds()
        later = {name for name in analysis.forward_returns if analysis.returns.get(name) not in (None, returns.get(name))}
        if not worth_another_walk(analysis, found, seeds) and not later:
            break
        seeds, returns = found, dict(analysis.returns)
        analysis = walk(seeds, returns)
    return analysis


def dataclass_fields(frame: Optional["ClassFrame"]) -> List[str]:
    """The fields of a ``@dataclass`` of the file that defines no ``__init__`` (its annotated class attributes, in
    order); [] for any other class."""
    node = frame.node if frame is not None else None
    if not isinstance(node, cst.ClassDef) or "__init__" in frame.methods or not any(  # type: ignore[union-attr]
            (dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or "").rsplit(".", 1)[-1]
            == "dataclass" for d in node.decorators):
        return []
    return [small.target.value for statement in getattr(node.body, "body", ()) if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)]
