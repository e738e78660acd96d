"""Every name of one function (or module) scope: where it is read, bound and nested.

The SFL101 fix's proof asks this index which statements bind a name, whether a read sits in a
nested function, and what each node's parent is; it is built once per scope and cached.
"""
from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.analysis.nodes import code_children

NESTED = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
#: parents that bind a name without an assignment statement
BINDERS = (cst.ImportAlias, cst.AsName, cst.NameItem, cst.Param, cst.FunctionDef, cst.ClassDef, cst.MatchAs,
           cst.MatchStar, cst.MatchMapping, cst.MatchKeywordElement, cst.Global, cst.Nonlocal, cst.ImportFrom)


class ScopeIndex:
    """Every Name of one scope by value (with whether it sits in a nested scope), each node's
    parent, and the assignment statement that binds each stored Name."""

    def __init__(self, scope: cst.CSTNode, module: Optional[cst.Module] = None) -> None:
        self.module = module  # the file, where a proof follows a call into one of its functions
        self.names: Dict[str, List[Tuple[cst.Name, bool]]] = {}
        self.parent: Dict[int, cst.CSTNode] = {}
        self.stores: Dict[int, cst.CSTNode] = {}
        self.params: Set[str] = set()
        if isinstance(scope, cst.FunctionDef):
            self.params = {p.name.value for p in _params(scope.params)}
            roots: List[cst.CSTNode] = [scope.body]
        else:
            roots = list(getattr(scope, "body", ()))
        stack: List[Tuple[cst.CSTNode, bool]] = [(root, False) for root in roots]
        while stack:
            node, nested = stack.pop()
            if isinstance(node, cst.Name):
                self.names.setdefault(node.value, []).append((node, nested))
            if not nested:
                self._note_stores(node)
            inner = nested or isinstance(node, NESTED)
            for child in code_children(node):
                self.parent[id(child)] = node
                stack.append((child, inner))

    def _note_stores(self, node: cst.CSTNode) -> None:
        targets: List[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del)):
            targets = [node.target]
        for target in targets:
            for name in _bound_names(target):
                self.stores[id(name)] = node

    def occurrences(self, name: str) -> List[Tuple[cst.Name, bool]]:
        """Names with this value that are variables (not ``x.name``, not ``f(name=...)``)."""
        out = []
        for node, nested in self.names.get(name, ()):
            parent = self.parent.get(id(node))
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            out.append((node, nested))
        return out

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        current: Optional[cst.CSTNode] = node
        while current is not None and not isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            current = self.parent.get(id(current))
        return current

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent.get(id(node))
        while current is not None:
            yield current
            current = self.parent.get(id(current))


def _params(params: cst.Parameters) -> List[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    out += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return out


def _bound_names(target: cst.CSTNode) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _bound_names(target.value)
