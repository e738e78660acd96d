"""What an annotation says about a parameter: ``n: int`` or ``sizes: Sequence[int]`` is no batch, whatever the
parameter's name suggests (``batch_sizes_per_gpu: Sequence[int]`` of a step function). It does not say more: a
parameter's kind is what its callers pass (annotations are not enforced: ``def show(v: float)`` is often handed a
loss), and ``max_len: Optional[int] = None`` is often filled by the function itself (``if max_len is None: max_len =
lens.max()``). ``x: torch.Tensor`` and containers of it do say: a tensor (``tensor_annotation_kind``)."""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.kinds import NUMBER, OTHER, RECORDS, TENSOR, TENSORS

#: annotations of Python values that are never tensors (``n: int``, ``sizes: Sequence[int]``)
_HOST_SCALARS = {"int": NUMBER, "float": NUMBER, "bool": NUMBER, "str": OTHER, "bytes": OTHER}
_HOST_CONTAINERS = frozenset({"list", "tuple", "sequence", "set", "frozenset", "iterable", "optional"})
#: annotations whose last parameter is the element type (``Mapping[str, Tensor]``, ``List[Tensor]``)
_TENSOR_CONTAINERS = frozenset({"dict", "mapping", "mutablemapping", "list", "sequence", "tuple", "iterable"})
_SEQUENCES = frozenset({"list", "sequence", "iterable"})


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



def tensor_annotation_kind(node: cst.BaseExpression, qualname: Callable[[cst.BaseExpression], Optional[str]]) -> Optional[str]:
    """``torch.Tensor`` (also ``Optional[...]``, ``... | None``) -> TENSOR; ``Dict[str, Tensor]``, ``List[Tensor]``,
    ``Tuple[Tensor, ...]`` -> TENSORS. ``qualname``: the imported name an expression stands for."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        if (qualname(node.value) or "").rsplit(".", 1)[-1] == "Optional":
            node = node.slice[0].slice.value
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        if isinstance(node.right, cst.Name) and node.right.value == "None":
            node = node.left  # torch.Tensor | None
    if isinstance(node, (cst.Name, cst.Attribute)) and qualname(node) == "torch.Tensor":
        return TENSOR
    if isinstance(node, cst.Subscript) and node.slice:
        container = (qualname(node.value) or dotted(node.value) or "").rsplit(".", 1)[-1].lower()
        last = node.slice[-1].slice
        element = last.value if isinstance(last, cst.Index) else None
        if container in _TENSOR_CONTAINERS and element is not None:
            if isinstance(element, cst.Ellipsis) and len(node.slice) == 2:
                element = node.slice[0].slice.value if isinstance(node.slice[0].slice, cst.Index) else None
            inner = tensor_annotation_kind(element, qualname) if element is not None else None
            if inner == TENSOR:
                return TENSORS
            if inner == TENSORS and container in _SEQUENCES:
                return RECORDS  # `List[Dict[str, Tensor]]`: a list of dicts of tensors
    return None
