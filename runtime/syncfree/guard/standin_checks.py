"""Which aten ops would make the host wait on a real accelerator, and why.

Each check looks at one op's arguments (``tagged``: some input lives on the stand-in) and
answers ``(kind, detail)`` for a sync, or None.
"""

from __future__ import annotations

import torch

from .tags import TAGS, is_host_device, is_stand_in_device

aten = torch.ops.aten


def _bool_index(indices) -> bool:
    if not isinstance(indices, (list, tuple)):
        return False
    return any(
        isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices
    )


def _item(func, args, kwargs, tagged):
    if tagged:
        return "item", "reads a device value on the host"
    return None


def _dynamic(func, args, kwargs, tagged):
    if tagged:
        return "dynamic-shape", "the output shape depends on device values"
    return None


def _index(func, args, kwargs, tagged):
    if tagged and len(args) > 1 and _bool_index(args[1]):
        return "dynamic-shape", "boolean-mask indexing: the output shape depends on the mask"
    return None


def _index_put(func, args, kwargs, tagged):
    if tagged and len(args) > 1 and _bool_index(args[1]):
        return "dynamic-shape", "boolean-mask assignment runs nonzero on the mask"
    return None


def _repeat_interleave(func, args, kwargs, tagged):
    if not tagged:
        return None
    if func.overloadpacket is aten.repeat_interleave and func._overloadname == "self_int":
        return None
    if kwargs.get("output_size") is None:
        return "dynamic-shape", "repeat_interleave without output_size"
    return None


def _histc(func, args, kwargs, tagged):
    if not tagged:
        return None
    lo = args[2] if len(args) > 2 else kwargs.get("min", 0)
    hi = args[3] if len(args) > 3 else kwargs.get("max", 0)
    if lo == hi:
        return "item", "histc without min/max reads the data range on the host"
    return None


def _equal(func, args, kwargs, tagged):
    """``torch.equal`` reads its answer on the host, except where CUDA decides from the metadata:
    different sizes, no elements, or the same view of the same memory (then it is True at once)."""
    a, b = (args + (None, None))[:2]
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return _item(func, args, kwargs, tagged)
    if a.shape != b.shape or a.numel() == 0:
        return None
    same_view = (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
                 and a.storage_offset() == b.storage_offset() and a.stride() == b.stride() and a.dtype == b.dtype)
    return None if same_view else _item(func, args, kwargs, tagged)


def _to_copy(func, args, kwargs, tagged):
    src = args[0] if args else None
    if not isinstance(src, torch.Tensor) or kwargs.get("non_blocking", False):
        return None
    dev = kwargs.get("device")
    if dev is None:
        return None
    src_tagged = TAGS.is_tagged(src)
    if src_tagged and is_host_device(dev):
        return "d2h", "copies device memory to the host"
    if not src_tagged and is_stand_in_device(dev):
        return "h2d", "blocking copy of host memory to the device"
    return None


def _copy(func, args, kwargs, tagged):
    if len(args) < 2 or not isinstance(args[1], torch.Tensor):
        return None
    non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
    if non_blocking:
        return None
    dst_tagged, src_tagged = TAGS.is_tagged(args[0]), TAGS.is_tagged(args[1])
    if src_tagged and not dst_tagged:
        return "d2h", "copy_ of device memory into a host tensor"
    if dst_tagged and not src_tagged:
        return "h2d", "blocking copy_ of host memory into a device tensor"
    return None


_BY_NAME = {
    "_local_scalar_dense": _item,
    "item": _item,
    "is_nonzero": _item,
    "equal": _equal,
    "allclose": _item,
    "_linalg_check_errors": _item,
    "histc": _histc,
    "nonzero": _dynamic,
    "argwhere": _dynamic,
    "masked_select": _dynamic,
    "_unique": _dynamic,
    "_unique2": _dynamic,
    "unique_dim": _dynamic,
    "unique_consecutive": _dynamic,
    "unique_dim_consecutive": _dynamic,
    "bincount": _dynamic,
    "_to_sparse": _dynamic,
    "_to_sparse_csr": _dynamic,
    "_to_sparse_csc": _dynamic,
    "_to_sparse_bsr": _dynamic,
    "_to_sparse_bsc": _dynamic,
    "index": _index,
    "index_put": _index_put,
    "index_put_": _index_put,
    "_index_put_impl_": _index_put,
    "repeat_interleave": _repeat_interleave,
    "_to_copy": _to_copy,
    "copy_": _copy,
}

#: aten overload packet -> check, for the packets this torch build has
SYNC_CHECKS = {
    packet: check
    for name, check in _BY_NAME.items()
    if (packet := getattr(aten, name, None)) is not None
}
