"""Multiclass AUROC, average precision, ROC and precision-recall curves: one-vs-rest binary curves.

As for the binary curves (:mod:`syncfree.curves`): ``thresholds=`` (an int ``n``: ``linspace(0, 1,
n)``; a list of floats in ``[0, 1]``; a 1-d tensor) gives torchmetrics' value with the same
thresholds; ``thresholds=None`` (torchmetrics' default) the exact value, from a bounded device
buffer of samples (``capacity=``, see :mod:`syncfree.exact_curves`); the exact curves (lists of one
curve per class, as torchmetrics) read their lengths in ``compute``.

Inputs, as torchmetrics: ``preds`` ``(N, C, ...)`` float scores, ``target`` ``(N, ...)`` labels in
``[0, C)`` or ``ignore_index``. Scores outside ``[0, 1]`` (over the entries not ignored, decided per
batch on the device) are logits: softmax over the class dimension. NaN scores are never positive.

State: ``counts`` (C x 2 x (T + 1), int64): for class ``c`` and target "not c" / "c", how many
predictions have ``k`` thresholds ``<= pred[:, c]`` (``searchsorted``); one ``put_`` per update.
Entries of ignored or bad targets fall into a scratch bin; bad targets (not in ``[0, C)``, not
``ignore_index``) are counted in ``_bad_targets`` and reported by :func:`syncfree.to_host` /
``compute(check=True)`` (``ValueError`` with ``validate_args=True``, a warning otherwise).

``average``: ``"macro"`` (mean over the classes), ``"weighted"`` (by the number of positives of each
class), ``"none"``/``None`` (per class). As torchmetrics, classes whose score is NaN are left out of
the averages (without its warning, which would need a host read).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from torch import Tensor

from syncfree import exact_curves
from syncfree._labels import _check_num_classes
from syncfree.curves import Thresholds, _count_at_most, _safe_div, _thresholds
from syncfree.host import report_counters
from syncfree.metric import Metric

_BAD = "{metric}: {count} target value(s) outside [0, num_classes) and not ignore_index were excluded"
_AVERAGES = ("macro", "weighted", "none", None)
_INF = math.inf


def _reduce(scores: Tensor, average: Optional[str], weights: Tensor) -> Tensor:
    """Per-class ``scores`` averaged without the NaN ones (no host read)."""
    if average in (None, "none"):
        return scores
    ok = ~torch.isnan(scores)
    values = torch.where(ok, scores, torch.zeros_like(scores))
    if average == "macro":
        return values.sum() / ok.sum()
    w = torch.where(ok, weights.to(values.dtype), torch.zeros_like(values))
    return (values * _safe_div(w, w.sum().expand_as(w), 0.0)).sum()


def binned_auroc(tps: Tensor, fps: Tensor, tns: Tensor, fns: Tensor) -> Tensor:
    """Area under each row's binned ROC curve (trapezoidal rule); counts ``(K, T)``."""
    tpr = _safe_div(tps, tps + fns, 0.0).flip(-1)
    fpr = _safe_div(fps, fps + tns, 0.0).flip(-1)
    return torch.trapezoid(tpr, fpr, dim=-1)


def binned_average_precision(tps: Tensor, fps: Tensor, fns: Tensor) -> Tensor:
    """Step-wise area under each row's binned precision-recall curve; counts ``(K, T)``."""
    precision = torch.nan_to_num(_safe_div(tps, tps + fps, math.nan), nan=0.0)
    recall = torch.nan_to_num(_safe_div(tps, tps + fns, math.nan), nan=0.0)
    precision = torch.cat([precision, torch.ones_like(precision[:, :1])], -1)
    recall = torch.cat([recall, torch.zeros_like(recall[:, :1])], -1)
    return -torch.sum((recall[:, 1:] - recall[:, :-1]) * precision[:, :-1], -1)


def binned_roc(tps: Tensor, fps: Tensor, tns: Tensor, fns: Tensor, thresholds: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """(fpr, tpr) ``(K, T)`` and the thresholds, decreasing."""
    tpr = _safe_div(tps, tps + fns, 0.0).flip(-1)
    fpr = _safe_div(fps, fps + tns, 0.0).flip(-1)
    return fpr, tpr, thresholds.flip(0)


def binned_pr_curve(tps: Tensor, fps: Tensor, fns: Tensor, thresholds: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """(precision, recall) ``(K, T + 1)`` (precision ends with 1, recall with 0) and the thresholds."""
    precision = _safe_div(tps, tps + fps, math.nan)
    recall = _safe_div(tps, tps + fns, math.nan)
    precision = torch.cat([precision, torch.ones_like(precision[:, :1])], -1)
    recall = torch.cat([recall, torch.zeros_like(recall[:, :1])], -1)
    return precision, recall, thresholds.clone()


def interp(x: Tensor, xp: Tensor, fp: Tensor) -> Tensor:
    """Piecewise-linear ``fp(xp)`` at ``x`` (``xp`` increasing), extended past both ends by the first
    and last segments; a zero-width segment has slope 0. torchmetrics' interpolation, on the device."""
    slope = _safe_div(fp[1:] - fp[:-1], xp[1:] - xp[:-1], 0.0)
    offset = fp[:-1] - slope * xp[:-1]
    segment = (x.unsqueeze(1) >= xp.unsqueeze(0)).sum(1).sub(1).clamp(0, slope.shape[0] - 1)
    return slope[segment] * x + offset[segment]


def macro_curve(xs: Sequence[Tensor], ys: Sequence[Tensor], thresholds: Tensor,
                descending: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """One curve for per-class curves (``xs[c]``, ``ys[c]``): every class's ``x`` values sorted, the
    mean of the classes' ``y`` interpolated there, and ``thresholds`` (every class's, concatenated)
    sorted (torchmetrics' ``average="macro"`` curve; the classes summed in order, as it does)."""
    grid = torch.cat(list(xs)).sort().values
    mean = torch.zeros_like(grid)
    for x, y in zip(xs, ys):
        mean += interp(grid, x, y)
    return grid, mean / len(xs), thresholds.sort(descending=descending).values


def exact_points(curves: List[Tuple[Tensor, Tensor, Tensor]], points: Any, average: Optional[str],
                 descending: bool) -> Any:
    """Exact curves (:func:`exact_curves.clf_curves`, one per class or label, or one for ``"micro"``)
    turned into ``points`` (``roc_points`` or ``pr_points``): lists of per-class tensors (torchmetrics'
    exact form), the one curve for ``"micro"``, or the ``"macro"`` curve."""
    xs, ys, thresholds = zip(*(points(*curve) for curve in curves))
    if average == "micro":
        return xs[0], ys[0], thresholds[0]
    if average == "macro":
        return macro_curve(xs, ys, torch.cat(thresholds), descending)
    return list(xs), list(ys), list(thresholds)


class _BinnedMulticlass(Metric):
    """Per-class, per-threshold one-vs-rest counts (see the module docstring)."""

    higher_is_better: Optional[bool] = True
    _bad_message = _BAD  # what a bad target count says (multilabel: other words)

    def __init__(self, num_classes: Optional[int], average: Optional[str], thresholds: Thresholds,
                 ignore_index: Optional[int], validate_args: bool, kwargs: Any, capacity: Optional[int]) -> None:
        super().__init__(**kwargs)
        owner = type(self).__name__
        C = _check_num_classes(owner, num_classes)
        if average not in _AVERAGES:
            raise ValueError(f"{owner}: average must be one of {_AVERAGES}, got {average!r}")
        if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, int)):
            raise ValueError(f"{owner}: ignore_index must be None or an int, got {ignore_index!r}")
        self.num_classes = C
        self.average = average
        self.ignore_index = ignore_index
        self.validate_args = validate_args
        self.capacity = exact_curves.check_capacity(owner, capacity, thresholds)
        if self.capacity is not None:  # thresholds=None: the samples, (scores..., target + 1) per row
            self.thresholds = None
            exact_curves.add_buffer(self, self.capacity, self._sample_width(C))
            self.add_constant("_classes", torch.arange(C, dtype=torch.int64))
            self.add_state("_bad_targets", (), torch.int64)
            self.add_check("_bad_targets", "error" if validate_args else "warn", self._bad_message, state=False)
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
        self.add_constant("_classes", torch.arange(C, dtype=torch.int64))
        self.add_constant("_class_base", torch.arange(C, dtype=torch.int64) * (2 * (T + 1)))
        self._scratch_bin = C * 2 * (T + 1) + 1  # after counts and _bad_targets
        self.add_state_group("_hist", [("counts", (C, 2, T + 1), "sum"), ("_bad_targets", (), "sum")],
                             torch.int64, scratch=1)
        self.add_check("_bad_targets", "error" if validate_args else "warn", self._bad_message, state=False)

    @staticmethod
    def _sample_width(C: int) -> int:
        """Columns of one sample in the exact buffer: C scores and the target's code."""
        return C + 1

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        owner = type(self).__name__
        C = self.num_classes
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
            raise TypeError(f"{owner}.update: preds and target must be tensors")
        if not preds.is_floating_point():
            raise ValueError(f"{owner}.update: preds must be floating point scores (probabilities or logits), "
                             f"got {preds.dtype}")
        if target.is_floating_point() or target.is_complex():
            raise ValueError(f"{owner}.update: target must be an integer tensor of labels, got {target.dtype}")
        if preds.ndim < 2 or preds.shape[1] != C or target.shape != preds.shape[:1] + preds.shape[2:]:
            raise ValueError(f"{owner}.update: preds must have shape (N, num_classes={C}, ...) and target (N, ...), "
                             f"got {tuple(preds.shape)} and {tuple(target.shape)}")
        p = preds.detach().movedim(1, -1).reshape(-1, C)
        t = target.reshape(-1).long()
        valid = (t >= 0) & (t < C)
        if self.ignore_index is not None:
            ignored = t == self.ignore_index
            valid = valid & ~ignored
            S._bad_targets.add_(torch.count_nonzero(~(valid | ignored)))
            inside = ((p.clamp(0, 1) == p) | ignored.unsqueeze(1)).all()
        else:
            S._bad_targets.add_(torch.count_nonzero(~valid))
            inside = (p.clamp(0, 1) == p).all()
        p = torch.where(inside, p, p.softmax(1))
        if self.capacity is not None:
            code = t.add(1).to(S.samples.dtype).unsqueeze(1)
            exact_curves.append(S, torch.cat([p.to(S.samples.dtype), code], 1), valid, self._columns)
            return
        if p.dtype != self._sorted.dtype:
            p = p.to(self._sorted.dtype)
        p = torch.nan_to_num(p, nan=-_INF, posinf=_INF, neginf=-_INF)
        bucket = _count_at_most(self._sorted, p.reshape(-1)).view(-1, C)
        positive = (t.unsqueeze(1) == self._classes).long()
        index = bucket.add_(positive, alpha=self._T + 1).add_(self._class_base)
        index = torch.where(valid.unsqueeze(1), index, self._scratch_bin).reshape(-1)
        S._hist.put_(index, torch.ones_like(index), accumulate=True)

    def check_counters(self, states: Optional[Mapping[str, Tensor]] = None) -> List[Tuple[Tensor, str, str]]:
        states = self.states() if states is None else states
        return [(states[name], policy, message) for name, policy, message in self._checks if policy != "off"]

    def batch_states(self, *args: Any, **kwargs: Any) -> Dict[str, Tensor]:
        """A batch's states; exact: a sample buffer of the batch's size (see ``exact_curves.batch_view``)."""
        preds = args[0] if args else kwargs.get("preds")
        if self.capacity is None or not isinstance(preds, Tensor):
            return super().batch_states(*args, **kwargs)
        samples = self.state.view.samples
        rows = min(self.capacity, preds.numel() // self.num_classes)
        view = exact_curves.batch_view(rows, self._sample_width(self.num_classes), samples.dtype, samples.device)
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
        """``score`` (:func:`exact_curves.auroc` or ``average_precision``) of every class, one-vs-rest,
        averaged; NaN when samples were dropped."""
        scores, labels, used = exact_curves.split(states)
        positive = labels.unsqueeze(0) == self._classes.unsqueeze(1)
        per_class = score(scores.T, positive, used.unsqueeze(0).expand_as(positive)).to(scores.dtype)
        value = _reduce(per_class, self.average, positive.logical_and(used).sum(-1))
        return exact_curves.flag_overflow(value, states)

    def _binned_thresholds(self) -> Tensor:
        """The thresholds of a binned metric (the curves always are: checked in their ``__init__``)."""
        thresholds = self.thresholds
        assert thresholds is not None
        return thresholds

    def _stats(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """(tps, fps, tns, fns) per class and threshold (thresholds in the given order), and the
        positives of every class."""
        counts = states["counts"]
        above = counts.flip(-1).cumsum(-1).flip(-1)  # [..., b]: entries with at least b thresholds <= pred
        positive = above[..., 1:].index_select(-1, self._rank)
        fps, tps = positive[:, 0], positive[:, 1]
        return tps, fps, above[:, 0, :1] - fps, above[:, 1, :1] - tps, above[:, 1, 0]


class MulticlassAUROC(_BinnedMulticlass):
    """One-vs-rest area under the binned ROC curve of every class (trapezoidal rule), averaged."""

    def __init__(self, num_classes: Optional[int] = None, average: Optional[str] = "macro",
                 thresholds: Thresholds = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                 capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(num_classes, average, thresholds, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        if self.capacity is not None:
            return self._exact(states, exact_curves.auroc)
        tps, fps, tns, fns, support = self._stats(states)
        return _reduce(binned_auroc(tps, fps, tns, fns), self.average, support)


class MulticlassAveragePrecision(_BinnedMulticlass):
    """One-vs-rest step-wise area under the binned precision-recall curve of every class, averaged."""

    def __init__(self, num_classes: Optional[int] = None, average: Optional[str] = "macro",
                 thresholds: Thresholds = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                 capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(num_classes, average, thresholds, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        if self.capacity is not None:
            return self._exact(states, exact_curves.average_precision)
        tps, fps, _, fns, support = self._stats(states)
        return _reduce(binned_average_precision(tps, fps, fns), self.average, support)


class _MulticlassCurve(_BinnedMulticlass):
    """A curve. ``average=None`` (torchmetrics' default): one curve per class; ``"micro"``: one curve of
    every (sample, class) entry; ``"macro"``: the classes' curves interpolated onto one grid and
    averaged (``macro_curve``). Binned (``thresholds=``): from the counts, no host read. Exact
    (``thresholds=None``): from the sample buffer, one curve per class of its own length (lists, as
    torchmetrics), so ``compute`` reads the lengths (see :mod:`syncfree.exact_curves`)."""

    higher_is_better = None  # a curve, not a score

    def __init__(self, num_classes: Optional[int], thresholds: Thresholds, average: Optional[str],
                 ignore_index: Optional[int], validate_args: bool, kwargs: Any, capacity: Optional[int]) -> None:
        owner = type(self).__name__
        if average not in (None, "none", "micro", "macro"):
            raise ValueError(f"{owner}: average must be one of None, 'micro', 'macro', got {average!r}")
        super().__init__(num_classes, None, thresholds, ignore_index, validate_args, kwargs, capacity)
        self.curve_average = None if average == "none" else average

    def _curve_stats(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """(tps, fps, tns, fns) per class, or of all classes summed (one row) for ``"micro"``."""
        stats = self._stats(states)[:4]
        if self.curve_average == "micro":
            return tuple(counts.sum(0, keepdim=True) for counts in stats)  # type: ignore[return-value]
        return stats

    def _exact_points(self, states: Mapping[str, Tensor], points: Any, descending: bool) -> Any:
        """The exact curves' ``points``: the check counters are reported first (one read), then
        the curves' lengths are read."""
        report_counters(self._counters([states]))
        scores, labels, used = exact_curves.split(states)
        positive = labels.unsqueeze(0) == self._classes.unsqueeze(1)
        scores, used = scores.T, used.unsqueeze(0).expand_as(positive)
        if self.curve_average == "micro":
            scores, positive, used = scores.reshape(1, -1), positive.reshape(1, -1), used.reshape(1, -1)
        return exact_points(exact_curves.clf_curves(scores, positive, used), points, self.curve_average, descending)


class MulticlassROC(_MulticlassCurve):
    """(fpr, tpr, thresholds): binned, ``(C, T)`` one-vs-rest rates per class and thresholds ``(T,)``
    decreasing; exact, lists of one curve per class (as torchmetrics)."""

    def __init__(self, num_classes: Optional[int] = None, thresholds: Thresholds = None,
                 average: Optional[str] = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                 capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(num_classes, thresholds, average, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        if self.capacity is not None:
            return self._exact_points(states, exact_curves.roc_points, descending=True)  # type: ignore[no-any-return]
        fpr, tpr, thresholds = binned_roc(*self._curve_stats(states), self._binned_thresholds())
        if self.curve_average == "micro":
            return fpr[0], tpr[0], thresholds
        if self.curve_average == "macro":
            return macro_curve(list(fpr), list(tpr), thresholds.repeat(fpr.shape[0]), descending=True)
        return fpr, tpr, thresholds


class MulticlassPrecisionRecallCurve(_MulticlassCurve):
    """(precision, recall, thresholds): binned, ``(C, T + 1)`` per class (precision ends with 1, recall
    with 0) and thresholds ``(T,)`` as given; exact, lists of one curve per class (as torchmetrics)."""

    def __init__(self, num_classes: Optional[int] = None, thresholds: Thresholds = None,
                 average: Optional[str] = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                 capacity: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(num_classes, thresholds, average, ignore_index, validate_args, kwargs, capacity)

    def _compute(self, states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]
        if self.capacity is not None:
            points: Any = exact_curves.pr_points
            if self.curve_average != "micro":  # torchmetrics tests "every label is 0" for each class's curve
                _, labels, used = exact_curves.split(states)
                points = partial(points, labels_all_zero=((labels == 0) | ~used).all())
            return self._exact_points(states, points, descending=False)  # type: ignore[no-any-return]
        tps, fps, _, fns = self._curve_stats(states)
        precision, recall, thresholds = binned_pr_curve(tps, fps, fns, self._binned_thresholds())
        if self.curve_average == "micro":
            return precision[0], recall[0], thresholds
        if self.curve_average == "macro":
            return macro_curve(list(precision), list(recall), thresholds.repeat(precision.shape[0]),
                               descending=False)
        return precision, recall, thresholds
