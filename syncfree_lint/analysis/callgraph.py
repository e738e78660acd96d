"""The whole run's call graph: which functions run once per step, and why (the reach chain).

Each file contributes its functions (by dotted name) and its call edges; ``resolve`` joins them,
walks from the steps, and settles each file's conditional findings: reported when their function
is reached on an unguarded path, marked guarded when only guarded paths reach it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Dict, List, Sequence, Tuple

from syncfree_lint.analysis.filefacts import FileFacts, Hop
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


#: dotted name -> (import root of the defining file, function id), for every function of the run
FunctionIndex = Dict[str, List[Tuple[str, str]]]


def function_index(all_facts: Sequence[FileFacts]) -> FunctionIndex:
    """Every function of the run by the dotted names it may be imported under."""
    index: FunctionIndex = {}
    for facts in all_facts:
        prefixes = namespace_prefixes(facts.root)
        for dotted_name, function_id in facts.functions.items():
            index.setdefault(dotted_name, []).append((facts.root, function_id))
            for prefix in prefixes:  # ``from util.misc import f`` where util/ has no __init__.py
                index.setdefault(f"{prefix}.{dotted_name}", []).append((facts.root, function_id))
    return index


def build_graph(all_facts: Sequence[FileFacts], index: FunctionIndex) -> CallGraph:
    """The run's call graph, imported calls resolved against ``index``."""
    graph = CallGraph()
    for facts in all_facts:
        for edge in facts.edges:
            if not edge.imported:
                graph.add(edge.source, edge.target, edge.guarded, edge.hops)
            else:
                for target in lookup(index, edge.target, edge.importer_root):
                    graph.add(edge.source, target, edge.guarded, edge.hops)
    return graph


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


def lookup(index: FunctionIndex, name: str, importer_root: str) -> List[str]:
    """Function ids for an imported dotted name; same import root first."""
    candidates = index.get(name)
    if not candidates:
        return []
    same = [fid for root, fid in candidates if root == importer_root]
    return same or [fid for _, fid in candidates]
