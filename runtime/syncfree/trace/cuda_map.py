"""Run a GPU script on a CPU-only machine: "cuda" means the guard's stand-in device.

While active, ``device="cuda"`` arguments, ``Tensor.to("cuda")``/``Module.to``, ``.cuda()`` and
``torch.device("cuda")`` objects handed to torch go to the stand-in (``cpu:0``), and
``torch.cuda.is_available()`` answers True (``device_count`` 1, ``current_device`` 0,
``set_device`` does nothing, ``is_bf16_supported`` False, ``synchronize()`` is recorded as the sync it would be); so does
``torch.accelerator.is_available()``, whose ``current_accelerator()`` is then ``cuda``.  These
answers go to the user's code and the training libraries that pick a device for it (Lightning,
accelerate); torch itself gets the true answers, so its internals do not reach for a missing GPU.  The script's
logic is unchanged; only where its tensors live.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from ..guard.frames import is_torch
from ..guard.tags import STAND_IN


def _for_user_code(original: Callable[..., Any], replacement: Callable[..., Any]) -> Callable[..., Any]:
    """``replacement`` when called from outside torch, ``original`` from torch's own code."""

    def call(*args, **kwargs):
        if is_torch(sys._getframe(1).f_code.co_filename):
            return original(*args, **kwargs)
        return replacement(*args, **kwargs)

    return call


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
        self._saved: dict[tuple[Any, str], Any] = {}

    def _replacements(self) -> dict[str, Any]:
        def synchronize(device=None):
            self._record_synchronize()

        return {
            "is_available": lambda: True,
            "device_count": lambda: 1,
            "current_device": lambda: 0,
            "set_device": lambda device: None,
            "is_bf16_supported": lambda *args, **kwargs: False,  # the stand-in runs float32
            "get_device_capability": lambda *args, **kwargs: (0, 0),  # no tensor cores to tune for
            "get_device_name": lambda *args, **kwargs: f"syncfree stand-in ({STAND_IN})",
            "synchronize": synchronize,
        }

    def _accelerator_replacements(self) -> dict[str, Any]:
        def synchronize(device=None):
            self._record_synchronize()

        return {
            "is_available": lambda *args, **kwargs: True,
            "current_accelerator": lambda *args, **kwargs: torch.device("cuda"),
            "device_count": lambda: 1,
            "synchronize": synchronize,
        }

    def __enter__(self) -> CudaOnStandIn:
        patches = [(torch.cuda, self._replacements())]
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None:
            patches.append((accelerator, self._accelerator_replacements()))
        for module, replacements in patches:
            for name, value in replacements.items():
                if hasattr(module, name):
                    original = self._saved[(module, name)] = getattr(module, name)
                    setattr(module, name, _for_user_code(original, value))
        self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._mode.__exit__(None, None, None)
        finally:
            for (module, name), value in self._saved.items():
                setattr(module, name, value)
            self._saved.clear()
        return False
