"""Binned binary curves: ROC, precision-recall curve, AUROC and average precision at fixed thresholds.

``thresholds=`` (an int ``n``: ``linspace(0, 1, n)``; a list of floats in ``[0, 1]``; a 1-d tensor):
the result equals torchmetrics' with the same thresholds.

State: ``counts`` (2 x (T + 1), int64): for target 0/1, how many predictions have ``k`` thresholds
``<= pred`` (``searchsorted`` over the sorted thresholds, O(N log T) instead of torchmetrics' N x T
comparisons). Every entry lands in one bin of one flat buffer (bad targets, not 0/1/ignore_index, in
``_bad_targets``; ignored entries in scratch bins), so an update is ONE ``put_``. At compute, the
number of positive predictions at threshold ``i`` is a suffix sum of ``counts``. Float preds outside
``[0, 1]`` are logits (sigmoid), decided per batch on the device after dropping ignored entries, as
torchmetrics; NaN preds are never positive (``NaN >= t`` is false).

Deferred: bad targets are reported by :func:`syncfree.to_host` / ``compute(check=True)``
(``ValueError`` with ``validate_args=True``, a warning otherwise). Raised at update: non-float preds,
float targets, shapes that differ (``ValueError``, as torchmetrics).
``thresholds=None`` (torchmetrics' default, the exact value): every metric here keeps the samples
in a bounded device buffer (``capacity=``, see :mod:`syncfree.exact_curves`). ``BinaryAUROC`` and
``BinaryAveragePrecision`` compute from it without a host read; the exact ``BinaryROC`` and
``BinaryPrecisionRecallCurve`` have one point per distinct score, so their ``compute`` reads the
curve's length (and the check counters, reported there). Not supported (``TypeError``):
``BinaryAUROC(max_fpr=...)``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import torch
from torch import Tensor

from syncfree import exact_curves
from syncfree.host import report_counters
from syncfree.metric import Metric

_BAD = ("{metric}: {count} target value(s) that are not 0, 1 or ignore_index were excluded")
_INF = math.inf
Thresholds = Union[int, List[float], Tensor, None]


def _thresholds(owner: str, thresholds: Thresholds) -> Tensor:
    if isinstance(thresholds, bool) or not isinstance(thresholds, (int, list, Tensor)):
        raise ValueError(f"{owner}: thresholds must be an int, a list of floats or a 1-d tensor, got {thresholds!r}")
    if isinstance(thresholds, int):
        if thresholds < 2:
            raise ValueError(f"{owner}: an int thresholds must be larger than 1, got {thresholds}")
        return torch.linspace(0, 1, thresholds)
    if isinstance(thresholds, list):
        if not thresholds or not all(isinstance(t, float) and 0 <= t <= 1 for t in thresholds):
            raise ValueError(f"{owner}: a list of thresholds must hold floats in [0, 1], got {thresholds!r}")
        return torch.tensor(thresholds)
    if thresholds.ndim != 1 or not thresholds.numel():
        raise ValueError(f"{owner}: a thresholds tensor must be 1-d and not empty, got shape {tuple(thresholds.shape)}")
    return thresholds.detach().clone()


def _safe_div(num: Tensor, den: Tensor, zero: float) -> Tensor:
    num, den = num.float(), den.float()
    return torch.where(den != 0, num / den, torch.full_like(num, zero))


# torch's CPU searchsorted runs on one thread up to this many values (its parallel grain size).
_SEARCH_GRAIN = 200
# Up to this many preds on the CPU, searchsorted goes in single-threaded chunks.
_CHUNKED_UP_TO = 4096


def _count_at_most(sorted_thresholds: Tensor, p: Tensor) -> Tensor:
    """How many of ``sorted_thresholds`` are ``<= p``, per element (``searchsorted(right=True)``).

    On the CPU searchsorted splits even a few hundred preds over the intra-op threads; on a loaded
    machine each update then waits for a descheduled worker (1.5 ms instead of 5 us). Small CPU
    batches go in chunks that stay on one thread.
    """
    n = p.numel()
    if p.device.type == "cpu" and _SEARCH_GRAIN < n <= _CHUNKED_UP_TO and not torch.compiler.is_compiling():
        return torch.cat([torch.searchsorted(sorted_thresholds, chunk, right=True)
                          for chunk in p.split(_SEARCH_GRAIN)])
    return torch.searchsorted(sorted_thresholds, p, right=True)


class _BinnedBinary(Metric):
    """Per-threshold binary confusion counts (see the module docstring)."""

    thresholds: Optional[Tensor]  # None: exact (thresholds=None)

    def __init__(self, thresholds: Thresholds, ignore_index: Optional[int], validate_args: bool,
                 kwargs: Any, capacity: Optional[int] = None) -> None:
        super().__init__(**kwargs)
        owner = type(self).__name__
        if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, int)):
            raise ValueError(f"{owner}: ignore_index must be None or an int, got {ignore_index!r}")
        self.ignore_index = ignore_index
        self.validate_args = validate_args
        self.capacity = exact_curves.check_capacity(owner, capacity, thresholds)
        if self.capacity is not None:
            self.thresholds = None
            exact_curves.add_buffer(self, self.capacity, 2)  # (pred, target + 1)
            self.add_state("_bad_targets", (), torch.int64)
            self.add_check("_bad_targets", "error" if validate_args else "warn", _BAD, state=False)
            return
        thr = _thresholds(owner, thresholds)
        T = thr.numel()
        self._T = T
        order = torch.sort(thr, stable=True).indices
        rank = torch.empty_like(order)
        rank[order] = torch.arange(T)
        self.add_constant("thresholds", thr)
        self.add_constant("_sorted", thr[order].contiguous())
        self.add_constant("_rank", rank)
        # Row of a target code clamp(t, -1, 2) + 1 (4: ignored): 0 / 1 for targets 0 / 1, 2 bad, 3 ignored.
        self.add_constant("_rows", torch.tensor([2, 0, 1, 2, 3], dtype=torch.int64))
        self.add_state_group("_hist", [("counts", (2, T + 1), "sum"), ("_bad_targets", (T + 1,), "sum")],
                             torch.int64, scratch=T + 1)
        self.add_check("_bad_targets", "error" if validate_args else "warn", _BAD, state=False)

    def check_counters(self, states: Optional[Mapping[str, Tensor]] = None) -> List[Tuple[Tensor, str, str]]:
        states = self.states() if states is None else states
        return [(states[name].sum(), policy, message) for name, policy, message in self._checks if policy != "off"]

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        owner = type(self).__name__
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
            raise TypeError(f"{owner}.update: preds and target must be tensors")
        if preds.shape != target.shape:
            raise ValueError(f"{owner}.update: preds and target must have the same shape, got "
                             f"{tuple(preds.shape)} and {tuple(target.shape)}")
        if target.is_floating_point() or target.is_complex():
            raise ValueError(f"{owner}.update: target must be an integer tensor of labels, got {target.dtype}")
        if not preds.is_floating_point():
            raise ValueError(f"{owner}.update: preds must be floating point scores (probabilities or logits), "
                             f"got {preds.dtype}")
        p = preds.detach().reshape(-1)
        t = target.reshape(-1).long()
        inside = p.clamp(0, 1) == p
        tc = t.clamp(-1, 2).add_(1)
        if self.ignore_index is not None:
            ignored = t == self.ignore_index
            inside = inside | ignored
            tc.masked_fill_(ignored, 4)
        p = torch.where(inside.all(), p, p.sigmoid())
        if self.capacity is not None:  # exact: keep the samples whose target is 0 or 1
            S._bad_targets.add_(torch.count_nonzero((tc == 0) | (tc == 3)))
            rows = torch.stack([p.to(S.samples.dtype), tc.to(S.samples.dtype)], 1)  # (pred, target + 1)
            exact_curves.append(S, rows, (tc == 1) | (tc == 2), self._columns)
            return
        if p.dtype != self._sorted.dtype:
            p = p.to(self._sorted.dtype)
        p = torch.nan_to_num(p, nan=-_INF, posinf=_INF, neginf=-_INF)
        bucket = _count_at_most(self._sorted, p)
        index = torch.add(bucket, torch.take(self._rows, tc), alpha=self._T + 1)
        S._hist.put_(index, torch.ones_like(index), accumulate=True)

    def _binned_thresholds(self) -> Tensor:
        """The thresholds of a binned metric (an exact one, ``thresholds=None``, has none)."""
        if self.thresholds is None:
            raise TypeError(f"{type(self).__name__}: thresholds=None keeps samples; it has no fixed thresholds")
        return self.thresholds

    def batch_states(self, *args: Any, **kwargs: Any) -> Dict[str, Tensor]:
        """A batch's states; exact: a sample buffer of the batch's size (see ``exact_curves.batch_view``)."""
        preds = args[0] if args else kwargs.get("preds")
        if self.capacity is None or not isinstance(preds, Tensor):
            return super().batch_states(*args, **kwargs)
        samples = self.state.view.samples
        view = exact_curves.batch_view(min(self.capacity, preds.numel()), 2, samples.dtype, samples.device)
        self._accumulate(view, *args, **kwargs)
        return exact_curves.batch_of(view)

    def merge_batch(self, batch: Mapping[str, Tensor]) -> None:
        if self.capacity is None:
            return super().merge_batch(batch)
        self.state.updates += 1
        exact_curves.merge(self.state.view, batch, self._columns)
        self.state.view._bad_targets.add_(batch["_bad_targets"])
        self.state.touched()

    def _exact(self, states: Mapping[str, Tensor], score: Any) -> Tensor:
        """``score`` (:func:`exact_curves.auroc` or ``average_precision``) of the samples in ``states``."""
        scores, labels, used = exact_curves.split(states)
        value = score(scores.T, (labels == 1).unsqueeze(0), used.unsqueeze(0))[0].to(scores.dtype)
        return exact_curves.flag_overflow(value, states)

    def _exact_curve(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
        """(fps, tps, thresholds) at every distinct score of the samples in ``states``: their check
        counters are read and reported first, then the curve's length (see :mod:`syncfree.exact_curves`)."""
        report_counters(self._counters([states]))
        scores, labels, used = exact_curves.split(states)
        return exact_curves.clf_curves(scores.T, (labels == 1).unsqueeze(0), used.unsqueeze(0))[0]

    def _stats(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """(tps, fps, tns, fns) per threshold, in the order the thresholds were given."""
        counts = states["counts"]
        above = counts.flip(-1).cumsum(-1).flip(-1)  # [:, b] = entries with at least b thresholds <= pred
        positive = above[:, 1:].index_select(1, self._rank)
        fps, tps = positive[0], positive[1]
        return tps, fps, above[0, :1] - fps, above[1, :1] - tps

    def _pr_curve(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor]:
        tps, fps, _, fns = self._stats(states)
        precision = _safe_div(tps, tps + fps, math.nan)
        recall = _safe_div(tps, tps + fns, math.nan)
        precision = torch.cat([precision, torch.ones_like(precision[:1])])
        recall = torch.cat([recall, torch.zeros_like(recall[:1])])
        return precision, recall

    def _roc(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
        tps, fps, tns, fns = self._stats(states)
        tpr = _safe_div(tps, tps + fns, 0.0).flip(0)
        fpr = _safe_div(fps, fps + tns, 0.0).flip(0)
        return fpr, tpr, self._binned_thresholds().flip(0)


class BinaryPrecisionRecallCurve(_BinnedBinary):
    """(precision, recall, thresholds) at the given thresholds (precision ends with 1, recall with 0);
    ``thresholds=None``: the exact curve, whose ``compute`` reads its length (one host read)."""

    def __init__(self, thresholds: Thresholds = None, ignore_index: Optional[int] = None,
                 validate_args: bool = True, capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(thresholds, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        if self.capacity is not None:
            return exact_curves.pr_points(*self._exact_curve(states))
        precision, recall = self._pr_curve(states)
        return precision, recall, self._binned_thresholds().clone()


class BinaryROC(_BinnedBinary):
    """(fpr, tpr, thresholds), thresholds in decreasing order (as torchmetrics); ``thresholds=None``:
    the exact curve, whose ``compute`` reads its length (one host read)."""

    def __init__(self, thresholds: Thresholds = None, ignore_index: Optional[int] = None,
                 validate_args: bool = True, capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(thresholds, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        if self.capacity is not None:
            return exact_curves.roc_points(*self._exact_curve(states))
        return self._roc(states)


class BinaryAUROC(_BinnedBinary):
    """Area under the binned ROC curve (trapezoidal rule)."""
    higher_is_better = True

    def __init__(self, max_fpr: Optional[float] = None, thresholds: Thresholds = None,
                 ignore_index: Optional[int] = None, validate_args: bool = True, capacity: Optional[int] = None,
                 **kwargs: Any) -> None:
        if max_fpr is not None and max_fpr != 1:
            raise TypeError(
                "BinaryAUROC: max_fpr is not supported by syncfree (the partial AUC's McClish correction "
                "branches on the curve's values). Drop max_fpr, or keep torchmetrics for the partial AUC."
            )
        super().__init__(thresholds, ignore_index, validate_args, kwargs, capacity)
        self.max_fpr = max_fpr

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        if self.capacity is not None:
            return self._exact(states, exact_curves.auroc)
        fpr, tpr, _ = self._roc(states)
        return torch.trapezoid(tpr, fpr)


class BinaryAveragePrecision(_BinnedBinary):
    """Average precision: the step-wise area under the binned precision-recall curve."""
    higher_is_better = True

    def __init__(self, thresholds: Thresholds = None, ignore_index: Optional[int] = None,
                 validate_args: bool = True, capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(thresholds, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        if self.capacity is not None:
            return self._exact(states, partial(exact_curves.average_precision, no_positives=0.0))
        precision, recall = self._pr_curve(states)
        precision = torch.nan_to_num(precision, nan=0.0, posinf=_INF, neginf=-_INF)
        recall = torch.nan_to_num(recall, nan=0.0, posinf=_INF, neginf=-_INF)
        return -torch.sum((recall[1:] - recall[:-1]) * precision[:-1])
