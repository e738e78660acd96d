"""Custom autograd functions: ``Cls.apply(x)`` (or ``f = Cls.apply; f(x)``) runs ``Cls.forward(ctx, x)`` when it
is called and ``Cls.backward(ctx, grad)`` in the backward pass of the same step. A call of ``apply`` is a call of
both; their first parameter (``ctx``) is never the caller's, so the caller's arguments fill the parameters after
it, and ``backward``'s gradient takes the kind of the first argument (a gradient lives where its input does).
Pure functions over the file's classes; ``analysis.calls`` asks them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional

import libcst as cst

from syncfree_lint.knowledge.callables import AUTOGRAD_FUNCTION_BASES, AUTOGRAD_FUNCTION_METHODS

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.scope import ClassFrame


def is_autograd_class(qualname: str, classes: Dict[str, "ClassFrame"]) -> bool:
    """A class of this file that derives (through local bases) from ``torch.autograd.Function``."""
    seen = set()
    pending = [qualname]
    while pending:
        current = pending.pop()
        frame = classes.get(current)
        if frame is None or current in seen:
            continue
        seen.add(current)
        if any(base in AUTOGRAD_FUNCTION_BASES for base in frame.bases):
            return True
        pending.extend(base for base in frame.bases if base in classes)
    return False


def applied_class(func: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """``Cls`` of ``Cls.apply`` (a name or a dotted name), else None."""
    if isinstance(func, cst.Attribute) and func.attr.value == "apply" and isinstance(func.value, (cst.Name, cst.Attribute)):
        return func.value
    return None


def takes_ctx(frame_class: Optional["ClassFrame"], method: str, classes: Dict[str, "ClassFrame"]) -> bool:
    """Is ``method`` of this class a ``forward``/``backward`` of a custom autograd function (``ctx`` first)?"""
    return frame_class is not None and method in AUTOGRAD_FUNCTION_METHODS \
        and is_autograd_class(frame_class.qualname, classes)


def apply_methods(classes: Dict[str, "ClassFrame"], qualname: str) -> List[str]:
    """The methods ``apply`` of a local autograd class runs that the class (or a local base) defines."""
    found = []
    for method in AUTOGRAD_FUNCTION_METHODS:
        pending, seen = [qualname], set()
        while pending:
            current = pending.pop(0)
            frame = classes.get(current)
            if frame is None or current in seen:
                continue
            seen.add(current)
            if method in frame.methods:
                found.append(f"{current}.{method}")
                break
            pending.extend(base for base in frame.bases if base in classes)
    return found
