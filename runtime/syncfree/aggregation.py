"""Aggregation metrics: mean, sum, max and min of a stream of values.

NaN handling (``nan_strategy``) is done on the device with ``torch.where`` and counted in the
``_nan_count`` state; :func:`syncfree.to_host` reports the count:

- ``"error"``: NaNs are kept (the result is NaN) and ``to_host`` raises ``ValueError``;
- ``"warn"`` (default): NaNs (and their weights) are dropped, ``to_host`` warns;
- ``"ignore"``: NaNs are dropped silently;
- a float: NaNs are replaced by it (with weight 1);
- ``"disable"``: no check at all.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Union

import torch
from torch import Tensor

from syncfree.metric import Metric, as_tensor

_STRATEGIES = ("error", "warn", "ignore", "disable")
_POLICY = {"error": "error", "warn": "warn"}


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
        self.add_state(self._state, (), self.dtype, self._reduce)
        self.add_check(
            "_nan_count",
            _POLICY.get(nan_strategy, "off") if isinstance(nan_strategy, str) else "off",
            "{metric}: {count} NaN value(s) seen (nan_strategy=" + repr(nan_strategy) + ")",
        )

    def _clean(self, value: Tensor, fill: float, weight: Optional[Tensor] = None):
        """Apply the NaN strategy; return (value, weight, nan count)."""
        strategy = self.nan_strategy
        if strategy == "disable":
            return value, weight, torch.zeros((), dtype=torch.int64, device=value.device)
        bad = torch.isnan(value)
        if weight is not None:
            bad = bad | torch.isnan(weight)
        count = bad.sum()
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

    def _batch(self, value: Any) -> Dict[str, Tensor]:
        value = as_tensor(value, self.dtype).to(self.dtype)
        value, _, count = self._clean(value, self._fill)
        if value.numel() == 0:
            extreme = torch.full((), self._fill, dtype=self.dtype, device=value.device)
        else:
            extreme = value.amax() if self._reduce == "max" else value.amin()
        return {self._state: extreme, "_nan_count": count}

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

    def _batch(self, value: Any) -> Dict[str, Tensor]:
        value = as_tensor(value, self.dtype).to(self.dtype)
        value, _, count = self._clean(value, 0.0)
        return {"sum_value": value.sum(), "_nan_count": count}

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return states["sum_value"].clone()


class MeanMetric(_Aggregator):
    """Weighted mean: states are the sum of ``value * weight`` and the sum of weights."""

    _state = "mean_value"

    def __init__(self, nan_strategy: Union[str, float] = "warn", **kwargs: Any) -> None:
        super().__init__(nan_strategy, **kwargs)
        self.add_state("weight", (), self.dtype, "sum")

    def _batch(self, value: Any, weight: Any = None) -> Dict[str, Tensor]:
        value = as_tensor(value, self.dtype).to(self.dtype)
        if weight is None:
            weight = torch.ones_like(value)
        else:
            weight = as_tensor(weight, self.dtype).to(self.dtype)
            if weight.ndim == 0:
                # A scalar (possibly a CPU 0-d tensor) is a kernel argument: no copy.
                weight = torch.ones_like(value) * weight
        if weight.shape != value.shape:
            try:
                weight = torch.broadcast_to(weight, value.shape)
            except RuntimeError:
                raise ValueError(
                    f"MeanMetric.update: weight of shape {tuple(weight.shape)} does not broadcast to "
                    f"value of shape {tuple(value.shape)}"
                ) from None
        value, weight, count = self._clean(value, 0.0, weight)
        return {"mean_value": (value * weight).sum(), "weight": weight.sum(), "_nan_count": count}

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return states["mean_value"] / states["weight"]
