"""Dispatch tables: a module-level ``NAME = {key: function, ...}`` (or a list or tuple of functions) naming functions
defined at the top of the file, and ``NAME = Cls.apply`` of a custom autograd function (its ``forward`` and
``backward``). The run indexes the table's dotted name under each function it names, so a call through
``NAME[key]`` or ``NAME(...)``, here or in a file that imports it, may run any of them. A registry filled by a
decorator of the same file (``METRICS = {}``, ``def metric(name): def deco(fn): METRICS[name] = fn; ...``) holds
every function of the file decorated with it (``@metric("fscore")``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

import libcst as cst

from syncfree_lint.analysis.autograd_functions import applied_class, apply_methods, is_autograd_class
from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.nodes import walk_code

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.scope import ClassFrame


def module_tables(module: cst.Module, classes: Dict[str, "ClassFrame"]) -> Dict[str, List[str]]:
    """Table name -> the local qualnames of the functions it may run."""
    defined = {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}
    tables: Dict[str, List[str]] = {}
    for statement in module.body:
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for small in smalls:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
                continue
            local = [name for name in _table_members(small.value) if name in defined]
            applied = applied_class(small.value)
            cls = dotted(applied) if applied is not None else None
            if cls is not None and cls in classes and is_autograd_class(cls, classes):
                local = apply_methods(classes, cls)
            if local:
                tables[small.targets[0].target.value] = local
    for table, functions in _registered(module).items():
        tables.setdefault(table, []).extend(f for f in functions if f not in tables.get(table, []))
    return tables


def _registered(module: cst.Module) -> Dict[str, List[str]]:
    """Registry name -> the functions of the file a registering decorator of the file stores there."""
    dicts = {small.targets[0].target.value for statement in module.body if isinstance(statement, cst.SimpleStatementLine)
             for small in statement.body if isinstance(small, cst.Assign) and len(small.targets) == 1
             and isinstance(small.targets[0].target, cst.Name) and isinstance(small.value, cst.Dict)}
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    if not dicts or not functions:
        return {}
    decorators = {f.name.value: table for f in functions for table in [_stored_in(f, dicts)] if table is not None}
    out: Dict[str, List[str]] = {}
    for function in functions:
        for decorator in function.decorators:
            expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
            if isinstance(expr, cst.Name) and expr.value in decorators:
                out.setdefault(decorators[expr.value], []).append(function.name.value)
    return out


def _stored_in(function: cst.FunctionDef, dicts: "set[str]") -> Optional[str]:
    """The module-level dict ``function`` (or a function nested in it) stores one of its parameters in:
    ``REGISTRY[name] = fn``; None when it stores none."""
    params = {p.name.value for node in [function, *walk_code(function.body)] if isinstance(node, cst.FunctionDef)
              for p in (*node.params.posonly_params, *node.params.params)}
    for node in walk_code(function.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in params:
            for target in node.targets:
                owner = target.target.value if isinstance(target.target, cst.Subscript) else None
                if isinstance(owner, cst.Name) and owner.value in dicts:
                    return owner.value
    return None


def table_read(expr: cst.BaseExpression) -> Optional[cst.Name]:
    """The table of ``TABLE[key]`` or ``TABLE.get(key)``."""
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name):
        return expr.value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" \
            and isinstance(expr.func.value, cst.Name):
        return expr.func.value
    return None


def iterated_table(target: cst.BaseExpression, iterable: cst.BaseExpression,
                   ) -> Tuple[Optional[cst.Name], Optional[cst.Name]]:
    """(the table, the loop name bound to its functions) of ``for name, fn in TABLE.items()`` or ``for fn in
    TABLE.values()``; (None, None) for other loops."""
    method, owner = None, iterable
    if isinstance(iterable, cst.Call) and not iterable.args and isinstance(iterable.func, cst.Attribute):
        method, owner = iterable.func.attr.value, iterable.func.value
    if not isinstance(owner, cst.Name):
        return None, None
    if method == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2 \
            and isinstance(target.elements[1].value, cst.Name):
        return owner, target.elements[1].value
    if method == "values" and isinstance(target, cst.Name):  # not the table itself: a dict gives its keys
        return owner, target
    return None, None


def _table_members(value: cst.BaseExpression) -> List[str]:
    """The bare names a dict, list or tuple display holds as values; [] when any value is not a
    name or a dotted name (a table of functions holds only those)."""
    if isinstance(value, cst.Dict):
        values = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
        if len(values) != len(value.elements):
            return []
    elif isinstance(value, (cst.List, cst.Tuple)):
        values = [e.value for e in value.elements if isinstance(e, cst.Element)]
        if len(values) != len(value.elements):
            return []
    else:
        return []
    values = [_partial_of(v) or v for v in values]  # `partial(frame_accuracy, ignore_index=-100)` runs it
    if not all(isinstance(v, (cst.Name, cst.Attribute)) for v in values):
        return []
    return [v.value for v in values if isinstance(v, cst.Name)]


def _partial_of(value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """``f`` of ``partial(f, ...)`` or ``functools.partial(f, ...)``."""
    if isinstance(value, cst.Call) and dotted(value.func) in ("partial", "functools.partial") and value.args \
            and value.args[0].keyword is None and not value.args[0].star:
        return value.args[0].value
    return None
