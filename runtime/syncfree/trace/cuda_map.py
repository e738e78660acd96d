"""Run a GPU script on a CPU-only machine: "cuda" means the guard's stand-in device.

While active, ``device="cuda"`` arguments, ``Tensor.to("cuda")``/``Module.to``, ``.cuda()`` and
``torch.device("cuda")`` objects handed to torch go to the stand-in (``cpu:0``), and
``torch.cuda.is_available()`` answers True (``device_count`` 1, ``current_device`` 0,
``set_device`` does nothing, ``synchronize()`` is recorded as the sync it would be).  The script's
logic is unchanged; only where its tensors live.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from ..guard.tags import STAND_IN


def _is_cuda(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "cuda"
    return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))


def _mapped(value: Any) -> Any:
    return STAND_IN if _is_cuda(value) else value


class _CudaToStandIn(TorchFunctionMode):
    """Rewrites cuda devices in torch calls to the stand-in (entered above the stand-in modes)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            non_blocking = bool(kwargs.get("non_blocking", False))
            return args[0].to(STAND_IN, non_blocking=non_blocking)
        if func is torch.Tensor.pin_memory:
            return args[0]  # the stand-in's host memory needs no pinning
        if "device" in kwargs:
            kwargs["device"] = _mapped(kwargs["device"])
        if func is torch.Tensor.to:
            args = tuple(_mapped(a) for a in args)
        return func(*args, **kwargs)


class CudaOnStandIn:
    """Context manager: map CUDA to the stand-in; ``record_synchronize`` receives
    ``torch.cuda.synchronize()`` calls."""

    def __init__(self, record_synchronize: Callable[[], None]) -> None:
        self._record_synchronize = record_synchronize
        self._mode = _CudaToStandIn()
        self._saved: dict[str, Any] = {}

    def _replacements(self) -> dict[str, Any]:
        def synchronize(device=None):
            self._record_synchronize()

        return {
            "is_available": lambda: True,
            "device_count": lambda: 1,
            "current_device": lambda: 0,
            "set_device": lambda device: None,
            "synchronize": synchronize,
        }

    def __enter__(self) -> CudaOnStandIn:
        for name, value in self._replacements().items():
            self._saved[name] = getattr(torch.cuda, name)
            setattr(torch.cuda, name, value)
        self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._mode.__exit__(None, None, None)
        finally:
            for name, value in self._saved.items():
                setattr(torch.cuda, name, value)
            self._saved.clear()
        return False
