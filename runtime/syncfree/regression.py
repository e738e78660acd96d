"""Regression metrics: mean squared error, mean absolute error, mean absolute percentage error, R2.

States: the sum of squared (or absolute) errors per output, in the metric's floating dtype
(inputs are upcast first, so bf16/fp16 inputs accumulate in float32), and the int64 count of
observations. NaN inputs propagate to the result, as in torchmetrics.

Errors raised at ``update`` (known without reading the data, as torchmetrics raises them):
preds/target that are not tensors, complex, or both bool (``TypeError``); shapes that differ, or
that do not match ``num_outputs`` (``ValueError``). There is no deferred value check: NaN and inf
propagate into the result.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

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
    higher_is_better = False

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
    higher_is_better = False

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


def _check_pair(owner: str, preds: Any, target: Any) -> None:
    """What torchmetrics rejects at update, known without reading the data."""
    if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{owner}.update: preds and target must be tensors")
    if preds.shape != target.shape:
        raise ValueError(
            f"{owner}.update: preds and target must have the same shape, got {tuple(preds.shape)} and "
            f"{tuple(target.shape)}"
        )
    if preds.is_complex() or target.is_complex():
        raise TypeError(
            f"{owner}.update: complex preds/target are not supported (got {preds.dtype} and {target.dtype}). "
            "Pass real values, e.g. x.real or x.abs()."
        )


class MeanAbsolutePercentageError(Metric):
    """Mean of ``|preds - target| / max(|target|, 1.17e-6)`` over every element (as torchmetrics)."""
    higher_is_better = False

    _EPS = 1.17e-06

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("sum_abs_per_error", (), self.dtype, "sum")
        self.add_state("total", (), torch.int64, "sum")

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        _check_pair(type(self).__name__, preds, target)
        dtype = self._dtype
        if preds.dtype != dtype or target.dtype != dtype:
            preds, target = preds.to(dtype), target.to(dtype)
        t = target.detach()
        error = (preds.detach() - t).abs_().div_(t.abs().clamp_(min=self._EPS))
        S.sum_abs_per_error.add_(error.sum())
        S.total.add_(count_scalar(t.numel()))

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return states["sum_abs_per_error"] / states["total"]


_MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")
_FEW_SAMPLES = "{metric}: needs at least two samples to compute the R2 score"


class R2Score(Metric):
    """Coefficient of determination ``1 - rss / tss`` (per output, averaged per ``multioutput``).

    States (one flat float tensor, one ``add_`` per update): the sum of squared targets
    (``sum_squared_error``, torchmetrics' name), the sum of targets (``sum_error``), the residual
    sum of squares (``residual``), and the int64 sample count ``total``. The number of outputs is
    the width of the first batch's ``preds`` (1-d or ``(N, 1)``: 1; ``(N, k)``: ``k``), as in
    torchmetrics; later batches must have it. In a distributed run the ranks agree on it at the
    first sync (:mod:`syncfree.agreement`: one small all_reduce, so a rank that saw no batch
    sends the same buckets; under NCCL that agreement reads one value to the host, once).
    ``num_outputs=k`` (a syncfree argument) fixes it up front: no agreement, and a batch of
    another width raises at ``update``.

    torchmetrics raises at ``compute`` when fewer than two samples were seen; reading the count
    is a host sync, so ``compute`` returns NaN then and :func:`syncfree.to_host` /
    ``compute(check=True)`` raise the ``ValueError``. ``adjusted`` falls back to the plain score
    when ``adjusted >= total - 1``, as torchmetrics does (decided on the device, without its warning).
    """
    higher_is_better = True
    _agreed = True  # (instances set it; pickles of older releases had num_outputs fixed)

    def __init__(self, adjusted: int = 0, multioutput: str = "uniform_average",
                 num_outputs: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(adjusted, bool) or not isinstance(adjusted, int) or adjusted < 0:
            raise ValueError(f"R2Score: adjusted must be an int >= 0, got {adjusted!r}")
        if multioutput not in _MULTIOUTPUT:
            raise ValueError(f"R2Score: multioutput must be one of {_MULTIOUTPUT}, got {multioutput!r}")
        if num_outputs is not None and (isinstance(num_outputs, bool) or not isinstance(num_outputs, int)
                                        or num_outputs < 1):
            raise ValueError(f"R2Score: num_outputs must be a positive int or None, got {num_outputs!r}")
        self.adjusted = adjusted
        self.multioutput = multioutput
        self.num_outputs = num_outputs  # None: the first batch decides
        self._agreed = num_outputs is not None  # whether every rank is known to hold this width
        shape = () if num_outputs in (None, 1) else (num_outputs,)
        self.add_state_group("_sums", [("sum_squared_error", shape, "sum"), ("sum_error", shape, "sum"),
                                       ("residual", shape, "sum")], self.dtype)
        self.add_state("total", (), torch.int64, "sum")

    def check_counters(self, states: Optional[Mapping[str, Tensor]] = None) -> List[Tuple[Tensor, str, str]]:
        states = self.states() if states is None else states
        return [((states["total"] < 2).to(torch.int64), "error", _FEW_SAMPLES)]

    # ---- the number of outputs, from the first batch -------------------------------------------
    def _set_outputs(self, k: int) -> None:
        self.num_outputs = k
        shape = () if k == 1 else (k,)
        self.state.reshape({"sum_squared_error": shape, "sum_error": shape, "residual": shape})

    def _settle(self, preds: Any = None, target: Any = None, *args: Any, **kwargs: Any) -> None:
        if self.num_outputs is None and isinstance(preds, Tensor) and preds.ndim in (1, 2):
            self._set_outputs(preds.shape[1] if preds.ndim == 2 else 1)

    def size_to_agree(self) -> Optional[int]:
        return None if self._agreed else (self.num_outputs or 0)

    def agree_size(self, size: int) -> None:
        if self.num_outputs is None:
            self._set_outputs(size)
        self._agreed = True

    def load_targets(self, saved: Mapping[str, Tensor]) -> Dict[str, Tensor]:
        own = self.local_states()
        residual = saved.get("residual")
        if self.num_outputs is None and isinstance(residual, Tensor) and residual.ndim == 1:
            shape = tuple(residual.shape)  # a checkpoint of k outputs: load into states of that width
            own.update({name: own[name].new_zeros(shape) for name in ("sum_squared_error", "sum_error", "residual")})
        return own

    def load_values(self, values: Mapping[str, Tensor]) -> None:
        residual = values.get("residual")
        if self.num_outputs is None and residual is not None:
            self._set_outputs(residual.shape[0] if residual.ndim == 1 else 1)
        super().load_values(values)

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        owner = type(self).__name__
        _check_pair(owner, preds, target)
        if preds.ndim > 2:
            raise ValueError(f"{owner}.update: preds and target must be 1-d or 2-d, got {tuple(preds.shape)}")
        k = self.num_outputs or 1
        cols = preds.shape[1] if preds.ndim == 2 else 1
        if cols != k:
            raise ValueError(
                f"{owner}.update: got preds of shape {tuple(preds.shape)}, but this R2Score has {k} output(s) "
                f"(from its first batch, a checkpoint or num_outputs=): every batch must have the same width"
            )
        dtype = self._dtype
        if preds.dtype != dtype or target.dtype != dtype:
            preds, target = preds.to(dtype), target.to(dtype)
        t = target.detach()
        r = t - preds.detach()
        if k == 1:
            t, r = t.reshape(-1), r.reshape(-1)
            S._sums.add_(torch.stack([torch.dot(t, t), t.sum(), torch.dot(r, r)]))
        else:
            S._sums.add_(torch.stack([(t * t).sum(0), t.sum(0), (r * r).sum(0)]).reshape(-1))
        S.total.add_(count_scalar(t.shape[0]))

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        sum_sq, sum_obs, rss, n = states["sum_squared_error"], states["sum_error"], states["residual"], states["total"]
        tss = sum_sq - sum_obs * (sum_obs / n)
        zero = torch.zeros_like(rss)
        cond_rss = ~torch.isclose(rss, zero, atol=1e-4)
        cond_tss = ~torch.isclose(tss, zero, atol=1e-4)
        raw = torch.where(cond_rss & cond_tss, 1 - rss / tss, torch.ones_like(rss))
        raw = torch.where(cond_rss & ~cond_tss, zero, raw)
        if self.multioutput == "raw_values":
            r2 = raw
        elif self.multioutput == "uniform_average":
            r2 = raw.mean()
        else:
            r2 = (tss / tss.sum() * raw).sum()
        r2 = torch.where(n < 2, torch.full_like(r2, float("nan")), r2)
        if self.adjusted:
            adj = 1 - (1 - r2) * (n - 1) / (n - self.adjusted - 1)
            r2 = torch.where(n - 1 > self.adjusted, adj, r2)
        return r2
