"""Kinds across files: what one file's values tell another, joined over the whole run.

Each file is walked on its own (``engine.lint_source``), so in ``train.py``

    from utils import compute_loss, log_stats
    loss = compute_loss(model, batch)      # compute_loss is in utils.py: kind unknown
    log_stats(loss, step)                  # utils.log_stats does not know it gets a tensor

neither ``float(loss)`` in the loop nor ``f"{loss:.3f}"`` inside ``log_stats`` is found. Each
file's facts say what it can tell the others (the kinds its functions return, the argument kinds
of its calls of imported functions) and what it could learn (imported calls whose result kind a
read needed; functions with a parameter read of unknown kind). ``plan`` joins them over the run
and names the files that would learn something, with what (``ExternalKinds``); the engine walks
those files once more with it. Only calls made where a step reaches teach argument kinds, so
the second walk stays rare. A file the text pre-filter skipped (no word any rule starts from) is
parsed when a step passes one of its functions a tensor.

What a file learns can teach another file in turn (``loss = compute_loss(...)`` learned, then
``log_stats(loss)`` teaches ``utils.py``): the engine plans again after each round, until
nothing new is learned (``ROUNDS`` bounds it).
"""
from __future__ import annotations

from typing import Collection, Dict, List, Optional, Sequence, Set, Tuple

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.callgraph import (
    CLASS_KEY,
    FunctionIndex,
    build_graph,
    function_index,
    lookup,
    namespace_prefixes,
    passed_to_parameters,
)
from syncfree_lint.analysis.passed_callables import PARAMETER_KEY
from syncfree_lint.analysis.filefacts import STEP, ArgKinds, ExternalKinds, FileFacts
from syncfree_lint.analysis.instances import FUNCTION_KIND_PREFIX, class_of_kind
from syncfree_lint.knowledge.frequency import MODULE_BASE_SUFFIXES
from syncfree_lint.knowledge.meters import MeterShape

#: return kinds worth a second walk of the caller: they make reads of the result findings (a
#: device tensor, or a tuple holding one) or clear them (host arrays and tensors). A module, a
#: number or a loader changed no finding on the dev corpus and cost one file in four a second walk.
_TELLING_RETURNS = tensors.DEVICE_TENSORS | {tensors.TENSORS, tensors.NUMPY, tensors.HOST_TENSOR, tensors.HOST_BATCH}

#: rounds of walking files again with what others teach them, until nothing new is learned: what is
#: learned only grows (``merge``), so the rounds end at a fixed point; this bound only guards against a
#: bug. A chain such as ``sample() -> response_mask() -> masked_whiten(x, mask)`` across files needs 5;
#: the dev corpus settles in at most 3 per repository.
ROUNDS = 10


def plan(all_facts: Sequence[FileFacts], reported: Collection[str]) -> Dict[str, ExternalKinds]:
    """The files among ``reported`` (paths) that another file's facts could teach a kind, and what."""
    index = function_index(all_facts)
    _, reached = build_graph(all_facts, index).reachable()
    # files where something runs per step: elsewhere a kind learned could change no finding
    live = {facts.path for facts in all_facts if facts.has_step or any(fid in reached for fid in facts.functions.values())}
    returned: Dict[str, str] = {}
    for facts in all_facts:
        returned.update(facts.returns)
    learned_returns: Dict[str, Dict[str, str]] = {}
    modules = module_classes(all_facts)
    attributes = {name: kind for facts in all_facts for name, kind in facts.attributes.items()}
    owners: Set[str] = set()  # dotted names that own a function of the run (modules and classes), when asked
    factories = _factory_modules(all_facts)
    unread: Dict[str, Set[str]] = {}  # skipped files whose functions' results a step needs: path -> qualnames
    passed: Optional[Dict[str, List[Tuple[str, bool]]]] = None  # functions passed to parameters, when asked
    for facts in all_facts:
        if facts.path not in reported or not facts.unknown_imports:
            continue
        if facts.path not in live:
            continue
        for name in sorted(facts.unknown_imports):
            if name in modules:  # `policy = TinyLM().to(device)`: an `nn.Module` of another file
                learned_returns.setdefault(facts.path, {})[name] = tensors.MODULE
                continue
            if name in attributes:  # `loss_fn.center`: a buffer of a class of another file
                learned_returns.setdefault(facts.path, {})[name] = attributes[name]
                continue
            if name.startswith(PARAMETER_KEY):  # `self.pair_loss(est, ref)`: what the functions passed there return
                passed = _functions_passed(all_facts, index) if passed is None else passed
                targets = [function_id for function_id, _ in passed.get(name[len(PARAMETER_KEY):], ())]
            else:
                targets = lookup(index, name, facts.root)
            in_skipped = _in_skipped_file(name, factories) if not targets and factories else None
            if in_skipped is not None:  # `create_diffusion()` of a package __init__ with no torch word
                unread.setdefault(in_skipped[0], set()).add(in_skipped[1])
            kinds = {returned.get(function_id) for function_id in targets}
            if len(kinds) == 1:
                kind = kinds.pop()
                if kind is not None and (kind in _TELLING_RETURNS or tensors.tuple_elements(kind) is not None
                                         or (tensors.is_metric(kind) and kind != tensors.METRIC)
                                         or kind.startswith(FUNCTION_KIND_PREFIX)
                                         or name in facts.objects_wanted and _project_object(kind, index, owners)):
                    learned_returns.setdefault(facts.path, {})[name] = kind
    learned_calls = _calls_in(all_facts, index, reached, reported)
    for path in [path for path in learned_calls if path not in live]:
        # only instances, passed by set-up code to a file where nothing runs per step: the class
        # they give could change no finding there (as for return kinds, above)
        if not any(_passes_device_tensor(arguments) for _, arguments in learned_calls[path]):
            del learned_calls[path]
    newly_reached = {facts.path: tuple(sorted(qual for qual in facts.deferred if f"{facts.path}::{qual}" in reached))
                     for facts in all_facts if facts.deferred and facts.path in reported}
    newly_reached = {path: quals for path, quals in newly_reached.items() if quals}
    for path, qualnames in unread.items():  # parsed to learn what they return (called with nothing known)
        learned_calls.setdefault(path, []).extend((qualname, ((), ())) for qualname in sorted(qualnames))
    learned_meters, learned_dtypes, asked = _facts_taught(all_facts, reported, index)
    out: Dict[str, ExternalKinds] = {}
    paths = set(learned_returns) | set(learned_calls) | set(newly_reached) | set(learned_meters) | set(learned_dtypes) \
        | set(asked)
    for path in sorted(paths):
        out[path] = ExternalKinds(tuple(sorted(learned_returns.get(path, {}).items())),
                                  tuple(learned_calls.get(path, ())), newly_reached.get(path, ()),
                                  tuple(sorted(learned_meters.get(path, {}).items(), key=lambda item: item[0])),
                                  tuple(sorted(learned_dtypes.get(path, {}).items())),
                                  tuple(sorted(asked.get(path, ()))))
    return out


def _facts_taught(all_facts: Sequence[FileFacts], reported: Collection[str], index: FunctionIndex):
    """What the reported files' fixes asked about other files (``FileFacts.wanted``): (per file,
    the meter classes and the function result dtypes the run knows; per defining file, the local
    qualnames asked of it that it has not told yet, so it is walked again, or parsed, to tell)."""
    if not any(facts.wanted for facts in all_facts if facts.path in reported):
        return {}, {}, {}
    meters: Dict[str, MeterShape] = {}
    dtypes: Dict[str, str] = {}
    for facts in all_facts:
        names = [""] + [f"{prefix}." for prefix in namespace_prefixes(facts.root)]
        meters.update((prefix + name, shape) for name, shape in facts.meters.items() for prefix in names)
        dtypes.update((prefix + name, dtype) for name, dtype in facts.dtypes.items() for prefix in names)
    skipped = _skipped_modules(all_facts, [facts.path for facts in all_facts])
    learned_meters: Dict[str, Dict[str, MeterShape]] = {}
    learned_dtypes: Dict[str, Dict[str, str]] = {}
    asked: Dict[str, Set[str]] = {}
    for facts in all_facts:
        if facts.path not in reported:
            continue
        for name in sorted(facts.wanted):
            if name in meters:
                learned_meters.setdefault(facts.path, {})[name] = meters[name]
            elif name in dtypes:
                learned_dtypes.setdefault(facts.path, {})[name] = dtypes[name]
            else:
                for target in lookup(index, name, facts.root):
                    path, _, qual = target.partition("::")
                    if "." not in qual:  # a module-level function: its file can say what it returns
                        asked.setdefault(path, set()).add(qual)
                in_skipped = _in_skipped_file(name, skipped)
                if in_skipped is not None:
                    asked.setdefault(in_skipped[0], set()).add(in_skipped[1])
    return learned_meters, learned_dtypes, asked


def teachers(all_facts: Sequence[FileFacts], reported: Collection[str]) -> Set[str]:
    """Paths of the other files that call a function of a ``reported`` file: when only some files
    are linted (with their project read for context), those may need to learn a kind themselves
    before they can pass it on (``loss = compute_loss(...)``, then ``log_stats(loss)``); and the
    files of the functions a reported file needs the result of (``acc1, acc5 = accuracy(out, y)``),
    whose result may depend on what the reported file passes them."""
    index = function_index(all_facts)
    skipped = _skipped_modules(all_facts, reported)
    factories = _factory_modules(all_facts)
    out: Set[str] = set()
    for facts in all_facts:
        if facts.path in reported:
            continue
        if factories and any(_in_skipped_file(name, factories) for name in facts.unknown_imports):
            out.add(facts.path)  # it may learn an object from a factory, then call a reported file's methods
            continue
        for name, _, _ in facts.calls_out:
            targets = lookup(index, name, facts.root)
            if any(target.rpartition("::")[0] in reported for target in targets) or \
                    (not targets and _in_skipped_file(name, skipped) is not None):
                out.add(facts.path)
                break
    for facts in all_facts:  # a function a reported file calls for its result may learn what it is passed first
        if facts.path in reported:
            for name in facts.unknown_imports:
                out.update(path for path in (target.rpartition("::")[0] for target in lookup(index, name, facts.root))
                           if path not in reported)
    return out


def _project_object(kind: str, index: FunctionIndex, owners: Set[str]) -> bool:
    """``kind`` is an instance of a class of the run with methods of its own or inherited
    (``torch.optim.AdamW`` from a factory teaches nothing: no method of it is in the run)."""
    cls = class_of_kind(kind)
    if cls is None:
        return False
    if not owners:
        owners.update(name.rpartition(".")[0] for name in index)
    return cls.name in owners or CLASS_KEY + cls.name in index


def module_classes(all_facts: Sequence[FileFacts]) -> Set[str]:
    """Dotted names of the run's classes that are ``nn.Module``s: a base from ``torch.nn`` or
    named like a module base (``knowledge.frequency.MODULE_BASE_SUFFIXES``), or a module class of
    the run as a base (in any file)."""
    bases = {name: parents for facts in all_facts for name, parents in facts.classes.items()}
    found = {name for name, parents in bases.items() if any(
        parent.startswith("torch.nn.") or parent.rsplit(".", 1)[-1].endswith(MODULE_BASE_SUFFIXES) for parent in parents)}
    grew = True
    while grew:
        more = {name for name, parents in bases.items() if name not in found and any(p in found for p in parents)}
        found |= more
        grew = bool(more)
    return found


def holds_object_of(external: ExternalKinds, modules: Collection[str]) -> bool:
    """``external`` teaches an instance of a class defined in one of ``modules`` (dotted names): an
    object passed or returned, or an ``nn.Module`` class of theirs constructed (``BiLSTMCRF(...)``)."""
    if any(kind == tensors.MODULE and name.rpartition(".")[0] in modules for name, kind in external.returns):
        return True
    kinds: List[Optional[str]] = [kind for _, kind in external.returns]
    for _, (positional, keywords) in external.calls_in:
        kinds.extend(positional)
        kinds.extend(kind for _, kind in keywords)
    for kind in kinds:
        cls = class_of_kind(kind)
        if cls is not None and cls.name.rpartition(".")[0] in modules:
            return True
    return False


def merge(old: Optional[ExternalKinds], new: ExternalKinds) -> ExternalKinds:
    """What a file learned in earlier rounds plus what it learns now (a file that has learned a
    kind no longer asks for it, so a plan alone would forget it)."""
    if old is None:
        return new
    returns = dict(old.returns)
    returns.update(new.returns)
    meters = dict(old.meters)
    meters.update(new.meters)
    dtypes = dict(old.dtypes)
    dtypes.update(new.dtypes)
    # the calls of a function the new plan lists replace those of earlier rounds (a caller that learned since
    # passes a finer kind: a mask, not the tensor it first seemed); the others are kept
    renewed = {qualname for qualname, _ in new.calls_in}
    calls_in = {call for call in old.calls_in if call[0] not in renewed} | set(new.calls_in)
    return ExternalKinds(tuple(sorted(returns.items())), tuple(sorted(calls_in, key=repr)),
                         tuple(sorted(set(old.reached) | set(new.reached))),
                         tuple(sorted(meters.items(), key=lambda item: item[0])), tuple(sorted(dtypes.items())),
                         tuple(sorted(set(old.asked) | set(new.asked))))


def _calls_in(all_facts: Sequence[FileFacts], index: FunctionIndex, reached: Collection[str],
              reported: Collection[str]) -> Dict[str, List[Tuple[str, ArgKinds]]]:
    """Per reported file: the calls of its functions, made where a step reaches, to a function
    that reads a parameter of unknown kind (or in a file the pre-filter skipped), when some of
    those calls pass a device tensor."""
    wanting: Set[str] = set()
    sized: Set[str] = set()  # a number passed to them tells a size named like a batch
    for facts in all_facts:
        if facts.path in reported:
            wanting.update(facts.unknown_params)
            sized.update(facts.named_batches)
    skipped = _skipped_modules(all_facts, reported)
    if not wanting and not skipped:
        return {}
    records: Dict[Tuple[str, str], List[ArgKinds]] = {}  # (path, local qualname) -> calls
    passed = None
    for facts in all_facts:
        for name, arguments, caller in facts.calls_out:
            if caller != STEP and caller not in reached:
                objects = _objects_only(arguments)  # set-up code passes instances: a class, not a frequency
                if objects is None:
                    continue
                arguments = objects
            if name.startswith(PARAMETER_KEY):  # `on_step(loss)`: the functions other files pass as `on_step`
                passed = _functions_passed(all_facts, index) if passed is None else passed
                for function_id, method in passed.get(name[len(PARAMETER_KEY):], ()):
                    if function_id in wanting:
                        path, _, qualname = function_id.rpartition("::")
                        records.setdefault((path, qualname), []).append(
                            ((None,) + arguments[0], arguments[1]) if method else arguments)  # `self` is bound
                continue
            targets = lookup(index, name, facts.root)
            if not targets:  # `CriticPhase(G, D, opt, stats)` of a class of another file: its `__init__`, given `self`
                targets = lookup(index, name + ".__init__", facts.root)
                arguments = ((None,) + arguments[0], arguments[1]) if targets else arguments
            for function_id in targets:
                if function_id in wanting:
                    path, _, qualname = function_id.rpartition("::")
                    records.setdefault((path, qualname), []).append(arguments)
            if not targets:
                target = _in_skipped_file(name, skipped)
                if target is not None:
                    records.setdefault(target, []).append(arguments)
    out: Dict[str, List[Tuple[str, ArgKinds]]] = {}
    for (path, qualname), calls in sorted(records.items()):
        if any(_passes_device_tensor(arguments) or _passes_host_data(arguments) or _objects_only(arguments) is not None
               or (f"{path}::{qualname}" in sized and tensors.NUMBER in arguments[0])
               for arguments in calls):
            out.setdefault(path, []).extend((qualname, arguments) for arguments in sorted(set(calls), key=repr))
    return out


def _functions_passed(all_facts: Sequence[FileFacts], index: FunctionIndex) -> Dict[str, List[Tuple[str, bool]]]:
    """``function id|parameter`` -> (function id, is a bound method) of the functions passed there."""
    out: Dict[str, List[Tuple[str, bool]]] = {}
    for call, passed, targets in passed_to_parameters(all_facts, index):
        out.setdefault(f"{call.function}|{call.parameter}", []).extend((target, passed.method) for target in targets)
    return out


def _factory_modules(all_facts: Sequence[FileFacts]) -> Dict[str, str]:
    """``_skipped_modules`` of the files whose text returns a constructor call, linted or read
    for context: a step in any file may call methods on what they build."""
    factories = [facts for facts in all_facts if facts.returns_object]
    return _skipped_modules(factories, {facts.path for facts in factories})


def _skipped_modules(all_facts: Sequence[FileFacts], reported: Collection[str]) -> Dict[str, str]:
    """Dotted module name (and its namespace-package forms) -> path, for the reported files the
    pre-filter did not parse: a helper there learns it gets a tensor only from its callers."""
    out: Dict[str, str] = {}
    for facts in all_facts:
        if facts.skipped and facts.path in reported and facts.module_name:
            out[facts.module_name] = facts.path
            for prefix in namespace_prefixes(facts.root):
                out[f"{prefix}.{facts.module_name}"] = facts.path
    return out


def _in_skipped_file(name: str, skipped: Dict[str, str]) -> Optional[Tuple[str, str]]:
    """(path, local qualname) when ``name`` is a function of a skipped module."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        path = skipped.get(".".join(parts[:cut]))
        if path is not None:
            return path, ".".join(parts[cut:])
    return None


def _passes_device_tensor(arguments: ArgKinds) -> bool:
    positional, keywords = arguments
    return any(kind in tensors.DEVICE_TENSORS or kind in tensors.CONTAINERS or kind == tensors.TENSOR_REST
               for kind in (*positional, *(kind for _, kind in keywords)))


def _passes_host_data(arguments: ArgKinds) -> bool:
    """A step passes tensors or arrays known to be on the host (a loader's batch it never moved):
    the callee's reads of them are no syncs, which only this call can tell it."""
    positional, keywords = arguments
    return any(kind in _HOST_DATA for kind in (*positional, *(kind for _, kind in keywords)))


_HOST_DATA = frozenset({tensors.HOST_BATCH, tensors.HOST_TENSOR, tensors.NUMPY})


def _object_like(kind: Optional[str]) -> bool:
    """An instance of a class of the run, or a torchmetrics object whose construction is known: what set-up code
    hands over says what it is, whenever the callee runs."""
    return class_of_kind(kind) is not None or (tensors.is_metric(kind) and kind != tensors.METRIC)


def _objects_only(arguments: ArgKinds) -> Optional[ArgKinds]:
    """The arguments' instance classes alone (other kinds unknown), or None when there are none."""
    positional, keywords = arguments
    kept = tuple(kind if _object_like(kind) else None for kind in positional)
    kept_keywords = tuple((name, kind) for name, kind in keywords if _object_like(kind))
    if not any(kept) and not kept_keywords:
        return None
    return kept, kept_keywords
