"""From a finished walk to the file's facts: positions, owners, fix edits and call edges.

``summarize`` is the only place that turns libcst nodes into line numbers; what it returns is
plain data (``analysis.filefacts``) that the whole run joins in ``analysis.callgraph``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.call_refs import override_key
from syncfree_lint.analysis.calls import DottedRef, NameRef, SelfRef, callee_name
from syncfree_lint.analysis.factories import returned_nested_function
from syncfree_lint.analysis.instances import FUNCTION_KIND_PREFIX
from syncfree_lint.analysis.filefacts import CallSite, Edge, FileFacts, Finding, Hop, ParameterCall, Pass
from syncfree_lint.analysis.events import EVENT_KEY
from syncfree_lint.analysis.properties import PROPERTY_KEY, property_names
from syncfree_lint.analysis.hooks import does_nothing, hook_key, published_methods
from syncfree_lint.analysis.meter_class import shape_of
from syncfree_lint.analysis.number_kind import return_dtype
from syncfree_lint.analysis.scope_index import FileContext
from syncfree_lint.analysis.positions import PositionFinder
from syncfree_lint.analysis.scope import STEP
from syncfree_lint.analysis.suppression import NoqaFilter
from syncfree_lint.diagnostic import Diagnostic, Edit, Fix
from syncfree_lint.edits import Declined, Guard, Replace, Suggested
from syncfree_lint.knowledge.meters import MeterShape

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.module import ModuleAnalysis


def summarize(walk: "ModuleAnalysis", report_guarded: bool, noqa: NoqaFilter, fixes: bool = True) -> FileFacts:
    """Positions, owners and the call graph of one walked file, ready for the whole run.

    ``fixes=False`` skips building fix edits (they need exact positions, which cost a code
    generation pass): plain reports do not show them."""
    facts = FileFacts(walk.path, walk.module_name, walk.root)

    def function_id(qual: str) -> str:
        return f"{walk.path}::{qual}"

    for qual in walk.functions:
        full = f"{walk.module_name}.{qual}" if walk.module_name else qual
        facts.functions[full] = function_id(qual)
    for table, names in walk.function_tables().items():
        facts.tables[f"{walk.module_name}.{table}" if walk.module_name else table] = tuple(map(function_id, names))
    for event, handlers in walk.named_handlers.items():  # `@bus.on("critic_updated")`: `bus.emit(...)` runs them
        facts.tables[EVENT_KEY + event] = tuple(map(function_id, handlers))
    for qual, frame in walk.classes.items():  # `model.spread` read in another file runs `Net.spread`'s getter
        for getter in property_names(frame.node):
            if f"{qual}.{getter}" in walk.functions:
                dotted_class = f"{walk.module_name}.{qual}" if walk.module_name else qual
                facts.tables[f"{PROPERTY_KEY}{dotted_class}.{getter}"] = (function_id(f"{qual}.{getter}"),)
    for qual, frame in walk.classes.items():
        if frame.bases:
            facts.classes[f"{walk.module_name}.{qual}" if walk.module_name else qual] = tuple(
                (f"{walk.module_name}.{base}" if walk.module_name else base) if base in walk.classes else base
                for base in frame.bases if base)
        for attribute, (in_file, held) in frame.attr_classes.items():
            if attribute.count(".") == 1 and attribute.startswith("self."):
                facts.held[f"{walk.module_name}.{qual}{attribute[4:]}" if walk.module_name else qual + attribute[4:]] = \
                    (f"{walk.module_name}.{held}" if walk.module_name else held) if in_file else held
    _kind_facts(walk, facts, function_id)
    facts.meters = _meters(walk)
    facts.dtypes = _dtypes_asked(walk)
    facts.methods = published_methods(walk, function_id)
    facts.deferred = set(walk.deferred_seeds)
    finder: Optional[PositionFinder] = None
    for site in walk.calls:
        owner = site.placement.owner()
        if owner is None:
            continue
        local = walk.resolve_local(site.ref)
        ref = site.ref
        # `self.on_step_end(out)` of a method the class only declares (`pass`, `raise NotImplementedError`): the
        # subclasses in other files supply it (not `super().m()`, which runs the base's)
        override = override_key(walk.module_name, ref) if isinstance(ref, SelfRef) and not ref.exact and local \
            and ref.class_qualname in walk.classes and does_nothing(walk.functions[local[0]].node) else None
        if not local and isinstance(ref, SelfRef):  # a method of a base class in another file
            ref = walk.inherited(ref) or ref
        hook = hook_key(ref, lambda scope, name: walk.passed_callables.iterates(walk.functions.get(scope), name)) \
            if not local else None
        if hook is not None:  # `cb.on_batch_end(...)`, the class of `cb` unknown: the project's hooks
            ref = DottedRef(hook, bound=True)
        if not local and not isinstance(ref, DottedRef) and override is None:
            continue
        if finder is None:
            finder = PositionFinder(walk.source, walk.module, walk.tree)
        source = STEP if owner == STEP else function_id(owner)
        hops = _hops(walk.path, site, finder, owner == STEP)
        guarded = site.placement.guarded
        for target in local:
            facts.edges.append(Edge(source, function_id(target), False, walk.root, guarded, hops))
        if not local and isinstance(ref, DottedRef):
            facts.edges.append(Edge(source, ref.qualname, True, walk.root, guarded, hops))
        if override is not None:
            facts.edges.append(Edge(source, override, True, walk.root, guarded, hops))
    finder = _passing(walk, facts, function_id, finder)
    for ref, statement, called_with, temporary, how in walk.pass_hooks if walk.uses_accelerator else ():
        # at each forward/backward: of every step, or of the code that registers and removes it
        owner = temporary.owner() if temporary is not None else STEP
        if owner is None:
            continue
        source = STEP if owner == STEP else function_id(owner)
        if finder is None:
            finder = PositionFinder(walk.source, walk.module, walk.tree)
        hops = ((f"{walk.path}:{finder.line_of(statement) if statement is not None else 1}",
                 f"{callee_name(ref)} {how}"),)
        guarded = temporary is not None and temporary.guarded
        local = walk.resolve_local(ref)
        facts.edges.extend(Edge(source, function_id(target), False, walk.root, guarded, hops) for target in local)
        if not local and isinstance(ref, DottedRef):
            facts.edges.append(Edge(source, ref.qualname, True, walk.root, guarded, hops))
            facts.calls_out.append((ref.qualname, (((None,) if ref.bound else ()) + called_with, ()), source))
    for finding in walk.findings:
        placement = finding.placement
        owner = STEP if placement is None else placement.owner()
        if owner is None:
            continue
        guarded = placement is not None and placement.guarded
        if guarded and not report_guarded and owner == STEP:
            continue
        if finder is None:
            finder = PositionFinder(walk.source, walk.module, walk.tree)
        line, col, end_line, end_col = finder.position(finding.statement, finding.node)
        if noqa.suppressed(finder.line_text(line), finding.code):
            continue
        origin = placement.step_origin() if placement is not None and owner == STEP else None
        reach: Tuple[Hop, ...] = (_origin_hop(walk.path, origin, finder, placement.step_why()),) \
            if origin is not None and placement is not None else ()
        if guarded and placement is not None and placement.guard is not None:
            reach += (_guard_hop(walk.path, placement.guard, finder),)
        fix, declined = _fix(finding, finder, walk.newline, facts.wanted) if fixes else (None, None)
        diagnostic = Diagnostic(walk.path, line, col, finding.code, finding.message, fix, end_line, end_col,
                                guarded, reach, declined)
        if owner == STEP:
            facts.definite.append(diagnostic)
        else:
            facts.conditional.setdefault(function_id(owner), []).append(diagnostic)
    return facts


def _kind_facts(walk: "ModuleAnalysis", facts: FileFacts, function_id: Callable[[str], str]) -> None:
    """What the rest of the run may learn from this file's values and teach it (``run_kinds``)."""
    facts.returns = {function_id(qual): kind for qual, kind in walk.returns.items() if kind is not None}
    prefix = f"{walk.module_name}." if walk.module_name else ""
    for qual, function in walk.functions.items():  # a factory of a closure: `normalize = make_normalizer(...)`
        nested = returned_nested_function(function.node) if function_id(qual) not in facts.returns else None
        if nested is not None:
            facts.returns[function_id(qual)] = f"{FUNCTION_KIND_PREFIX}{prefix}{qual}.{nested}"
    facts.attributes = {f"{prefix}{qual}.{key[5:]}": kind for qual, frame in walk.classes.items()
                        for key, kind in frame.attrs.items()
                        if key.startswith("self.") and (kind in tensors.DEVICE_TENSORS or kind == tensors.TENSORS)}
    facts.has_step = walk.has_steps or any(frame.is_step for frame in walk.functions.values())
    for name, arguments, placement in walk.calls_out:
        owner = placement.owner()
        facts.calls_out.append((name, arguments, STEP if owner == STEP else function_id(owner) if owner else ""))
    facts.unknown_imports = set(walk.unknown_imports)
    facts.objects_wanted = set(walk.objects_wanted)
    # a function whose parameters other files' calls taught keeps asking: their callers may learn finer kinds
    facts.unknown_params.update(function_id(qual) for qual, _ in walk.external.calls_in if qual in walk.functions)
    facts.named_batches = {function_id(qual) for qual in walk.named_batches}
    for qual, name in walk.unknown_reads:
        frame = walk.functions.get(qual)
        if frame is not None and isinstance(frame.node, cst.FunctionDef) and name in _parameter_names(frame.node):
            facts.unknown_params.add(function_id(qual))


def _passing(walk: "ModuleAnalysis", facts: FileFacts, function_id: Callable[[str], str],
             finder: Optional[PositionFinder]) -> Optional[PositionFinder]:
    """Where the file's functions call their parameters, and the functions it passes to functions
    of other files (``callgraph.passed_edges`` joins them); returns the position finder, made when
    first needed."""
    passed = walk.passed_callables
    for (qual, name), sites in passed.called.items():
        frame = walk.functions.get(qual)
        node = frame.node if frame is not None else None
        if frame is None or not isinstance(node, cst.FunctionDef):
            continue
        positional = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        method = frame.class_frame is not None and not any(
            isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)
        if method:
            positional = positional[1:]
        position = positional.index(name) if name in positional else -1
        for placement, statement in sites:
            owner = placement.owner()
            if owner is None:
                continue
            if finder is None:
                finder = PositionFinder(walk.source, walk.module, walk.tree)
            hops = _hops(walk.path, CallSite(placement, NameRef(name, qual), statement), finder, owner == STEP)
            facts.parameter_calls.append(ParameterCall(function_id(qual), name, position, method,
                                                       STEP if owner == STEP else function_id(owner),
                                                       placement.guarded, hops))
    for callee, bound, slot, function in passed.passed:
        if not isinstance(slot, (int, str)):
            continue
        if not isinstance(callee, DottedRef) or walk.resolve_local(callee):
            # this file's function handed another file's function (`train_epoch(..., [Meter()])`): its
            # edges are this file's call sites; the pass lets the run teach it the arguments' kinds
            if isinstance(function, DottedRef) and not walk.resolve_local(function) and walk.module_name:
                facts.passes.extend(Pass(f"{walk.module_name}.{qual}", bound, slot, function.qualname, True, walk.root,
                                         function.bound) for qual in walk.resolve_local(callee))
            elif walk.module_name and not isinstance(callee, DottedRef):
                # a function of this file handed to one of this file (`Engine(train_step)`): the run tells the
                # callee what it returns (`self.state.output = self.process_fn(self, batch)`)
                method = isinstance(function, SelfRef) or (isinstance(function, DottedRef) and function.bound)
                facts.passes.extend(Pass(f"{walk.module_name}.{qual}", bound, slot, function_id(own), False, walk.root,
                                         method)
                                    for qual in walk.resolve_local(callee) for own in walk.resolve_local(function))
            continue
        local = walk.resolve_local(function)
        method = isinstance(function, SelfRef) or (isinstance(function, DottedRef) and function.bound)
        facts.passes.extend(Pass(callee.qualname, callee.bound, slot, function_id(qual), False, walk.root, method)
                            for qual in local)
        if not local and isinstance(function, DottedRef):
            facts.passes.append(Pass(callee.qualname, callee.bound, slot, function.qualname, True, walk.root, method))
    return finder


def _meters(walk: "ModuleAnalysis") -> Dict[str, MeterShape]:
    """The file's module-level classes with an ``update`` method that are proven meters."""
    out: Dict[str, MeterShape] = {}
    for statement in walk.module.body:
        if isinstance(statement, cst.ClassDef) and any(
                isinstance(s, cst.FunctionDef) and s.name.value == "update" for s in statement.body.body):
            shape = shape_of(statement)
            if not isinstance(shape, str):
                name = statement.name.value
                out[f"{walk.module_name}.{name}" if walk.module_name else name] = shape
    return out


def _dtypes_asked(walk: "ModuleAnalysis") -> Dict[str, str]:
    """What the module-level functions other files asked about return (``number_kind.return_dtype``)."""
    asked = set(walk.external.asked)
    out: Dict[str, str] = {}
    if not asked:
        return out
    context = FileContext(walk.module)
    for statement in walk.module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value in asked:
            dtype = return_dtype(statement, context, walk.qualname)
            if dtype is not None:
                name = statement.name.value
                out[f"{walk.module_name}.{name}" if walk.module_name else name] = dtype
    return out


def _parameter_names(node: cst.FunctionDef) -> Set[str]:
    params = node.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}


def _origin_hop(path: str, origin: cst.CSTNode, finder: PositionFinder, why: str = "") -> Hop:
    line = finder.line_of(origin)
    because = f" ({why})" if why else ""
    if isinstance(origin, cst.FunctionDef):
        return (f"{path}:{line}", f"step function {origin.name.value}(){because}")
    return (f"{path}:{line}", f"step loop{because}")


def _guard_hop(path: str, guard: cst.CSTNode, finder: PositionFinder) -> Hop:
    """The ``if`` that lowers a guarded finding's frequency (``--report-guarded --show-reach``)."""
    test = guard.test if isinstance(guard, cst.If) else None
    text = " ".join(_EMPTY_MODULE.code_for_node(test).split()) if test is not None else ""
    shown = text if len(text) <= 60 else text[:57] + "..."
    return (f"{path}:{finder.line_of(guard)}", f"guarded by `if {shown}:`")


_EMPTY_MODULE = cst.Module(body=[])


def _hops(path: str, site: CallSite, finder: PositionFinder, from_step: bool) -> Tuple[Hop, ...]:
    """The reach chain's links for one call: the step's origin (when the caller is the step
    itself), then the call."""
    hops = []
    origin = site.placement.step_origin() if from_step else None
    if origin is not None:
        hops.append(_origin_hop(path, origin, finder, site.placement.step_why()))
    statement = site.statement
    line = finder.line_of(statement) if statement is not None else 1
    hops.append((f"{path}:{line}", callee_name(site.ref)))
    return tuple(hops)


def _fix(finding: Finding, finder: PositionFinder, newline: str, wanted: Set[str]) -> Tuple[Optional[Fix], Optional[str]]:
    """The finding's fix, or None and the reason the rule declined it (a class of another file
    whose facts could decide it goes into ``wanted``)."""
    plan: Any = finding.fix
    if plan is None:
        return None, None
    if isinstance(plan, Fix):
        return plan, None
    parts = plan.build()
    if isinstance(parts, Declined):
        wanted.update(parts.wants)
        return None, parts.reason
    if isinstance(parts, Suggested):
        return Fix(parts.title, "display", tuple(e for p in parts.parts for e in _edits_for(p, finder, newline, finding.statement))), \
            parts.reason
    if not parts:
        return None, None
    edits = tuple(edit for part in parts for edit in _edits_for(part, finder, newline, finding.statement))
    return Fix(plan.title, plan.applicability, edits), None


def _edits_for(part: Any, finder: PositionFinder, newline: str, statement: Optional[cst.CSTNode]) -> Tuple[Edit, ...]:
    """Text edits at exact positions (``PositionFinder.exact``); ``statement``: the finding's, which
    may hold a replaced node whose part names no statement."""
    if isinstance(part, Replace):
        line, col, end_line, end_col = finder.exact(part.node, part.statement or statement)
        return (Edit((line, col - 1), (end_line, end_col - 1), part.text),)
    if isinstance(part, Guard):  # the statement's lines, continuation lines too, one level deeper
        line, col, end_line, _ = finder.exact(part.statement)
        text = finder.line_text(line)
        indent = text[: len(text) - len(text.lstrip(" \t"))]
        step = "\t" if "\t" in indent else "    "
        header = f"if {part.test}:{newline}{indent}" if part.test else ""
        return (Edit((line, col - 1), (line, col - 1), header + step),) + tuple(
            Edit((n, 0), (n, 0), step) for n in range(line + 1, end_line + 1) if finder.line_text(n).strip())
    line, _, end_line, end_col = finder.exact(part.statement)
    text = finder.line_text(line)
    indent = text[: len(text) - len(text.lstrip(" \t"))]  # the new line sits in the same block
    return (Edit((end_line, end_col - 1), (end_line, end_col - 1), newline + indent + part.text),)
