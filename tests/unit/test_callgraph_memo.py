"""The run's function index and call graph are kept between the rounds of a run and updated for the
files whose facts changed (analysis/callgraph.py). Whatever the sequence of calls, each answer must
equal the one built from scratch for the same facts."""
from __future__ import annotations

import dataclasses
import glob
import os

from syncfree_lint.analysis import callgraph
from syncfree_lint.analysis.filefacts import Edge
from syncfree_lint.config import Config
from syncfree_lint.engine import lint_path
from syncfree_lint.rules import DEFAULTS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def project_facts():
    config = Config()
    enabled = config.enabled_codes(DEFAULTS)
    paths = sorted(glob.glob(os.path.join(ROOT, "fixtures", "projects", "*", "**", "*.py"), recursive=True))
    return [lint_path(path, config, enabled, fixes=False)[0] for path in paths]


def fresh(all_facts):
    index = callgraph._IndexMemo().index_for(all_facts)
    graph = callgraph._GraphMemo()
    graph.version = -2  # not the shared memo's: always built from scratch
    built = callgraph.CallGraph()
    for facts in all_facts:
        for source, edge in callgraph._edges_of(facts, index):
            built.edges.setdefault(source, []).append(edge)
    return index, built


def normal(index):
    return {key: sorted(values) for key, values in index.items()}


def edges(graph):
    return {source: sorted(map(repr, targets)) for source, targets in graph.edges.items()}


def test_updates_equal_a_fresh_build():
    facts = project_facts()
    assert len(facts) > 10 and any(f.functions for f in facts)
    steps = [facts]
    with_functions = [i for i, f in enumerate(facts) if f.functions]
    # a file walked again: same functions, one edge less
    changed = list(facts)
    i = with_functions[0]
    changed[i] = dataclasses.replace(facts[i], edges=facts[i].edges[1:])
    steps.append(changed)
    # a file whose functions changed: a new function, and a call to it from another file
    grown = list(changed)
    j = with_functions[1]
    extra = dict(grown[j].functions, **{grown[j].module_name + ".added_helper": "added::helper"})
    grown[j] = dataclasses.replace(grown[j], functions=extra)
    grown[i] = dataclasses.replace(grown[i], edges=grown[i].edges + [
        Edge(source="caller::f", target=grown[j].module_name + ".added_helper", guarded=False, hops=(),
             imported=True, importer_root=grown[i].root)])
    steps.append(grown)
    steps.append(grown[:-1])  # another set of files
    steps.append(facts)
    for all_facts in steps:
        index = callgraph.function_index(all_facts)
        graph = callgraph.build_graph(all_facts, index)
        want_index, want_graph = fresh(all_facts)
        assert normal(index) == normal(want_index)
        assert edges(graph) == edges(want_graph)
        assert graph.reachable() == want_graph.reachable() or \
            {k for k in graph.reachable()[1]} == {k for k in want_graph.reachable()[1]}
