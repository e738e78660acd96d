"""Fast traversal of libcst nodes: the children that can hold code.

libcst's ``node.children`` runs a visitor over every field, whitespace included; the walk and
the small scans over a loop body (``scope.moves_items``, ``contains_step_marker``) only need the
fields that hold expressions and statements, found once per node class.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, FrozenSet, Iterator, List, Optional, Tuple

import libcst as cst

#: fields that never hold code worth visiting (whitespace, punctuation, names that are not reads)
SKIP_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "colon", "equal", "star", "dot", "leading_lines",
    "lines_after_decorators", "header", "footer", "newline", "trailing_whitespace",
    "operator", "lbracket", "rbracket", "lbrace", "rbrace", "asynchronous", "arrow",
    "whitespace_after_at", "default_comma", "relative", "quote", "prefix", "start", "end",
    "attr", "keyword",
})
_FIELDS: Dict[type, Tuple[str, ...]] = {}
_NODE_TYPES: Dict[type, bool] = {}


def is_node(cls: type) -> bool:
    """``issubclass(cls, CSTNode)``, cached: abc checks are slow on this hot path."""
    known = _NODE_TYPES.get(cls)
    if known is None:
        known = _NODE_TYPES[cls] = issubclass(cls, cst.CSTNode)
    return known


def code_fields(cls: type) -> Tuple[str, ...]:
    """The fields of a node class that may hold code, in source order."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(
            f.name for f in dataclasses.fields(cls)
            if f.name not in SKIP_FIELDS and not f.name.startswith("whitespace")
        )
    return names


def code_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The child nodes of ``node`` that may hold code (``Attribute.attr`` and keywords aside)."""
    for name in code_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for child in value:
                if is_node(type(child)):
                    yield child
        elif is_node(kind):
            yield value


def walk_code(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it that may hold code, depth first in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(code_children(current))))


def sequence_elements(expr: cst.BaseExpression) -> Optional[List[cst.BaseExpression]]:
    """The element expressions of a list/tuple literal (none starred) or the element of a list
    comprehension or generator; None for anything else."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        if any(isinstance(element, cst.StarredElement) for element in expr.elements):
            return None
        return [element.value for element in expr.elements]
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return [expr.elt]
    return None


def mentions_name(node: cst.CSTNode, name: str) -> bool:
    """Whether the code of ``node`` reads or binds the variable ``name`` (``x.name`` aside)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name and current.value == name:
            return True
        stack.extend(code_children(current))
    return False


def subscript_key(node: cst.Subscript) -> Optional[str]:
    """``d["lr"]`` -> ``"lr"``: the constant string key of a one-element subscript."""
    index = node.slice[0].slice if len(node.slice) == 1 else None
    key = index.value if isinstance(index, cst.Index) else None
    text = key.evaluated_value if isinstance(key, cst.SimpleString) else None
    return text if isinstance(text, str) else None


def constant_items(value: cst.BaseExpression) -> List[Tuple[str, cst.BaseExpression]]:
    """The constant string keys and their values in a dict display or a ``dict(k=v, ...)`` call."""
    if isinstance(value, cst.Dict):
        return [(element.key.evaluated_value, element.value) for element in value.elements
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
                and isinstance(element.key.evaluated_value, str)]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict":
        return [(arg.keyword.value, arg.value) for arg in value.args if arg.keyword is not None]
    return []


def local_names(function: cst.CSTNode) -> FrozenSet[str]:
    """The names a function binds for itself: its parameters and the plain names it assigns (``=``, ``+=``, ``:``,
    ``for``/``with`` targets), not in nested functions or classes, less those it declares ``global``/``nonlocal``."""
    if not isinstance(function, cst.FunctionDef):
        return frozenset()
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names.update(p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param))
    declared: set = set()
    stack: List[cst.CSTNode] = list(code_children(function.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            declared.update(n.name.value for n in node.names)
        targets: List[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, cst.For):
            targets = [node.target]
        elif isinstance(node, cst.AsName):
            targets = [node.name]
        for target in targets:
            elements = [target]
            while elements:
                element = elements.pop()
                if isinstance(element, cst.Name):
                    names.add(element.value)
                elif isinstance(element, (cst.Tuple, cst.List)):
                    elements.extend(e.value for e in element.elements)
                elif isinstance(element, cst.StarredElement):
                    elements.append(element.value)
        stack.extend(code_children(node))
    return frozenset(names - declared)


def listed_name(iterable: cst.BaseExpression) -> Optional[str]:
    """The name of the list a loop goes over, also reversed or cut (``reversed(history[:n])``: ``history``)."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "reversed" \
            and len(iterable.args) == 1:
        iterable = iterable.args[0].value
    if isinstance(iterable, cst.Subscript) and isinstance(iterable.slice[0].slice, cst.Slice):
        iterable = iterable.value
    return iterable.value if isinstance(iterable, cst.Name) else None
