"""Host time blocked per site, on CUDA (``--timing``): the ops that can wait for the GPU are timed
on the host and the time is charged to the user's line that called them."""

from __future__ import annotations

import sys
import time
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..guard.frames import user_frame
from .steps import StepCounter

aten = torch.ops.aten
_WAITING = {
    getattr(aten, name)
    for name in (
        "_local_scalar_dense", "item", "is_nonzero", "equal", "_to_copy", "copy_", "nonzero",
        "masked_select", "_unique2", "unique_consecutive", "unique_dim", "bincount", "index",
        "index_put_", "repeat_interleave",
    )
    if hasattr(aten, name)
}


def _charge(counter: StepCounter, seconds: float) -> None:
    frame, _ = user_frame(sys._getframe(2))
    if frame is not None:
        counter.add_wait(frame.f_code.co_filename, frame.f_lineno, seconds)


class _WaitTimerMode(TorchDispatchMode):
    def __init__(self, counter: StepCounter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket not in _WAITING:
            return func(*args, **kwargs)
        start = time.perf_counter()
        out = func(*args, **kwargs)
        _charge(self.counter, time.perf_counter() - start)
        return out


class WaitTimer:
    """Context manager timing the waiting ops and ``torch.cuda.synchronize()``."""

    def __init__(self, counter: StepCounter) -> None:
        self.counter = counter
        self._mode = _WaitTimerMode(counter)
        self._synchronize: Any = None

    def __enter__(self) -> WaitTimer:
        original = self._synchronize = torch.cuda.synchronize

        def synchronize(device=None):
            start = time.perf_counter()
            original(device)
            _charge(self.counter, time.perf_counter() - start)

        torch.cuda.synchronize = synchronize
        self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._mode.__exit__(None, None, None)
        finally:
            torch.cuda.synchronize = self._synchronize
        return False
