"""Binned multilabel AUROC, average precision, ROC and precision-recall curves: one binary curve per
label, at fixed thresholds.

Inputs, as torchmetrics: ``preds`` ``(N, L, ...)`` float scores, ``target`` ``(N, L, ...)`` of 0, 1 or
``ignore_index``. Scores outside ``[0, 1]`` (any entry of the batch, decided on the device) are
logits: sigmoid. NaN scores are never positive. ``thresholds=`` (an int ``n``: ``linspace(0, 1, n)``;
a list of floats; a 1-d tensor) gives torchmetrics' binned value; ``thresholds=None`` (torchmetrics'
default) the exact values from a bounded device buffer of samples (``capacity=`` samples per
rank, each its L scores and L target codes; see :mod:`syncfree.exact_curves`): AUROC and average
precision without a host read; the exact ROC and precision-recall curves (a list of one curve per
label, as torchmetrics) read their lengths in ``compute``.

State: the layout of :mod:`syncfree.multiclass_curves` with labels for classes: ``counts``
(L x 2 x (T + 1), int64), for label ``l`` and target 0 / 1, how many scores have ``k`` thresholds
``<= pred[:, l]``; one ``put_`` per update. Ignored entries fall into a scratch bin; targets that are
not 0, 1 or ``ignore_index`` are counted in ``_bad_targets`` and reported by
:func:`syncfree.to_host` / ``compute(check=True)``.

``average`` (AUROC, average precision): ``"micro"`` (the counts of every label summed: one binary
curve), ``"macro"``, ``"weighted"`` (by each label's positives), ``"none"``/``None``; labels whose
score is NaN are left out of the averages, as torchmetrics does. The curves return one per label.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Mapping, Optional, Tuple

import torch
from torch import Tensor

from syncfree import exact_curves
from syncfree.curves import Thresholds, _count_at_most
from syncfree.host import report_counters
from syncfree.multiclass_curves import (
    _INF,
    _BinnedMulticlass,
    _reduce,
    binned_auroc,
    binned_average_precision,
    binned_pr_curve,
    binned_roc,
    exact_points,
)

_AVERAGES = ("micro", "macro", "weighted", "none", None)
_BAD = "{metric}: {count} target value(s) not 0, 1 or ignore_index were excluded"


class _BinnedMultilabel(_BinnedMulticlass):
    """Per-label, per-threshold binary counts (see the module docstring)."""

    _bad_message = _BAD

    def __init__(self, num_labels: Optional[int], average: Optional[str], thresholds: Thresholds,
                 ignore_index: Optional[int], validate_args: bool, kwargs: Any, capacity: Optional[int] = None) -> None:
        owner = type(self).__name__
        if average not in _AVERAGES:
            raise ValueError(f"{owner}: average must be one of {_AVERAGES}, got {average!r}")
        super().__init__(num_labels, None, thresholds, ignore_index, validate_args, kwargs, capacity)
        self.average = average
        self.num_labels = self.num_classes

    @staticmethod
    def _sample_width(C: int) -> int:
        """Columns of one sample in the exact buffer: L scores and L target codes (0: ignored or bad)."""
        return 2 * C

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        owner = type(self).__name__
        L = self.num_labels
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
            raise TypeError(f"{owner}.update: preds and target must be tensors")
        if not preds.is_floating_point():
            raise ValueError(f"{owner}.update: preds must be floating point scores (probabilities or logits), "
                             f"got {preds.dtype}")
        if target.is_floating_point() or target.is_complex():
            raise ValueError(f"{owner}.update: target must be an integer tensor of 0/1 labels, got {target.dtype}")
        if preds.ndim < 2 or preds.shape[1] != L or target.shape != preds.shape:
            raise ValueError(f"{owner}.update: preds and target must both have shape (N, num_labels={L}, ...), "
                             f"got {tuple(preds.shape)} and {tuple(target.shape)}")
        p = preds.detach().movedim(1, -1).reshape(-1, L)
        t = target.movedim(1, -1).reshape(-1, L).long()
        valid = (t == 0) | (t == 1)
        if self.ignore_index is not None:
            ignored = t == self.ignore_index
            valid = valid & ~ignored
            S._bad_targets.add_(torch.count_nonzero(~(valid | ignored)))
        else:
            S._bad_targets.add_(torch.count_nonzero(~valid))
        p = torch.where((p.clamp(0, 1) == p).all(), p, p.sigmoid())
        if self.capacity is not None:  # a row per sample: its scores, then target + 1 where valid, else 0
            code = torch.where(valid, t + 1, 0).to(S.samples.dtype)
            keep = torch.ones(p.shape[0], dtype=torch.bool, device=p.device)
            exact_curves.append(S, torch.cat([p.to(S.samples.dtype), code], 1), keep, self._columns)
            return
        if p.dtype != self._sorted.dtype:
            p = p.to(self._sorted.dtype)
        p = torch.nan_to_num(p, nan=-_INF, posinf=_INF, neginf=-_INF)
        bucket = _count_at_most(self._sorted, p.reshape(-1)).view(-1, L)
        index = bucket.add_((t == 1).long(), alpha=self._T + 1).add_(self._class_base)
        index = torch.where(valid, index, self._scratch_bin).reshape(-1)
        S._hist.put_(index, torch.ones_like(index), accumulate=True)

    def _samples(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
        """(scores, positive, used), each (L, rows), of the sample buffer."""
        L = self.num_labels
        samples = states["samples"]
        scores, codes = samples[:, :L].T, samples[:, L:].T
        return scores, codes == 2, codes > 0

    def _exact(self, states: Mapping[str, Tensor], score: Any) -> Tensor:
        """``score`` of every label (or of all entries as one curve, micro), averaged; NaN when samples
        were dropped."""
        scores, positive, used = self._samples(states)
        if self.average == "micro":
            scores, positive, used = scores.reshape(1, -1), positive.reshape(1, -1), used.reshape(1, -1)
        per_label = score(scores, positive, used).to(scores.dtype)
        value = self._averaged(per_label, positive.logical_and(used).sum(-1))
        return exact_curves.flag_overflow(value, states)

    def _stats(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        if self.average == "micro":  # every label's counts summed: one binary curve
            states = {"counts": states["counts"].sum(0, keepdim=True)}
        return super()._stats(states)

    def _averaged(self, scores: Tensor, support: Tensor) -> Tensor:
        return scores[0] if self.average == "micro" else _reduce(scores, self.average, support)


class MultilabelAUROC(_BinnedMultilabel):
    """Area under each label's ROC curve (binned: trapezoidal rule; or exact), averaged."""

    def __init__(self, num_labels: Optional[int] = None, average: Optional[str] = "macro",
                 thresholds: Thresholds = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                 capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(num_labels, average, thresholds, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        if self.capacity is not None:
            return self._exact(states, exact_curves.auroc)
        tps, fps, tns, fns, support = self._stats(states)
        return self._averaged(binned_auroc(tps, fps, tns, fns), support)


class MultilabelAveragePrecision(_BinnedMultilabel):
    """Step-wise area under each label's precision-recall curve (binned, or exact), averaged."""

    def __init__(self, num_labels: Optional[int] = None, average: Optional[str] = "macro",
                 thresholds: Thresholds = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                 capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(num_labels, average, thresholds, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        if self.capacity is not None:
            # a label without positives scores 0, as torchmetrics' multilabel (a class: NaN)
            return self._exact(states, partial(exact_curves.average_precision, no_positives=0.0))
        tps, fps, _, fns, support = self._stats(states)
        return self._averaged(binned_average_precision(tps, fps, fns), support)


class _MultilabelCurve(_BinnedMultilabel):
    """A curve per label: binned (``thresholds=``) from the counts, no host read; exact
    (``thresholds=None``) from the sample buffer, lists of one curve per label of its own length (as
    torchmetrics), so ``compute`` reads the lengths (see :mod:`syncfree.exact_curves`)."""

    higher_is_better = None  # a curve, not a score

    def __init__(self, num_labels: Optional[int], thresholds: Thresholds, ignore_index: Optional[int],
                 validate_args: bool, capacity: Optional[int], kwargs: Any) -> None:
        super().__init__(num_labels, None, thresholds, ignore_index, validate_args, kwargs, capacity)

    def _exact_points(self, states: Mapping[str, Tensor], points: Any) -> Any:
        report_counters(self._counters([states]))
        return exact_points(exact_curves.clf_curves(*self._samples(states)), points, None, descending=False)


class MultilabelROC(_MultilabelCurve):
    """(fpr, tpr, thresholds): binned, ``(L, T)`` rates per label and thresholds ``(T,)`` decreasing;
    exact, lists of one curve per label."""

    def __init__(self, num_labels: Optional[int] = None, thresholds: Thresholds = None,
                 ignore_index: Optional[int] = None, validate_args: bool = True, capacity: Optional[int] = None,
                 **kwargs: Any) -> None:
        super().__init__(num_labels, thresholds, ignore_index, validate_args, capacity, kwargs)

    def _compute(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        if self.capacity is not None:
            return self._exact_points(states, exact_curves.roc_points)  # type: ignore[no-any-return]
        tps, fps, tns, fns, _ = self._stats(states)
        return binned_roc(tps, fps, tns, fns, self._binned_thresholds())


class MultilabelPrecisionRecallCurve(_MultilabelCurve):
    """(precision, recall, thresholds): binned, ``(L, T + 1)`` per label and thresholds ``(T,)`` as
    given; exact, lists of one curve per label."""

    def __init__(self, num_labels: Optional[int] = None, thresholds: Thresholds = None,
                 ignore_index: Optional[int] = None, validate_args: bool = True, capacity: Optional[int] = None,
                 **kwargs: Any) -> None:
        super().__init__(num_labels, thresholds, ignore_index, validate_args, capacity, kwargs)

    def _compute(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        if self.capacity is not None:
            return self._exact_points(states, exact_curves.pr_points)  # type: ignore[no-any-return]
        tps, fps, _, fns, _ = self._stats(states)
        return binned_pr_curve(tps, fps, fns, self._binned_thresholds())
