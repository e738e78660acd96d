"""Aggregation metrics: mean, sum, max and min of a stream of values.

NaN handling (``nan_strategy``) is done on the device with ``torch.where`` and counted in the
``_nan_count`` state; :func:`syncfree.to_host` reports the count:

- ``"error"``: NaNs are kept (the result is NaN) and ``to_host`` raises ``ValueError``;
- ``"warn"`` (default): NaNs (and their weights) are dropped, ``to_host`` warns;
- ``"ignore"``: NaNs are dropped silently;
- a float: NaNs are replaced by it (with weight 1);
- ``"disable"``: no check at all.

NaN is a value: finding it needs a host sync, so it is never raised at ``update`` (torchmetrics
raises there under ``"error"``); it is counted and reported by ``to_host`` or
``compute(check=True)``. What is known without reading the data raises at ``update``: a value
torch cannot turn into a tensor (``TypeError``, from torch), a ``weight`` that does not broadcast
to the value's shape (``ValueError``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Union

import torch
from torch import Tensor

from syncfree.metric import Metric, count_scalar

_STRATEGIES = ("error", "warn", "ignore", "disable")
_POLICY = {"error": "error", "warn": "warn"}


_INF = float("inf")


class _Aggregator(Metric):
    _state: str = ""
    _reduce: str = "sum"

    def __init__(self, nan_strategy: Union[str, float] = "warn", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(nan_strategy, bool) or not (
            nan_strategy in _STRATEGIES or isinstance(nan_strategy, (float, int))
        ):
            raise ValueError(
                f"{type(self).__name__}: nan_strategy must be a float or one of {_STRATEGIES}, got {nan_strategy!r}"
            )
        self.nan_strategy = nan_strategy
        # What update does with NaNs, decided once: "disable" (nothing), "error" (keep and count),
        # "drop" (warn/ignore: exclude and count), "impute" (replace by a float and count).
        if isinstance(nan_strategy, str):
            self._mode = {"warn": "drop", "ignore": "drop"}.get(nan_strategy, nan_strategy)
            self._impute = 0.0
        else:
            self._mode, self._impute = "impute", float(nan_strategy)
        self.add_state(self._state, (), self.dtype, self._reduce)
        self.add_check(
            "_nan_count",
            _POLICY.get(nan_strategy, "off") if isinstance(nan_strategy, str) else "off",
            "{metric}: {count} NaN value(s) seen (nan_strategy=" + repr(nan_strategy) + ")",
        )

    def _prepare(self, value: Any) -> Tensor:
        """The input as a detached tensor of the metric's dtype (a number: a CPU 0-d tensor)."""
        if not isinstance(value, Tensor):
            return torch.as_tensor(value, dtype=self._dtype)
        if value.dtype != self._dtype:
            value = value.to(self._dtype)
        if value.requires_grad:
            value = value.detach()
        return value

    def _clean(self, value: Tensor, fill: float, weight: Optional[Tensor] = None):
        """Apply the NaN strategy; return (value, weight, nan count)."""
        strategy = self.nan_strategy
        if strategy == "disable":
            return value, weight, torch.zeros((), dtype=torch.int64, device=value.device)
        bad = torch.isnan(value)
        if weight is not None:
            bad = bad | torch.isnan(weight)
        count = torch.count_nonzero(bad)
        if strategy in ("warn", "ignore"):
            value = torch.where(bad, torch.full_like(value, fill), value)
            if weight is not None:
                weight = torch.where(bad, torch.zeros_like(weight), weight)
        elif strategy != "error":
            value = torch.where(bad, torch.full_like(value, float(strategy)), value)
            if weight is not None:
                weight = torch.where(bad, torch.ones_like(weight), weight)
        return value, weight, count


class _Extremum(_Aggregator):
    _fill = 0.0

    def _accumulate(self, S: Any, value: Any) -> None:
        v = self._prepare(value)
        if v.numel() == 0:
            return  # the neutral element: nothing to merge, no NaN
        mode = self._mode
        if mode != "disable":
            S._nan_count.add_(torch.count_nonzero(v.isnan()))
            if mode != "error":
                # NaN -> the neutral element (dropped) or the imputed value; +-inf unchanged.
                v = v.nan_to_num(self._fill if mode == "drop" else self._impute, _INF, -_INF)
        state = getattr(S, self._state)
        if self._reduce == "max":
            torch.maximum(state, v.max(), out=state)
        else:
            torch.minimum(state, v.min(), out=state)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return states[self._state].clone()


class MaxMetric(_Extremum):
    """Maximum of all values seen (``-inf`` before any value)."""

    _state, _reduce, _fill = "max_value", "max", float("-inf")


class MinMetric(_Extremum):
    """Minimum of all values seen (``+inf`` before any value)."""

    _state, _reduce, _fill = "min_value", "min", float("inf")


class SumMetric(_Aggregator):
    """Sum of all values seen."""

    _state = "sum_value"

    def _accumulate(self, S: Any, value: Any) -> None:
        v = self._prepare(value)
        mode = self._mode
        if mode == "disable":
            S.sum_value.add_(v.sum())
            return
        S._nan_count.add_(torch.count_nonzero(v.isnan()))
        if mode == "drop":
            S.sum_value.add_(v.nansum())
        elif mode == "error":
            S.sum_value.add_(v.sum())
        else:
            S.sum_value.add_(v.nan_to_num(self._impute, _INF, -_INF).sum())

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return states["sum_value"].clone()


class MeanMetric(_Aggregator):
    """Weighted mean: states are the sum of ``value * weight`` and the sum of weights."""

    _state = "mean_value"

    def __init__(self, nan_strategy: Union[str, float] = "warn", **kwargs: Any) -> None:
        super().__init__(nan_strategy, **kwargs)
        self.add_state("weight", (), self.dtype, "sum")

    def _accumulate(self, S: Any, value: Any, weight: Any = None) -> None:
        v = self._prepare(value)
        if weight is None:
            # Fast path (every weight 1): no weight tensor at all.
            n = v.numel()
            mode = self._mode
            if mode == "disable":
                S.mean_value.add_(v.sum())
                S.weight.add_(count_scalar(n))
                return
            count = torch.count_nonzero(v.isnan())
            S._nan_count.add_(count)
            if mode == "drop":
                S.mean_value.add_(v.nansum())
                S.weight.add_(count_scalar(n)).sub_(count)
                return
            if mode == "error":
                S.mean_value.add_(v.sum())
            else:  # impute, with weight 1
                S.mean_value.add_(v.nan_to_num(self._impute, _INF, -_INF).sum())
            S.weight.add_(count_scalar(n))
            return
        w = self._prepare(weight)
        if w.ndim == 0:
            # A scalar (possibly a CPU 0-d tensor) is a kernel argument: no copy.
            w = torch.ones_like(v) * w
        if w.shape != v.shape:
            try:
                w = torch.broadcast_to(w, v.shape)
            except RuntimeError:
                raise ValueError(
                    f"MeanMetric.update: weight of shape {tuple(w.shape)} does not broadcast to "
                    f"value of shape {tuple(v.shape)}"
                ) from None
        v, w, count = self._clean(v, 0.0, w)
        S.mean_value.add_((v * w).sum())
        S.weight.add_(w.sum())
        S._nan_count.add_(count)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return states["mean_value"] / states["weight"]
