"""Decorators that wrap a function: ``@timed`` with ``def timed(fn): def wrapper(*a): ...; return wrapper`` makes a
call of the decorated function run ``wrapper``; so does a decorator factory (``@guard(5.0)``: ``guard`` returns
``decorate``, which returns ``wrapper``). The decorated function is taken to call the wrapper where it starts, so a
step that calls it reaches the wrapper's body. The decorator is a function of this file, or another file's whose
returned function the run has learned (asked for through ``unknown_imports``). A memoising decorator
(``@functools.lru_cache``) makes the body run once per distinct arguments (``memoised``)."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Protocol, Set

import libcst as cst

from syncfree_lint.analysis.calls import CallRef, DottedRef, NameRef
from syncfree_lint.analysis.nodes import walk_code
from syncfree_lint.knowledge.frequency import MEMOISING_DECORATORS, TENSOR_KEY_ATTRIBUTES


class Walk(Protocol):
    """What the walk answers here."""
    returned_functions: Dict[str, str]
    unknown_imports: Set[str]

    def function_value(self, expr: cst.BaseExpression) -> Optional[CallRef]: ...

    def _returned_function(self, factory: NameRef) -> Optional[CallRef]: ...


def decorator_wrappers(walk: Walk, node: cst.FunctionDef) -> List[CallRef]:
    """The wrappers ``node``'s decorators put around it."""
    out = []
    for decorator in node.decorators:
        expr = decorator.decorator
        decorate = walk.function_value(expr)  # `timed`, or what the factory `guard(5.0)` returns
        if decorate is None and isinstance(expr, cst.Call):
            _ask(walk, expr.func)
        wrapper = _returned(walk, decorate) if decorate is not None else None
        if wrapper is not None:
            out.append(wrapper)
    return out


def _returned(walk: Walk, ref: CallRef) -> Optional[CallRef]:
    """The function ``ref`` returns: a nested function of a function of this file, or what the run learned of
    another file's."""
    if isinstance(ref, NameRef):
        return walk._returned_function(ref)
    if isinstance(ref, DottedRef) and not ref.bound:
        returned = walk.returned_functions.get(ref.qualname)
        if returned is None:
            walk.unknown_imports.add(ref.qualname)  # the next round learns what it returns
            return None
        return DottedRef(returned)
    return None


def _ask(walk: Walk, func: cst.BaseExpression) -> None:
    """``@guard(5.0)`` of another file's factory not learned yet: ask the run what ``guard`` returns."""
    ref = walk.function_value(func)
    if isinstance(ref, DottedRef) and not ref.bound:
        walk.unknown_imports.add(ref.qualname)


def memoised(node: cst.FunctionDef, qualname: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """``@functools.lru_cache(maxsize=8)``, ``@cache``: the body runs once per distinct arguments, not per call;
    unless it reads a parameter's ``.device`` (or ``.shape``, ``.dtype``): a tensor argument is hashed by identity,
    so a new tensor each step runs the body each step."""
    if not any(qualname(func) in MEMOISING_DECORATORS for func in _decorator_funcs(node)):
        return False
    params = {p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)}
    return not any(isinstance(inner, cst.Attribute) and inner.attr.value in TENSOR_KEY_ATTRIBUTES
                   and isinstance(inner.value, cst.Name) and inner.value.value in params
                   for inner in walk_code(node.body))


def _decorator_funcs(node: cst.FunctionDef) -> List[cst.BaseExpression]:
    funcs = [d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator for d in node.decorators]
    return [func for func in funcs if isinstance(func, (cst.Name, cst.Attribute))]
