"""SFL402's safe fix: ``batch.to(device)`` -> ``batch.to(device, non_blocking=True)`` from a pinned loader.

A copy from pinned host memory with ``non_blocking=True`` is queued on the stream and the host
goes on; kernels that use the tensor run after it on that stream, so results are the same. The
fix is offered only where it pays: the loop drawing the batch iterates a loader built in the
same file with ``pin_memory=True`` (the literal), under every binding of the loader's name.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Union

import libcst as cst

from syncfree_lint.edits import Declined, Replace, code
from syncfree_lint.analysis.scope_index import BINDERS, ScopeIndex

#: wrappers whose first argument is the iterable a loop really draws from
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter"})

Build = Callable[[], Union[List[Replace], Declined]]


def builder(call: cst.Call, loops: Sequence[cst.CSTNode], scopes: Sequence[cst.CSTNode],
            cache: Dict[int, ScopeIndex]) -> Build:
    """What the rule hands to ``FixPlan``. ``loops``: the loop statements around the call,
    innermost last; ``scopes``: the function holding the call (if any), then the module."""
    def build() -> Union[List[Replace], Declined]:
        indexes = []
        for scope in scopes:
            index = cache.get(id(scope))
            if index is None:
                index = cache[id(scope)] = ScopeIndex(scope)
            indexes.append(index)
        return decide(call, loops, indexes)
    return build


def decide(call: cst.Call, loops: Sequence[cst.CSTNode], indexes: Sequence[ScopeIndex]) -> Union[List[Replace], Declined]:
    """The edit adding ``non_blocking=True`` to ``call``, or why it is not offered."""
    if any(a.keyword is not None and a.keyword.value == "non_blocking" for a in call.args):
        return Declined("`non_blocking=` is already given (not the literal True)")
    if any(a.star for a in call.args):
        return Declined("arguments unpacked with * or **")
    loop = next((node for node in reversed(loops) if isinstance(node, cst.For)), None)
    if loop is None:
        return Declined("not inside the `for` loop over the loader (the loader is not known here)")
    moved = call.func.value if isinstance(call.func, cst.Attribute) else None
    if isinstance(moved, cst.Name) and moved.value == _whole_batch(loop):
        return Declined("the whole batch object is moved: its `.to`/`.cuda` may not take `non_blocking`")
    loader = _drawn_from(loop.iter)
    if loader is None:
        return Declined("the loop does not iterate a loader named in this file")
    problem = _pinned(loader, indexes)
    if problem:
        return Declined(problem)
    argument = cst.Arg(keyword=cst.Name("non_blocking"), value=cst.Name("True"),
                       equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    return [Replace(call, None, code(call.with_changes(args=[*call.args, argument])))]


def _whole_batch(loop: cst.For) -> Optional[str]:
    """The name bound to each whole item the loader yields (``batch`` in ``for batch in loader`` or
    ``for i, batch in enumerate(loader)``), if any."""
    target: cst.BaseExpression = loop.target
    iterable = loop.iter
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate" \
            and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        target = target.elements[1].value
    return target.value if isinstance(target, cst.Name) else None


def _drawn_from(iterable: cst.BaseExpression) -> Optional[str]:
    while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value in _WRAPPERS \
            and iterable.args and iterable.args[0].keyword is None and not iterable.args[0].star:
        iterable = iterable.args[0].value
    return iterable.value if isinstance(iterable, cst.Name) else None


def _pinned(name: str, indexes: Sequence[ScopeIndex]) -> Optional[str]:
    """None when every binding of ``name`` (in the nearest scope that binds it) builds a loader
    with ``pin_memory=True``, else why not."""
    for index in indexes:
        if name in index.params:
            return f"the loader `{name}` is a parameter: it is built elsewhere"
        bindings = []
        for node, nested in index.occurrences(name):
            if isinstance(index.parent.get(id(node)), BINDERS):  # nested too: `global name` in a function
                return f"the loader `{name}` is bound by an import, def, with or global statement"
            if nested:
                continue
            statement = index.stores.get(id(node))
            if statement is not None:
                bindings.append((node, statement))
        if not bindings:
            continue  # look in the module
        for node, statement in bindings:
            if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                    and statement.targets[0].target is node and isinstance(statement.value, cst.Call)):
                return f"the loader `{name}` has a binding that is not a call building it"
            pin = next((a.value for a in statement.value.args if a.keyword is not None and a.keyword.value == "pin_memory"), None)
            if pin is None:
                return f"the loader `{name}` is built without `pin_memory=True`"
            if not (isinstance(pin, cst.Name) and pin.value == "True"):
                return f"`pin_memory=` of the loader `{name}` is not the literal True"
        return None
    return f"the loader `{name}` is not built in this file"
