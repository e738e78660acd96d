"""Every name of one function (or module) scope: where it is read, bound and nested.

The SFL101 fix's proof asks this index which statements bind a name, whether a read sits in a
nested function, and what each node's parent is; it is built once per scope and cached.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.analysis.nodes import code_children
from syncfree_lint.knowledge.meters import MeterShape

NESTED = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
#: parents that bind a name without an assignment statement
BINDERS = (cst.ImportAlias, cst.AsName, cst.NameItem, cst.Param, cst.FunctionDef, cst.ClassDef, cst.MatchAs,
           cst.MatchStar, cst.MatchMapping, cst.MatchKeywordElement, cst.Global, cst.Nonlocal, cst.ImportFrom)


@dataclass
class FileContext:
    """What a proof may ask beyond one scope: the file's module (its functions and classes), what
    the run says about other files' functions and meter classes, and the dotted names it asked for
    and did not get (a declined fix's ``Declined.wants``: the run then teaches them)."""

    module: Optional[cst.Module] = None
    imported_dtype: Callable[[str], Optional[str]] = lambda qualname: None
    imported_meter: Callable[[str], Optional[MeterShape]] = lambda qualname: None
    is_imported: Callable[[str], bool] = lambda name: False  # an import binds this local name
    wanted: Set[str] = field(default_factory=set)
    functions: Dict[int, "ScopeIndex"] = field(default_factory=dict)  # indexes of the functions followed
    definitions: Dict[str, Optional[cst.CSTNode]] = field(default_factory=dict)

    def index_of(self, function: cst.FunctionDef) -> "ScopeIndex":
        """The scope index of one of the file's functions, built once."""
        index = self.functions.get(id(function))
        if index is None:
            index = self.functions[id(function)] = ScopeIndex(function, self)
        return index

    def definition(self, name: str) -> Optional[cst.CSTNode]:
        """The one module-level ``def`` or ``class`` that binds ``name``, when nothing else in the
        module binds it (no second definition, assignment, import, loop or ``with`` target, no
        ``global`` of it in a function); else None: a call of ``name`` may run something else."""
        if name not in self.definitions:
            self.definitions[name] = self._definition(name)
        return self.definitions[name]

    def _definition(self, name: str) -> Optional[cst.CSTNode]:
        if self.module is None:
            return None
        found = [s for s in self.module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name]
        if len(found) != 1:
            return None
        index = self.index_of(self.module)  # type: ignore[arg-type]
        for node, nested in index.occurrences(name):
            parent = index.parent.get(id(node))
            if nested:
                if isinstance(parent, cst.NameItem):
                    return None  # `global name` in a function
                continue
            if index.stores.get(id(node)) is not None or (isinstance(parent, BINDERS) and parent is not found[0]):
                return None
        return found[0]


class ScopeIndex:
    """Every Name of one scope by value (with whether it sits in a nested scope), each node's
    parent, and the assignment statement that binds each stored Name."""

    def __init__(self, scope: cst.CSTNode, context: Optional[FileContext] = None) -> None:
        self.context = context or FileContext()
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

