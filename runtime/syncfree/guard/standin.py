"""The CPU stand-in back end: the stand-in torch modes entered per thread, nestable."""

from __future__ import annotations

import threading
import warnings
from typing import Any, Optional, Tuple

import torch

from .backend import Backend
from .events import StandInUnusedWarning
from .standin_modes import StandInDispatchMode, StandInFunctionMode, Usage
from .tags import STAND_IN, TAGS, is_host_device


def group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
    """torch's C++ grouping helper (clip_grad_norm_, foreach optimizers), reporting the stand-in
    for groups of tagged tensors, so that a later ``x.to(device)`` stays on the device instead
    of looking like a device-to-host copy."""
    grouped = GROUPING.original(tensorlistlist, with_indices)
    fixed = {}
    for (device, dtype), value in grouped.items():
        first = value[0][0] if value and value[0] else []
        if is_host_device(device) and any(
            isinstance(t, torch.Tensor) and TAGS.is_tagged(t) for t in first
        ):
            device = STAND_IN
        fixed[(device, dtype)] = value
    return fixed


class _GroupingPatch:
    """Replaces torch's grouping helper while any thread uses the stand-in."""

    def __init__(self) -> None:
        self.original: Any = None
        self._users = 0
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            self._users += 1
            if self._users == 1 and hasattr(torch._C, "_group_tensors_by_device_and_dtype"):
                self.original = torch._C._group_tensors_by_device_and_dtype
                torch._C._group_tensors_by_device_and_dtype = group_tensors_by_device_and_dtype

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self.original is not None:
                torch._C._group_tensors_by_device_and_dtype = self.original
                self.original = None


GROUPING = _GroupingPatch()


class _ThreadState(threading.local):
    depth = 0
    modes: Optional[Tuple[StandInFunctionMode, StandInDispatchMode]] = None
    usage: Optional[Usage] = None


class StandInBackend(Backend):
    """Enters the stand-in modes on the first (outermost) use of a thread, leaves on the last.

    At a guard's exit it warns (:class:`StandInUnusedWarning`) when the block ran tensor ops but
    none touched the stand-in: the model and data were set up outside ``stand_in()``, so the
    guard could not see a sync.
    """

    name = "stand-in"

    def __init__(self) -> None:
        self._thread = _ThreadState()

    def activate(self) -> None:
        """Enter the stand-in modes (nestable)."""
        state = self._thread
        if state.depth == 0:
            usage = Usage()
            fmode, dmode = StandInFunctionMode(), StandInDispatchMode(usage)
            fmode.__enter__()
            try:
                dmode.__enter__()
            except BaseException:
                fmode.__exit__(None, None, None)
                raise
            state.modes, state.usage = (fmode, dmode), usage
            GROUPING.acquire()
        state.depth += 1

    def deactivate(self) -> None:
        """Leave the stand-in modes; the outermost exit checks they are still on top."""
        state = self._thread
        state.depth -= 1
        if state.depth == 0:
            assert state.modes is not None  # entered by activate at depth 0
            fmode, dmode = state.modes
            state.modes = state.usage = None
            GROUPING.release()
            from torch.overrides import _get_current_function_mode
            from torch.utils._python_dispatch import _get_current_dispatch_mode

            if _get_current_dispatch_mode() is not dmode or _get_current_function_mode() is not fmode:
                raise RuntimeError(
                    "syncfree.guard: torch modes were entered/exited out of order around the "
                    "stand-in device (exit inner modes first)"
                )
            dmode.__exit__(None, None, None)
            fmode.__exit__(None, None, None)

    def usage(self) -> tuple[int, int]:
        """(ops, ops on the device) this thread ran under the stand-in so far."""
        u = self._thread.usage
        return (u.ops, u.device_ops) if u is not None else (0, 0)

    def enter(self, guard: Any) -> None:
        self.activate()
        guard._usage_at_enter = self.usage()

    def exit(self, guard: Any, exc: BaseException | None, tb: Any) -> None:
        ops0, dev0 = guard._usage_at_enter
        ops, dev = self.usage()
        self.deactivate()
        if exc is None and ops > ops0 and dev == dev0:
            warnings.warn(
                f"no_host_sync: the block ran {ops - ops0} tensor op(s), none of them on the "
                f"stand-in device {STAND_IN}, so no sync could be seen. Create the model and data "
                "on syncfree.guard.accelerator_device() while the stand-in is active (inside "
                "`with stand_in():` or the guard, or with the pytest fixture accelerator_device).",
                StandInUnusedWarning,
                stacklevel=3,
            )


STAND_IN_BACKEND = StandInBackend()


class stand_in:
    """Activate the CPU stand-in accelerator without recording anything.

    Inside, tensors created with ``device=STAND_IN`` or moved with ``.to(STAND_IN)`` (including
    ``Module.to``) are tagged, and the tag follows them through every op.  Enter it around test
    set-up so that the tensors a guarded block uses live on the stand-in::

        with stand_in() as dev:
            model = Net().to(dev)
            with no_host_sync() as g:
                step(model, torch.randn(8, 3, device=dev))

    ``with`` yields :data:`STAND_IN`.  Nesting is allowed; a guard on the stand-in enters it too.
    """

    def __enter__(self) -> torch.device:
        STAND_IN_BACKEND.activate()
        return STAND_IN

    def __exit__(self, exc_type, exc, tb):
        STAND_IN_BACKEND.deactivate()
        return False
