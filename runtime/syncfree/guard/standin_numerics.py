"""Where CUDA kernels compute a different float than the CPU's, done the CUDA way on the stand-in.

A program checked on the stand-in should print what it would print on the GPU. One difference
changes printed values: CUDA divides a floating tensor by a CPU scalar (a Python number, or a 0-d
tensor on the host) as a multiplication by the scalar's reciprocal, computed once in the op's math
type; the CPU divides each element. The two can differ in the last bit: ``sum / count`` of a
float64 device tensor is not the double Python's ``float / int`` gives. A rewrite that moves such a
division from the host to the device is caught here on CPU CI (the fix programs' harness), not only
on a GPU. float32 and float64 only (half types compute in float32 and round again).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from .tags import TAGS

aten = torch.ops.aten
_DIVISIONS = {aten.div.Tensor: aten.mul.Tensor, aten.div.Scalar: aten.mul.Tensor,
              aten.div_.Tensor: aten.mul_.Tensor, aten.div_.Scalar: aten.mul_.Tensor}
_FLOATS = (torch.float32, torch.float64)


def _host_scalar(value: Any) -> Optional[float]:
    """The value of a CPU scalar divisor (a number, or a 0-d untagged tensor), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not TAGS.is_tagged(value) \
            and value.dtype not in (torch.bool, torch.complex64, torch.complex128):
        return float(value.item())
    return None


def cuda_division(func, args, kwargs) -> Optional[torch.Tensor]:
    """``a / b`` as CUDA computes it when ``b`` is a CPU scalar: ``a * (1 / b)``; None otherwise."""
    multiply = _DIVISIONS.get(func)
    if multiply is None or kwargs or len(args) != 2:
        return None
    dividend, divisor = args
    if not isinstance(dividend, torch.Tensor) or not TAGS.is_tagged(dividend) or dividend.dtype not in _FLOATS:
        return None
    scalar = _host_scalar(divisor)
    if scalar is None:
        return None
    dtype = torch.result_type(dividend, divisor)
    if dtype != dividend.dtype:
        return None
    one = torch.ones((), dtype=dtype)
    inverse = one / torch.tensor(scalar, dtype=dtype)  # rounded once in the op's math type, as CUDA does
    return multiply(dividend, inverse)
