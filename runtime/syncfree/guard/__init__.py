"""Detect operations that make the host wait for the accelerator ("host syncs").

Usage::

    from syncfree.guard import no_host_sync, accelerator_device

    dev = accelerator_device()          # cuda when available, else the CPU stand-in
    with no_host_sync() as g:           # mode="record" | "warn" | "error"
        train_step()
    assert not g.events, g.report()

Two back ends (``backend.Backend``), chosen from ``device`` (default: CUDA when available):

* **CUDA** (``cuda``): ``torch.cuda.set_sync_debug_mode("warn")`` with the warnings it emits
  captured (the error mode raises from them), plus wrappers of ``torch.cuda.synchronize()``,
  ``Stream.synchronize()`` and ``Event.synchronize()``, which that mode does not report.
* **Stand-in** (``standin``, CPU-only machines): the device ``torch.device("cpu", 0)`` plays the
  accelerator; tensors created on or moved to it are tagged (``tags``), torch modes propagate
  the tag and record the ops that would synchronize on a real accelerator (``standin_modes``,
  ``standin_checks``).  Tensors never put on the stand-in, and Python numbers, are never reported.

Each :class:`SyncEvent` carries the user's ``file:line``: the innermost stack frame outside torch,
syncfree, the standard library and the registered libraries (``frames``).  Several syncs made
while handling one call from that line (``print(t)`` reads many elements) are reported once.
"""

from __future__ import annotations

import sys
import types

from . import host_sync_guard as _guard_module
from .cuda import explicit_sync
from .events import (
    MODES,
    HostSyncError,
    StandInUnusedWarning,
    SyncEvent,
    SyncWarning,
)
from .frames import DEFAULT_LIBRARIES, LIBRARIES, add_library
from .host_sync_guard import HostSyncGuard
from .standin import group_tensors_by_device_and_dtype, stand_in
from .tags import STAND_IN, on_stand_in

__all__ = [
    "DEFAULT_LIBRARIES",
    "HostSyncError",
    "HostSyncGuard",
    "MODES",
    "STAND_IN",
    "StandInUnusedWarning",
    "SyncEvent",
    "SyncWarning",
    "accelerator_device",
    "add_library",
    "no_host_sync",
    "on_stand_in",
    "stand_in",
]


def accelerator_device():
    """The device tests should put tensors on: CUDA when available, else :data:`STAND_IN`."""
    return _guard_module.accelerator_device()


def no_host_sync(mode: str = "record", device=None, *, cuda_trace: bool = True) -> HostSyncGuard:
    """A :class:`HostSyncGuard`; use it as ``with no_host_sync() as g: ...``."""
    if device is None:
        device = accelerator_device()  # looked up here, so that tests can replace it
    return HostSyncGuard(mode, device, cuda_trace=cuda_trace)


# Names that existing tests reach into: the explicit-sync wrapper they drive without a GPU, the
# library folders they extend, and the helpers they compare against.
_explicit_sync = explicit_sync
_group_tensors_by_device_and_dtype = group_tensors_by_device_and_dtype
_is_library = LIBRARIES.is_library


class _GuardModule(types.ModuleType):
    @property
    def _LIBS(self) -> tuple[str, ...]:
        """The library folders (the state lives in ``frames.LIBRARIES``)."""
        return LIBRARIES.libraries

    @_LIBS.setter
    def _LIBS(self, folders: tuple[str, ...]) -> None:
        LIBRARIES.libraries = tuple(folders)
        LIBRARIES.is_library.cache_clear()


sys.modules[__name__].__class__ = _GuardModule

