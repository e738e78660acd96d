"""The whole run's call graph: which functions run once per step, and why (the reach chain).

Each file contributes its functions (by dotted name) and its call edges; ``resolve`` joins them,
walks from the steps, and settles each file's conditional findings: reported when their function
is reached on an unguarded path, marked guarded when only guarded paths reach it.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace
from typing import Dict, Iterator, List, Sequence, Tuple

from syncfree_lint.analysis.filefacts import FileFacts, Hop, ParameterCall, Pass
from syncfree_lint.analysis.call_refs import METHOD_KEY, MODULE_METHOD_KEY, OVERRIDE_KEY
from syncfree_lint.analysis.properties import PROPERTY_KEY
from syncfree_lint.analysis.hooks import DECLARED_KEY, EACH_HOOK_KEY, HOOK_KEY, is_hook_name
from syncfree_lint.analysis.scope import STEP
from syncfree_lint.diagnostic import Diagnostic


@dataclass
class CallGraph:
    """Edges between owners: ``STEP`` or a function id -> function ids, with a guard flag and
    the hops that explain them (the step's origin and the call's place)."""

    edges: Dict[str, List[Tuple[str, bool, Tuple[Hop, ...]]]] = field(default_factory=dict)

    def add(self, source: str, target: str, guarded: bool, hops: Tuple[Hop, ...] = ()) -> None:
        self.edges.setdefault(source, []).append((target, guarded, hops))

    def reachable(self) -> Tuple[Dict[str, Tuple[Hop, ...]], Dict[str, Tuple[Hop, ...]]]:
        """(reached on an unguarded path, reached at all) from STEP, each with its chain."""
        return self._walk(follow_guarded=False), self._walk(follow_guarded=True)

    def _walk(self, follow_guarded: bool) -> Dict[str, Tuple[Hop, ...]]:
        chains: Dict[str, Tuple[Hop, ...]] = {}
        frontier = [STEP]
        chains_of = {STEP: ()}  # type: Dict[str, Tuple[Hop, ...]]
        while frontier:  # breadth first: the shortest chain explains a helper
            following = []
            for node in frontier:
                for target, guarded, hops in self.edges.get(node, ()):
                    if guarded and not follow_guarded:
                        continue
                    if target not in chains:
                        chains[target] = chains_of[node] + hops
                        chains_of[target] = chains[target]
                        following.append(target)
            frontier = following
        return chains


#: dotted name -> (import root of the defining file, function id), for every function of the run;
#: and ``CLASS_KEY + dotted class name`` -> (import root, dotted name of a base), for every class with bases
FunctionIndex = Dict[str, List[Tuple[str, str]]]
#: the prefix of a class's entry in the index (a space: never part of a dotted name)
CLASS_KEY = "class "
#: index entries for an attribute a class keeps an object of a known class in (``FileFacts.held``)
HELD_KEY = "held "
#: how many bases deep ``lookup`` follows an inherited method
_MAX_INHERITANCE = 8


def function_index(all_facts: Sequence[FileFacts]) -> FunctionIndex:
    """Every function of the run by the dotted names it may be imported under.

    A run asks for it once per round of kind learning and once to resolve; between those only the
    files walked again change, so the last index is kept and updated for them (``_IndexMemo``)."""
    with _MEMO_LOCK:
        return _MEMO.index_for(all_facts)


def _entries(facts: FileFacts) -> List[Tuple[str, Tuple[str, str]]]:
    """(dotted name, (root, function id)) for each name a function of ``facts`` may be imported under."""
    prefixes = namespace_prefixes(facts.root)
    out = []
    for dotted_name, function_id in facts.functions.items():
        value = (facts.root, function_id)
        out.append((dotted_name, value))
        out.extend((f"{prefix}.{dotted_name}", value) for prefix in prefixes)  # util/ without __init__.py
    for dotted_name, function_ids in facts.tables.items():  # `SELECTORS[name](x)` may run any of them
        for function_id in function_ids:
            out.append((dotted_name, (facts.root, function_id)))
            out.extend((f"{prefix}.{dotted_name}", (facts.root, function_id)) for prefix in prefixes)
    for method, function_id, declared, of_module in facts.methods:
        out.append(((HOOK_KEY if is_hook_name(method) else METHOD_KEY) + method, (facts.root, function_id)))
        if of_module:
            out.append((MODULE_METHOD_KEY + method, (facts.root, function_id)))
        if declared:
            out.append((DECLARED_KEY + method, (facts.root, function_id)))
    for attribute, held in facts.held.items():
        out.append((HELD_KEY + attribute, (facts.root, held)))
        out.extend((f"{HELD_KEY}{prefix}.{attribute}", (facts.root, held)) for prefix in prefixes)
    methods_of: Dict[str, List[Tuple[str, str]]] = {}
    for dotted_name, function_id in facts.functions.items():
        owner, _, method = dotted_name.rpartition(".")
        if owner in facts.classes:
            methods_of.setdefault(owner, []).append((method, function_id))
    for class_name, bases in facts.classes.items():
        for base in bases:  # an override answers `self.<method>()` of its base class, in another file too
            out.extend((f"{OVERRIDE_KEY}{base}.{method}", (facts.root, function_id))
                       for method, function_id in methods_of.get(class_name, ()))
            value = (facts.root, base)
            out.append((CLASS_KEY + class_name, value))
            out.extend((f"{CLASS_KEY}{prefix}.{class_name}", value) for prefix in prefixes)
    return out


class _IndexMemo:
    """The last index built, with the facts (by path) it was built from; a later call with mostly the
    same facts objects removes the entries of the files that changed and adds their new ones. It
    holds the facts it was built from, so an ``is`` test cannot be fooled by a reused id."""

    def __init__(self) -> None:
        self.index: FunctionIndex = {}
        self.version = 0  # changes whenever the index's content may have changed
        self.built_from: Dict[str, Tuple[FileFacts, List[Tuple[str, Tuple[str, str]]]]] = {}

    def index_for(self, all_facts: Sequence[FileFacts]) -> FunctionIndex:
        paths = [facts.path for facts in all_facts]
        if len(set(paths)) != len(paths) or set(paths) != set(self.built_from):
            self.index, self.built_from = {}, {}
            self.version += 1
            for facts in all_facts:
                self._add(facts)
            return self.index
        for facts in all_facts:
            old, entries = self.built_from[facts.path]
            if old is facts:
                continue
            if _entries(facts) != entries:
                self.version += 1
            for key, value in entries:
                bucket = self.index[key]
                bucket.remove(value)
                if not bucket:
                    del self.index[key]
            self._add(facts)
        return self.index

    def _add(self, facts: FileFacts) -> None:
        entries = _entries(facts)
        for key, value in entries:
            self.index.setdefault(key, []).append(value)
        self.built_from[facts.path] = (facts, entries)


_MEMO = _IndexMemo()
_MEMO_LOCK = threading.RLock()


def build_graph(all_facts: Sequence[FileFacts], index: FunctionIndex) -> CallGraph:
    """The run's call graph, imported calls resolved against ``index``; like the index, kept between
    the rounds of a run and updated for the files that changed (``_GraphMemo``)."""
    with _MEMO_LOCK:
        graph = _GRAPH_MEMO.graph_for(all_facts, index)
    extra = passed_edges(all_facts, index)
    if not extra:
        return graph
    edges = dict(graph.edges)  # the memo's graph stays as it is: these depend on every file
    for source, edge in extra:
        edges[source] = edges.get(source, []) + [edge]
    return CallGraph(edges)


def passed_edges(all_facts: Sequence[FileFacts], index: FunctionIndex) -> List[Tuple[str, Tuple[str, bool, Tuple[Hop, ...]]]]:
    """Edges to the functions one file passes to another file's function, from where that function
    calls the parameter (``client.local_train(data, on_step=hook)`` with ``on_step(loss)`` in the
    client's step loop runs ``hook`` per step)."""
    return [(call.source, (target, call.guarded, call.hops))
            for call, _, targets in passed_to_parameters(all_facts, index) for target in targets]


def passed_to_parameters(all_facts: Sequence[FileFacts], index: FunctionIndex) -> Iterator[Tuple[ParameterCall, Pass, List[str]]]:
    """Each place a function calls a parameter that another file's call fills with a function: (the
    parameter's call, the pass, the function ids passed)."""
    calls: Dict[str, List[ParameterCall]] = {}
    for facts in all_facts:
        for call in facts.parameter_calls:
            calls.setdefault(call.function, []).append(call)
    if not calls:
        return
    for facts in all_facts:
        for passed in facts.passes:
            callees = [callee for callee in lookup(index, passed.callee, passed.importer_root) if callee in calls]
            if not callees and not passed.bound:  # `Trainer(..., callbacks=[...])`: a class's `__init__`, self not passed
                callees = [callee for callee in lookup(index, passed.callee + ".__init__", passed.importer_root)
                           if callee in calls]
                passed = replace(passed, bound=True) if callees else passed
            if not callees:
                continue
            targets = lookup(index, passed.function, passed.importer_root) if passed.imported else [passed.function]
            for callee in callees:
                for call in calls[callee]:
                    if targets and _fills(call, passed):
                        yield call, passed, targets


def _fills(call: ParameterCall, passed: Pass) -> bool:
    """Whether the argument ``passed`` gives is the parameter ``call`` calls."""
    if isinstance(passed.slot, str):
        return passed.slot == call.parameter
    if call.position < 0:
        return False
    return passed.slot == call.position + (1 if call.method and not passed.bound else 0)


def _edges_of(facts: FileFacts, index: FunctionIndex) -> List[Tuple[str, Tuple[str, bool, Tuple[Hop, ...]]]]:
    out = []
    for edge in facts.edges:
        if not edge.imported:
            out.append((edge.source, (edge.target, edge.guarded, edge.hops)))
        else:
            out.extend((edge.source, (target, edge.guarded, edge.hops))
                       for target in lookup(index, edge.target, edge.importer_root))
    return out


class _GraphMemo:
    """The last graph, the index version it resolved imports against, and each file's edges. While
    the index keeps its content (no file's functions changed), a later call replaces the edges of
    the files whose facts changed; else it builds the graph again."""

    def __init__(self) -> None:
        self.graph = CallGraph()
        self.version = -1
        self.built_from: Dict[str, Tuple[FileFacts, List[Tuple[str, Tuple[str, bool, Tuple[Hop, ...]]]]]] = {}

    def graph_for(self, all_facts: Sequence[FileFacts], index: FunctionIndex) -> CallGraph:
        paths = {facts.path for facts in all_facts}
        if index is not _MEMO.index or _MEMO.version != self.version or paths != set(self.built_from) \
                or len(paths) != len(all_facts):
            self.graph, self.built_from, self.version = CallGraph(), {}, _MEMO.version
            for facts in all_facts:
                self._add(facts, index)
            if index is not _MEMO.index:
                self.version = -1  # built against another index: never reused
            return self.graph
        for facts in all_facts:
            old, edges = self.built_from[facts.path]
            if old is facts:
                continue
            for source, edge in edges:
                bucket = self.graph.edges[source]
                bucket.remove(edge)
                if not bucket:
                    del self.graph.edges[source]
            self._add(facts, index)
        return self.graph

    def _add(self, facts: FileFacts, index: FunctionIndex) -> None:
        edges = _edges_of(facts, index)
        for source, edge in edges:
            self.graph.edges.setdefault(source, []).append(edge)
        self.built_from[facts.path] = (facts, edges)


_GRAPH_MEMO = _GraphMemo()


def resolve(all_facts: Sequence[FileFacts]) -> List[Diagnostic]:
    """Join the run: emit helper findings reached from a step in any file."""
    unguarded, reached = build_graph(all_facts, function_index(all_facts)).reachable()
    out: List[Diagnostic] = []
    for facts in all_facts:
        out.extend(facts.errors)
        out.extend(facts.definite)
        for function_id, diagnostics in facts.conditional.items():
            if function_id in unguarded:
                out.extend(replace(d, reach=unguarded[function_id]) for d in diagnostics)
            elif function_id in reached:
                out.extend(replace(d, guarded=True, reach=reached[function_id]) for d in diagnostics)
    return out


def namespace_prefixes(root: str, depth: int = 2) -> List[str]:
    """Dotted names a module may also be imported under when its folder is a namespace package
    (no ``__init__.py``): ``/repo/util`` gives ``util`` and ``repo.util``."""
    parts = [part for part in os.path.abspath(root).split(os.sep) if part]
    return [".".join(parts[-k:]) for k in range(1, min(depth, len(parts)) + 1)]


#: a call of an instance; a class that does not define ``__call__`` (nor a base in the project) but ``forward`` is a module
_CALL = ".__call__"


def lookup(index: FunctionIndex, name: str, importer_root: str, depth: int = 0) -> List[str]:
    """Function ids for an imported dotted name; those of the importer's root, else of the roots
    nearest to it. A method the named class
    does not define is looked up in its bases, in order (``train.Trainer.log_value`` defined by
    ``base.BaseTrainer`` in another file)."""
    if name.startswith(EACH_HOOK_KEY):  # a hook called on each object of a list handed in (``analysis.hooks``)
        return [fid for root, fid in index.get(HOOK_KEY + name[len(EACH_HOOK_KEY):], ()) if root == importer_root]
    if name.startswith(HOOK_KEY):  # a callback hook on an object of unknown class (``analysis.hooks``)
        declared = {root for root, _ in index.get(DECLARED_KEY + name[len(HOOK_KEY):], ())}
        return [fid for root, fid in index.get(name, ()) if root == importer_root and root in declared]
    if name.startswith(OVERRIDE_KEY):  # overrides of a method in subclasses (``call_refs.override_key``)
        return [fid for root, fid in index.get(name, ()) if root == importer_root]
    if name.startswith(METHOD_KEY):  # a method by its name on an object of unknown class (``calls.by_method_name``)
        return _only_method(index, name[len(METHOD_KEY):], importer_root)
    if name.startswith(MODULE_METHOD_KEY):  # the same on a module: a method of the project's module classes
        return _only_method(index, name[len(MODULE_METHOD_KEY):], importer_root, MODULE_METHOD_KEY)
    candidates = index.get(name)
    if not candidates and depth == 0 and name.endswith(_CALL):  # an `nn.Module` called runs its `forward`
        return lookup(index, name[: -len(_CALL)] + ".__call__", importer_root, 1) \
            or lookup(index, name[: -len(_CALL)] + ".forward", importer_root)
    if not candidates and name.startswith(PROPERTY_KEY) and depth < _MAX_INHERITANCE:
        # `model.cluster.n_active`: the getter of the class the attribute holds (``objects._property_read``)
        holder, _, getter = name[len(PROPERTY_KEY):].rpartition(".")
        for _, held in _same_root_first(index.get(HELD_KEY + holder, ()), importer_root):
            found = lookup(index, f"{PROPERTY_KEY}{held}.{getter}", importer_root, depth + 1)
            if found:
                return found
    if not candidates:
        owner, dot, method = name.rpartition(".")
        if not dot or depth >= _MAX_INHERITANCE:
            return []
        for _, held in _same_root_first(index.get(HELD_KEY + name, ()), importer_root):  # `obj.users(x)`: what it holds
            found = lookup(index, held + _CALL, importer_root, depth + 1) \
                or lookup(index, held + ".forward", importer_root, depth + 1)
            if found:
                return found
        if is_hook_name(method) and index.get(f"{owner}.__getattr__"):
            # a dispatcher that forwards any hook to its callbacks (`CallbackList.__getattr__`): the project's hooks
            return lookup(index, HOOK_KEY + method, importer_root, depth + 1)
        bases = index.get(CLASS_KEY + owner)
        if not bases:
            return []
        same_root = [base for root, base in bases if root == importer_root] or [base for _, base in bases]
        for base in same_root:
            found = lookup(index, f"{base}.{method}", importer_root, depth + 1)
            if found:
                return found
        return []
    same = [fid for root, fid in candidates if root == importer_root]
    if same:
        return same
    # none in the importer's own root: the nearest ones (`common/` without an `__init__.py` beside the
    # script, before a copy of it in another project of the same repository)
    nearest = max(_shared_depth(root, importer_root) for root, _ in candidates)
    return [fid for root, fid in candidates if _shared_depth(root, importer_root) == nearest]


def _same_root_first(entries: Sequence[Tuple[str, str]], importer_root: str) -> List[Tuple[str, str]]:
    """``entries`` of the importer's own root, else all of them."""
    return [entry for entry in entries if entry[0] == importer_root] or list(entries)


def _shared_depth(root: str, other: str) -> int:
    """How many leading folders two roots share."""
    depth = 0
    for a, b in zip(root.split(os.sep), other.split(os.sep)):
        if a != b:
            break
        depth += 1
    return depth


def _same_project(root: str, importer_root: str) -> bool:
    """The importer's root, or a folder inside it or around it (a namespace folder of the project)."""
    return root == importer_root or root.startswith(importer_root + os.sep) or importer_root.startswith(root + os.sep)


def _only_method(index: FunctionIndex, method: str, importer_root: str, key: str = METHOD_KEY) -> List[str]:
    """The methods named ``method`` of the importer's project when exactly one of them has a body
    (with the do-nothing declarations it overrides); none when several classes define it. Kept per
    index content (``_IndexMemo.version``): a run asks the same names many times. ``key``: ``MODULE_METHOD_KEY``
    for the methods of module classes only."""
    memo_key = (_MEMO.version, id(index), len(index), key + method, importer_root)
    if memo_key in _ONLY_METHOD:
        return list(_ONLY_METHOD[memo_key])
    if len(_ONLY_METHOD) > 200_000 or (_ONLY_METHOD and next(iter(_ONLY_METHOD))[:3] != memo_key[:3]):
        _ONLY_METHOD.clear()
    found = [fid for root, fid in index.get(key + method, ()) if _same_project(root, importer_root)]
    declared = {fid for root, fid in index.get(DECLARED_KEY + method, ()) if _same_project(root, importer_root)}
    out = _ONLY_METHOD[memo_key] = found if len([fid for fid in found if fid not in declared]) == 1 else []
    return list(out)


_ONLY_METHOD: Dict[Tuple[int, int, int, str, str], List[str]] = {}
