"""Regression metrics: mean squared error and mean absolute error.

States: the sum of squared (or absolute) errors per output, in the metric's floating dtype
(inputs are upcast first, so bf16/fp16 inputs accumulate in float32), and the int64 count of
observations. NaN inputs propagate to the result, as in torchmetrics.

Errors raised at ``update`` (known without reading the data, as torchmetrics raises them):
preds/target that are not tensors, complex, or both bool (``TypeError``); shapes that differ, or
that do not match ``num_outputs`` (``ValueError``). There is no deferred value check: NaN and inf
propagate into the result.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

import torch
from torch import Tensor

from syncfree.metric import Metric, count_scalar


class _ErrorSum(Metric):
    _state = ""

    def __init__(self, num_outputs: int, kwargs: Dict[str, Any]) -> None:
        super().__init__(**kwargs)
        if isinstance(num_outputs, bool) or not isinstance(num_outputs, int) or num_outputs < 1:
            raise ValueError(f"{type(self).__name__}: num_outputs must be a positive int, got {num_outputs!r}")
        self.num_outputs = num_outputs
        shape = () if num_outputs == 1 else (num_outputs,)
        self.add_state(self._state, shape, self.dtype, "sum")
        self.add_state("total", (), torch.int64, "sum")

    def _check_dtypes(self, preds: Tensor, target: Tensor) -> None:
        """Raise at update what torchmetrics rejects at update (known from the dtypes alone)."""
        owner = type(self).__name__
        if preds.is_complex() or target.is_complex():
            raise TypeError(
                f"{owner}.update: complex preds/target are not supported (got {preds.dtype} and "
                f"{target.dtype}). Pass real values, e.g. x.real or x.abs()."
            )
        if preds.dtype == torch.bool and target.dtype == torch.bool:
            raise TypeError(
                f"{owner}.update: preds and target are both bool (torchmetrics cannot subtract them "
                "either). Convert them with .float()."
            )

    def _error_sum(self, diff: Tensor) -> Tensor:
        """Sum of the errors of a 1-d ``diff`` (one op where possible)."""
        raise NotImplementedError

    def _error(self, diff: Tensor) -> Tensor:
        raise NotImplementedError

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
            raise TypeError(f"{type(self).__name__}.update: preds and target must be tensors")
        if preds.shape != target.shape:
            raise ValueError(
                f"{type(self).__name__}.update: preds and target must have the same shape, got "
                f"{tuple(preds.shape)} and {tuple(target.shape)}"
            )
        dtype = self._dtype
        if preds.dtype != dtype or target.dtype != dtype:
            self._check_dtypes(preds, target)
            preds, target = preds.to(dtype), target.to(dtype)
        if self.num_outputs == 1:
            diff = preds - target
            if diff.requires_grad:
                diff = diff.detach()
            if diff.ndim != 1:
                diff = diff.reshape(-1)
            getattr(S, self._state).add_(self._error_sum(diff))
            S.total.add_(count_scalar(diff.shape[0]))
            return
        if preds.ndim != 2 or preds.shape[1] != self.num_outputs:
            raise ValueError(
                f"{type(self).__name__}.update: with num_outputs={self.num_outputs} preds must have shape (N, "
                f"{self.num_outputs}), got {tuple(preds.shape)}"
            )
        diff = (preds - target).detach()
        getattr(S, self._state).add_(self._error(diff).sum(0))
        S.total.add_(count_scalar(diff.shape[0]))


class MeanSquaredError(_ErrorSum):
    """Mean squared error (root mean squared error with ``squared=False``)."""

    _state = "sum_squared_error"

    def __init__(self, squared: bool = True, num_outputs: int = 1, **kwargs: Any) -> None:
        super().__init__(num_outputs, kwargs)
        self.squared = squared

    def _error(self, diff: Tensor) -> Tensor:
        return diff * diff

    def _check_dtypes(self, preds: Tensor, target: Tensor) -> None:
        """Raise at update what torchmetrics rejects at update (known from the dtypes alone)."""
        owner = type(self).__name__
        if preds.is_complex() or target.is_complex():
            raise TypeError(
                f"{owner}.update: complex preds/target are not supported (got {preds.dtype} and "
                f"{target.dtype}). Pass real values, e.g. x.real or x.abs()."
            )
        if preds.dtype == torch.bool and target.dtype == torch.bool:
            raise TypeError(
                f"{owner}.update: preds and target are both bool (torchmetrics cannot subtract them "
                "either). Convert them with .float()."
            )

    def _error_sum(self, diff: Tensor) -> Tensor:
        return torch.dot(diff, diff)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        mse = states["sum_squared_error"] / states["total"]
        return mse if self.squared else torch.sqrt(mse)


class MeanAbsoluteError(_ErrorSum):
    """Mean absolute error."""

    _state = "sum_abs_error"

    def __init__(self, num_outputs: int = 1, **kwargs: Any) -> None:
        super().__init__(num_outputs, kwargs)

    def _error(self, diff: Tensor) -> Tensor:
        return diff.abs()

    def _check_dtypes(self, preds: Tensor, target: Tensor) -> None:
        """Raise at update what torchmetrics rejects at update (known from the dtypes alone)."""
        owner = type(self).__name__
        if preds.is_complex() or target.is_complex():
            raise TypeError(
                f"{owner}.update: complex preds/target are not supported (got {preds.dtype} and "
                f"{target.dtype}). Pass real values, e.g. x.real or x.abs()."
            )
        if preds.dtype == torch.bool and target.dtype == torch.bool:
            raise TypeError(
                f"{owner}.update: preds and target are both bool (torchmetrics cannot subtract them "
                "either). Convert them with .float()."
            )

    def _error_sum(self, diff: Tensor) -> Tensor:
        return torch.linalg.vector_norm(diff, 1)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return states["sum_abs_error"] / states["total"]
