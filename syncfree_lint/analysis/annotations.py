"""What an annotation says about a parameter: ``n: int`` or ``sizes: Sequence[int]`` is no batch, whatever the
parameter's name suggests (``batch_sizes_per_gpu: Sequence[int]`` of a step function). It does not say more: a
parameter's kind is what its callers pass (annotations are not enforced: ``def show(v: float)`` is often handed a
loss), and ``max_len: Optional[int] = None`` is often filled by the function itself (``if max_len is None: max_len =
lens.max()``). (``x: torch.Tensor`` is read by ``BindingsMixin._annotated_kind``, which needs the imports.)"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from syncfree_lint.analysis.kinds import NUMBER, OTHER

#: annotations of Python values that are never tensors (``n: int``, ``sizes: Sequence[int]``)
_HOST_SCALARS = {"int": NUMBER, "float": NUMBER, "bool": NUMBER, "str": OTHER, "bytes": OTHER}
_HOST_CONTAINERS = frozenset({"list", "tuple", "sequence", "set", "frozenset", "iterable", "optional"})


def host_annotation_kind(node: cst.BaseExpression) -> Optional[str]:
    """``int``/``float``/``bool`` -> NUMBER, ``str`` -> OTHER, a container of those (``Sequence[int]``,
    ``Tuple[int, ...]``, ``Optional[int]``) -> OTHER: the author says the value is not a tensor."""
    if isinstance(node, cst.Name):
        return _HOST_SCALARS.get(node.value)
    if isinstance(node, cst.Subscript) and node.slice:
        head = node.value.attr.value if isinstance(node.value, cst.Attribute) else \
            node.value.value if isinstance(node.value, cst.Name) else ""
        if head.lower() not in _HOST_CONTAINERS:
            return None
        inner = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        if not inner or len(inner) != len(node.slice):
            return None
        kinds = [None if isinstance(e, cst.Ellipsis) else "none" if isinstance(e, cst.Name) and e.value == "None"
                 else host_annotation_kind(e) for e in inner]
        if any(k is None and not isinstance(e, cst.Ellipsis) for k, e in zip(kinds, inner)):
            return None
        if head.lower() == "optional":
            return kinds[0] if kinds[0] != "none" else None
        return OTHER
    return None

