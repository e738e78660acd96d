"""Stand-in device tagging: which CPU tensors play accelerator tensors.

CPU tensors cannot carry a device index, so a tensor created on or moved to the stand-in is
*tagged*: the tag is put on its storage (weakly), so views, ``.data``, ``nn.Parameter`` wrappers
and ``Module.to()`` all share it.  A tag is keyed by id() of the storage's Python object, which
torch keeps alive (and identical) as long as the storage lives; the weakref callback drops the key
when the storage dies, so a recycled id is never mistaken.
"""

from __future__ import annotations

import functools
import weakref

import torch

#: The device that plays the accelerator on a machine without one.
STAND_IN = torch.device("cpu", 0)


def _tag_key(t: torch.Tensor):
    try:
        return t.untyped_storage()
    except Exception:  # no storage (sparse, nested, wrapper subclasses): tag the tensor itself
        return t


class StandInTags:
    """The set of storages living on the stand-in device."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}

    def _drop(self, key: int, ref: weakref.ref) -> None:
        if self._refs.get(key) is ref:
            del self._refs[key]

    def is_tagged(self, t: torch.Tensor) -> bool:
        if not self._refs:
            return False
        k = _tag_key(t)
        r = self._refs.get(id(k))
        return r is not None and r() is k

    def tag(self, t: torch.Tensor) -> None:
        k = _tag_key(t)
        key = id(k)
        r = self._refs.get(key)
        if r is not None and r() is k:
            return
        self._refs[key] = weakref.ref(k, functools.partial(self._drop, key))

    def untag(self, t: torch.Tensor) -> None:
        k = _tag_key(t)
        r = self._refs.get(id(k))
        if r is not None and r() is k:
            del self._refs[id(k)]

    def tag_outputs(self, out) -> None:
        """Tag a tensor, or every tensor of a tuple/list."""
        if isinstance(out, torch.Tensor):
            self.tag(out)
        elif isinstance(out, (tuple, list)):
            for o in out:
                if isinstance(o, torch.Tensor):
                    self.tag(o)

    def any_tagged(self, seq) -> bool:
        """Whether any tensor in ``seq`` (one level of lists/tuples deep) is tagged."""
        for a in seq:
            if isinstance(a, torch.Tensor):
                if self.is_tagged(a):
                    return True
            elif isinstance(a, (list, tuple)):
                for b in a:
                    if isinstance(b, torch.Tensor) and self.is_tagged(b):
                        return True
        return False


TAGS = StandInTags()


def on_stand_in(t: torch.Tensor) -> bool:
    """Whether ``t`` lives on the CPU stand-in accelerator (its storage is tagged)."""
    return isinstance(t, torch.Tensor) and TAGS.is_tagged(t)


def is_stand_in_device(dev) -> bool:
    """``cpu:N`` (a device or a string): the stand-in."""
    if isinstance(dev, torch.device):
        return dev.type == "cpu" and dev.index is not None
    if isinstance(dev, str):
        return dev.startswith("cpu:")
    return False


def is_host_device(dev) -> bool:
    """Plain ``cpu``: the host."""
    if isinstance(dev, torch.device):
        return dev.type == "cpu" and dev.index is None
    return dev == "cpu"
