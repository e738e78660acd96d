"""Classification metrics (binary and multiclass) built on per-class tp/fp/tn/fn counts.

States are int64 counts on the metric's device. Confusion matrices, binary stat scores and
multiclass stat scores with at most ``_HIST_MAX_CLASSES`` classes hold ``confmat`` (C x C, rows:
target, columns: prediction) and ``_bad_labels`` (2 x C bins whose sum is the bad-label count),
views into ONE flat buffer: an update computes every entry's bin and adds them all with a single
``put_(..., accumulate=True)`` (fixed size, no mask, never a host sync); tp/fp/tn/fn are derived
from the matrix in ``compute`` (see :class:`_Labels`). Multiclass stat scores with more classes keep per-class
``tp``, ``fp``, ``tn``, ``fn`` (``(num_classes,)``) and ``_bad_label_count`` instead.

Labels out of range (targets not in ``[0, num_classes)`` and not ``ignore_index``; integer preds
out of range) are excluded from the counts and counted. :func:`syncfree.to_host` then raises
``ValueError`` when ``validate_args=True`` (torchmetrics raises at once in that case) and warns
when ``validate_args=False``.

Float preds: binary preds outside ``[0, 1]`` are treated as logits (sigmoid, decided per batch
on the device); multiclass preds ``(N, C, ...)`` are reduced with argmax, or with ``top_k``
(a sample counts as correct when its target is in its top k, else as its top-1 class).

Not supported (``TypeError``): ``task="multilabel"``, ``multidim_average="samplewise"``,
``num_classes=None`` for multiclass metrics (states need a fixed size).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch
from torch import Tensor

from syncfree.metric import Metric, host_scalar

_INT64 = torch.int64
_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
_AVERAGES = ("micro", "macro", "weighted", "none")
_NORMALIZE = ("true", "pred", "all", "none", None)
_BAD_LABELS = ("{metric}: {count} value(s) with a label outside the valid range were excluded "
               "(targets must be in [0, num_classes) or ignore_index; integer preds in [0, num_classes))")


# ---- argument checks (host only) --------------------------------------------------------
def _check_common(owner: str, multidim_average: str, ignore_index: Optional[int]) -> None:
    if multidim_average != "global":
        raise TypeError(
            f"{owner}: multidim_average={multidim_average!r} is not supported by syncfree (per-sample "
            "states grow with the data). Use multidim_average='global', or keep torchmetrics for this metric."
        )
    if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, int)):
        raise ValueError(f"{owner}: ignore_index must be None or an int, got {ignore_index!r}")


def _check_zero_division(owner: str, zero_division: Any) -> float:
    if zero_division not in (0, 1):
        raise ValueError(f"{owner}: zero_division must be 0 or 1, got {zero_division!r}")
    return float(zero_division)


def _check_num_classes(owner: str, num_classes: Any) -> int:
    if num_classes is None:
        raise TypeError(
            f"{owner}: num_classes is required: syncfree keeps fixed-size per-class states on the device. "
            "Pass num_classes=<number of classes>."
        )
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"{owner}: num_classes must be an int larger than 1, got {num_classes!r}")
    return num_classes


def _check_target(owner: str, preds: Tensor, target: Tensor) -> None:
    if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{owner}.update: preds and target must be tensors")
    if target.is_floating_point() or target.is_complex():
        raise TypeError(
            f"{owner}.update: target must hold integer class labels, got dtype {target.dtype}. "
            "Convert it with target.long()."
        )


# ---- batch -> labels ----------------------------------------------------------------------
def _valid_and_bad(t: Tensor, pl: Tensor, num_classes: int, ignore_index: Optional[int]) -> Tuple[Tensor, Tensor]:
    """(keep mask, count of non-ignored entries with an out-of-range label)."""
    in_range = (t >= 0) & (t < num_classes) & (pl >= 0) & (pl < num_classes)
    if ignore_index is None:
        return in_range, (~in_range).sum()
    ignored = t == ignore_index
    return in_range & ~ignored, (~in_range & ~ignored).sum()


def _class_stats(t: Tensor, pl: Tensor, keep: Tensor, num_classes: int) -> Dict[str, Tensor]:
    """Per-class tp/fp/tn/fn of the kept entries (scatter_add_ with a fixed size, no sync)."""
    k = keep.long()
    tc = torch.where(keep, t, torch.zeros_like(t))
    pc = torch.where(keep, pl, torch.zeros_like(pl))
    zeros = torch.zeros(num_classes, dtype=torch.int64, device=t.device)
    tp = zeros.clone().scatter_add_(0, tc, k * (pl == t).long())
    predicted = zeros.clone().scatter_add_(0, pc, k)
    actual = zeros.scatter_add_(0, tc, k)
    fp = predicted - tp
    fn = actual - tp
    tn = k.sum() - tp - fp - fn
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}


def _build_luts(num_classes: int, ignore_index: Optional[int], float_preds: bool) -> Tuple[Tensor, Tensor]:
    """(bin, weight) of every (clamped target, pred) pair, for the flat ``_hist`` buffer.

    Targets are clamped to ``[-1, C]`` (``-1`` and ``C`` stand for every out-of-range value) and,
    when ``ignore_index`` is outside ``[0, C)``, ignored entries are marked ``C + 1`` first. Preds
    are class indices in ``[0, C)`` (float scores) or integer labels clamped to ``[-1, C]``. The
    tables are indexed by ``target * K + pred`` (K = number of pred values); ``torch.take`` wraps
    the negative indices of target ``-1`` to the end. A bad entry goes to the first bad-label
    bin (index ``C * C``), an ignored one has weight 0.
    """
    c = num_classes
    ignore_out = ignore_index is not None and not 0 <= ignore_index < c
    rows = range(-1, c + 2 if ignore_out else c + 1)
    cols = range(0, c) if float_preds else range(-1, c + 1)
    k, size = len(cols), len(rows) * len(cols)
    bins, weights = [0] * size, [1] * size
    for r in rows:
        for p in cols:
            i = (r * k + p) % size
            if (r == c + 1) if ignore_out else (r == ignore_index):
                weights[i] = 0
            elif 0 <= r < c and 0 <= p < c:
                bins[i] = r * c + p
            else:
                bins[i] = c * c
    return torch.tensor(bins, dtype=torch.int64), torch.tensor(weights, dtype=torch.int64)


# A stat-score metric with at most this many classes keeps a confusion matrix (C * C counts,
# updated by ONE put_); above it, per-class tp/fp/tn/fn (4 * C counts, more ops). Confusion
# matrices use lookup tables (int preds, ignore_index) up to this many classes, masks above.
_HIST_MAX_CLASSES = 128


class _Labels(Metric):
    """Label handling shared by stat scores and confusion matrices.

    The hist layout is ONE flat int64 buffer ``_hist = [confmat (C*C) | _bad_labels (2 x C)]``.
    Every counted entry of a batch lands in exactly one bin, so an update is a single
    ``put_(index, ones, accumulate=True)``. With float scores and no ``ignore_index`` (the hot
    path) the bin is ``clamp(target, -1, C) * C + pred``: a target ``>= C`` lands in row 0 of
    ``_bad_labels``, a target ``< 0`` in row 1 (``put_`` wraps the negative index to the end of
    the buffer). Integer preds and ``ignore_index`` go through a lookup table (``torch.take``;
    ignored entries get weight 0). No mask, no data-dependent shape, no sync. The bad-label count
    reported by ``to_host`` is ``_bad_labels.sum()``.
    """

    num_classes: int
    ignore_index: Optional[int]

    def _init_hist(self, num_classes: int, ignore_index: Optional[int], validate_args: bool,
                   lut: bool = True) -> None:
        c = num_classes
        self._hist_layout = True
        self._ignore_out = ignore_index is not None and not 0 <= ignore_index < c
        self._use_lut = lut
        self._ones: Dict[int, Tensor] = {}
        self.add_state_group("_hist", [("confmat", (c, c), "sum"), ("_bad_labels", (2, c), "sum")], torch.int64)
        self.add_check("_bad_labels", "error" if validate_args else "warn", _BAD_LABELS, state=False)
        if lut:
            bins, weights = _build_luts(c, ignore_index, True)
            self.add_constant("_lut_scores", bins)
            self.add_constant("_lut_scores_w", weights)
            bins, weights = _build_luts(c, ignore_index, False)
            self.add_constant("_lut_labels", bins)
            self.add_constant("_lut_labels_w", weights)

    def check_counters(self) -> List[Tuple[Tensor, str, str]]:
        if not getattr(self, "_hist_layout", False):
            return super().check_counters()
        bad = self.states()["_bad_labels"].sum()
        return [(bad, policy, message) for _, policy, message in self._checks if policy != "off"]

    def _upgrade_v1(self, states: Dict[str, Tensor]) -> Dict[str, Tensor]:
        """A version-1 confusion matrix checkpoint (``_bad_label_count``) in the version-2 layout."""
        if getattr(self, "_hist_layout", False) and "confmat" in states and "_bad_label_count" in states:
            states = dict(states)
            bad = torch.zeros(2, self.num_classes, dtype=torch.int64)
            bad[0, 0] = states.pop("_bad_label_count").to(torch.int64).reshape(())
            states["_bad_labels"] = bad
        return states

    def _on_apply(self) -> None:
        self._ones = {}

    def _ones_like(self, index: Tensor) -> Tensor:
        n = len(index)
        ones = self._ones.get(n)
        if ones is None:
            if len(self._ones) > 16:
                self._ones.clear()
            ones = self._ones[n] = torch.ones(n, dtype=torch.int64, device=index.device)
        return ones

    def _scatter(self, S: Any, t: Tensor, pl: Tensor, scores: bool) -> None:
        """Add every entry to its ``_hist`` bin (``scores``: preds are class indices in [0, C))."""
        c = self.num_classes
        ignore = self.ignore_index is not None
        if scores and not ignore:
            index = torch.add(pl, t.clamp(-1, c), alpha=c)
            S._hist.put_(index, self._ones_like(index), accumulate=True)
            return
        if self._use_lut:
            tc = t.clamp(-1, c)
            if self._ignore_out:
                tc.masked_fill_(t == self.ignore_index, c + 1)
            if scores:
                code = torch.add(pl, tc, alpha=c)
                bins, weights = self._lut_scores, self._lut_scores_w
            else:
                code = torch.add(pl.clamp(-1, c), tc, alpha=c + 2)
                bins, weights = self._lut_labels, self._lut_labels_w
            index = torch.take(bins, code)
            weight = torch.take(weights, code) if ignore else self._ones_like(index)
        else:
            in_range = (t >= 0) & (t < c) & (pl >= 0) & (pl < c)
            if ignore:
                ignored = t == self.ignore_index
                in_range = in_range & ~ignored
                weight = (~ignored).long()
            else:
                weight = self._ones_like(t)
            index = torch.where(in_range, t * c + pl, c * c)
        S._hist.put_(index, weight, accumulate=True)

    # ---- updates: a fast path for the common inputs, the general one otherwise ---------------
    def _multiclass_update(self, S: Any, preds: Tensor, target: Tensor) -> None:
        """top_k = 1. Fast path: float scores (N, C), int64 targets (N,), no ignore_index."""
        if type(preds) is Tensor and type(target) is Tensor and self.ignore_index is None:
            ps, ts = preds.shape, target.shape
            c = self.num_classes
            if (len(ts) == 1 and len(ps) == 2 and ps[1] == c and ps[0] == ts[0]
                    and target.dtype is _INT64 and preds.dtype in _FLOATS):
                index = torch.add(preds.argmax(1), target.clamp(-1, c), alpha=c)
                ones = self._ones.get(ts[0])
                S._hist.put_(index, self._ones_like(index) if ones is None else ones, accumulate=True)
                return
        self._scatter(S, *self._multiclass_labels(preds, target, 1))

    def _binary_update(self, S: Any, preds: Tensor, target: Tensor) -> None:
        """Fast path: float preds (N,) without grad, int64 targets (N,), no ignore_index."""
        if type(preds) is Tensor and type(target) is Tensor and self.ignore_index is None:
            ps = preds.shape
            if (len(ps) == 1 and ps == target.shape and target.dtype is _INT64 and preds.dtype in _FLOATS
                    and not preds.requires_grad):
                # Probabilities when every value is in [0, 1], else logits (see _binary_labels).
                pl = torch.where((preds.clamp(0, 1) == preds).all(), preds, preds.sigmoid()) > self._threshold
                index = torch.add(pl, target.clamp(-1, 2), alpha=2)
                ones = self._ones.get(ps[0])
                S._hist.put_(index, self._ones_like(index) if ones is None else ones, accumulate=True)
                return
        self._scatter(S, *self._binary_labels(preds, target))

    # ---- batch -> (flat targets, flat preds, preds are class indices in [0, C)) ------------
    def _binary_labels(self, preds: Tensor, target: Tensor) -> Tuple[Tensor, Tensor, bool]:
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor) or target.dtype is not _INT64:
            _check_target(type(self).__name__, preds, target)
            target = target.long()
        if preds.shape != target.shape:
            raise ValueError(
                f"{type(self).__name__}.update: preds and target must have the same shape, got "
                f"{tuple(preds.shape)} and {tuple(target.shape)}"
            )
        if target.ndim != 1:
            preds, target = preds.reshape(-1), target.reshape(-1)
        if preds.is_floating_point():
            if preds.requires_grad:
                preds = preds.detach()
            # Probabilities when every value is in [0, 1], else logits: decided on the device
            # (NaN: clamp keeps it, NaN != NaN, so logits, as torchmetrics).
            probabilities = (preds.clamp(0, 1) == preds).all()
            return target, torch.where(probabilities, preds, preds.sigmoid()) > self._threshold, True
        return target, preds.long(), False

    def _multiclass_labels(self, preds: Tensor, target: Tensor, top_k: int) -> Tuple[Tensor, Tensor, bool]:
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor) or target.dtype is not _INT64:
            _check_target(type(self).__name__, preds, target)
            target = target.long()
        c = self.num_classes
        if preds.is_floating_point():
            ps, ts = preds.shape, target.shape
            if len(ps) != len(ts) + 1 or not ts or ps[0] != ts[0] or ps[1] != c or ps[2:] != ts[1:]:
                expected = (ts[0], c) + tuple(ts[1:]) if ts else None
                raise ValueError(
                    f"{type(self).__name__}.update: float preds must have shape (N, num_classes, ...) = "
                    f"{expected} for target of shape {tuple(ts)}, got {tuple(ps)}"
                )
            t = target if len(ts) == 1 else target.reshape(-1)
            if top_k == 1:
                pl = preds.argmax(1)
                return t, (pl if len(ts) == 1 else pl.reshape(-1)), True
            scores = preds.detach().movedim(1, -1).reshape(-1, c)
            top = scores.topk(top_k, dim=-1).indices
            hit = (top == t.unsqueeze(-1)).any(-1)
            # A hit counts as correct (pred = target), a miss as its top-1 class.
            return t, torch.where(hit, t, top[:, 0]), True
        if preds.shape != target.shape:
            raise ValueError(
                f"{type(self).__name__}.update: integer preds and target must have the same shape, got "
                f"{tuple(preds.shape)} and {tuple(target.shape)}"
            )
        if top_k != 1:
            raise ValueError(
                f"{type(self).__name__}.update: top_k={top_k} needs float scores of shape (N, num_classes, ...)"
            )
        if target.ndim != 1:
            preds, target = preds.reshape(-1), target.reshape(-1)
        return target, preds.long(), False


def _stats_of(states: Mapping[str, Tensor]) -> Dict[str, Tensor]:
    """Per-class tp/fp/tn/fn, from the confusion matrix when that is the layout."""
    if "confmat" not in states:
        return states  # type: ignore[return-value]
    cm = states["confmat"]
    tp = cm.diagonal()
    fp = cm.sum(0) - tp
    fn = cm.sum(1) - tp
    tn = cm.sum() - tp - fp - fn
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}


# ---- stats -> score -----------------------------------------------------------------------
def _div(num: Tensor, den: Tensor, zero: float, dtype: torch.dtype) -> Tensor:
    num, den = num.to(dtype), den.to(dtype)
    return torch.where(den != 0, num / den, torch.full_like(num, zero))


def _average(score: Tensor, average: str, tp: Tensor, fp: Tensor, fn: Tensor, top_k: int) -> Tensor:
    if average == "none":
        return score
    if average == "weighted":
        weights = (tp + fn).to(score.dtype)
    else:
        absent = (tp + fp + fn == 0) if top_k == 1 else (tp + fn == 0)
        weights = torch.where(absent, torch.zeros_like(score), torch.ones_like(score))
    return _div(weights * score, weights.sum(-1, keepdim=True), 0.0, score.dtype).sum(-1)


def _score(kind: str, s: Mapping[str, Tensor], average: str, top_k: int, zero: float, dtype: torch.dtype) -> Tensor:
    tp, fp, tn, fn = s["tp"], s["fp"], s["tn"], s["fn"]
    if kind == "accuracy":
        if average == "binary":
            return _div(tp + tn, tp + tn + fp + fn, 0.0, dtype)
        if average == "micro":
            return _div(tp.sum(), (tp + fn).sum(), 0.0, dtype)
        return _average(_div(tp, tp + fn, 0.0, dtype), average, tp, fp, fn, top_k)
    if kind in ("precision", "recall"):
        other = fp if kind == "precision" else fn
        if average == "binary":
            return _div(tp, tp + other, zero, dtype)
        if average == "micro":
            return _div(tp.sum(), (tp + other).sum(), zero, dtype)
        return _average(_div(tp, tp + other, zero, dtype), average, tp, fp, fn, top_k)
    # f1
    if average == "micro":
        tp, fp, fn = tp.sum(), fp.sum(), fn.sum()
    score = _div(2 * tp, 2 * tp + fn + fp, zero, dtype)
    if average in ("binary", "micro"):
        return score
    return _average(score, average, tp, fp, fn, 1)


# ---- bases --------------------------------------------------------------------------------
class _BinaryStatScores(_Labels):
    _kind = ""

    def __init__(self, threshold: float, multidim_average: str, ignore_index: Optional[int],
                 validate_args: bool, zero_division: Any, kwargs: Dict[str, Any]) -> None:
        zero_division = kwargs.pop("zero_division", zero_division)
        super().__init__(**kwargs)
        owner = type(self).__name__
        _check_common(owner, multidim_average, ignore_index)
        if not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(f"{owner}: threshold must be a float in [0, 1], got {threshold!r}")
        self.threshold = float(threshold)
        self._threshold = host_scalar(self.threshold)
        self.multidim_average = multidim_average
        self.ignore_index = ignore_index
        self.validate_args = validate_args
        self.zero_division = _check_zero_division(owner, zero_division)
        self.num_classes = 2
        self._init_hist(2, ignore_index, validate_args)

    _accumulate = _Labels._binary_update

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        stats = {name: value[1] for name, value in _stats_of(states).items()}
        return _score(self._kind, stats, "binary", 1, self.zero_division, self.dtype)


class _MulticlassStatScores(_Labels):
    _kind = ""

    def __init__(self, num_classes: Optional[int], top_k: int, average: Optional[str], multidim_average: str,
                 ignore_index: Optional[int], validate_args: bool, zero_division: Any,
                 kwargs: Dict[str, Any]) -> None:
        zero_division = kwargs.pop("zero_division", zero_division)
        super().__init__(**kwargs)
        owner = type(self).__name__
        _check_common(owner, multidim_average, ignore_index)
        self.num_classes = _check_num_classes(owner, num_classes)
        average = "none" if average is None else average
        if average not in _AVERAGES:
            raise ValueError(f"{owner}: average must be one of {_AVERAGES} or None, got {average!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= self.num_classes:
            raise ValueError(f"{owner}: top_k must be an int in [1, num_classes], got {top_k!r}")
        self.top_k = top_k
        self.average = average
        self.multidim_average = multidim_average
        self.ignore_index = ignore_index
        self.validate_args = validate_args
        self.zero_division = _check_zero_division(owner, zero_division)
        self._use_hist = self.num_classes <= _HIST_MAX_CLASSES
        if self._use_hist:
            self._init_hist(self.num_classes, ignore_index, validate_args)
        else:
            for name in ("tp", "fp", "tn", "fn"):
                self.add_state(name, (self.num_classes,), torch.int64, "sum")
            self.add_check("_bad_label_count", "error" if validate_args else "warn", _BAD_LABELS)

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        if self._use_hist and self.top_k == 1:
            self._multiclass_update(S, preds, target)
            return
        t, pl, scores = self._multiclass_labels(preds, target, self.top_k)
        if self._use_hist:
            self._scatter(S, t, pl, scores)
            return
        keep, bad = _valid_and_bad(t, pl, self.num_classes, self.ignore_index)
        for name, value in _class_stats(t, pl, keep, self.num_classes).items():
            getattr(S, name).add_(value)
        S._bad_label_count.add_(bad)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return _score(self._kind, _stats_of(states), self.average, self.top_k, self.zero_division, self.dtype)


# ---- public classes -------------------------------------------------------------------------
class BinaryAccuracy(_BinaryStatScores):
    """Accuracy of binary predictions: (tp + tn) / all."""

    _kind = "accuracy"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryPrecision(_BinaryStatScores):
    """Precision of binary predictions: tp / (tp + fp)."""

    _kind = "precision"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryRecall(_BinaryStatScores):
    """Recall of binary predictions: tp / (tp + fn)."""

    _kind = "recall"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryF1Score(_BinaryStatScores):
    """F1 of binary predictions: 2 tp / (2 tp + fp + fn)."""

    _kind = "f1"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, zero_division: float = 0, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, zero_division, kwargs)


class MulticlassAccuracy(_MulticlassStatScores):
    """Multiclass accuracy (micro: fraction correct; macro/weighted/none: per-class recall)."""

    _kind = "accuracy"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassPrecision(_MulticlassStatScores):
    """Multiclass precision."""

    _kind = "precision"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassRecall(_MulticlassStatScores):
    """Multiclass recall."""

    _kind = "recall"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassF1Score(_MulticlassStatScores):
    """Multiclass F1 score."""

    _kind = "f1"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, zero_division: float = 0, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args,
                         zero_division, kwargs)


class _ConfusionMatrixBase(_Labels):
    def _init_confmat(self, num_classes: int, normalize: Optional[str], ignore_index: Optional[int],
                      validate_args: bool) -> None:
        owner = type(self).__name__
        _check_common(owner, "global", ignore_index)
        if normalize not in _NORMALIZE:
            raise ValueError(f"{owner}: normalize must be one of {_NORMALIZE}, got {normalize!r}")
        self.num_classes = num_classes
        self.normalize = normalize
        self.ignore_index = ignore_index
        self.validate_args = validate_args
        # The lookup tables are (C + 3) * (C + 2) entries: past _HIST_MAX_CLASSES, masks instead.
        self._init_hist(num_classes, ignore_index, validate_args, lut=num_classes <= _HIST_MAX_CLASSES)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        confmat = states["confmat"]
        if self.normalize in (None, "none"):
            return confmat.clone()
        confmat = confmat.to(self.dtype)
        if self.normalize == "true":
            confmat = confmat / confmat.sum(-1, keepdim=True)
        elif self.normalize == "pred":
            confmat = confmat / confmat.sum(-2, keepdim=True)
        else:
            confmat = confmat / confmat.sum()
        # Rows/columns without samples give 0/0: zero, as torchmetrics does (without its warning).
        return torch.where(torch.isnan(confmat), torch.zeros_like(confmat), confmat)


class BinaryConfusionMatrix(_ConfusionMatrixBase):
    """2 x 2 confusion matrix (rows: target, columns: prediction)."""

    def __init__(self, threshold: float = 0.5, ignore_index: Optional[int] = None,
                 normalize: Optional[str] = None, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.threshold = float(threshold)
        self._threshold = host_scalar(self.threshold)
        self._init_confmat(2, normalize, ignore_index, validate_args)

    _accumulate = _Labels._binary_update


class MulticlassConfusionMatrix(_ConfusionMatrixBase):
    """num_classes x num_classes confusion matrix (rows: target, columns: prediction)."""

    def __init__(self, num_classes: Optional[int] = None, ignore_index: Optional[int] = None,
                 normalize: Optional[str] = None, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._init_confmat(_check_num_classes(type(self).__name__, num_classes), normalize, ignore_index,
                           validate_args)

    _accumulate = _Labels._multiclass_update


# ---- task wrappers (torchmetrics' Accuracy(task=...) etc.) ----------------------------------
def _task(owner: str, task: Any) -> str:
    task = getattr(task, "value", task)
    if task == "multilabel":
        raise TypeError(
            f"{owner}: task='multilabel' is not supported by syncfree. Keep torchmetrics' "
            f"Multilabel{owner} for it, or use task='binary' / 'multiclass'."
        )
    if task not in ("binary", "multiclass"):
        raise ValueError(f"{owner}: task must be 'binary' or 'multiclass', got {task!r}")
    return task


class Accuracy:
    """``Accuracy(task=...)`` builds a :class:`BinaryAccuracy` or :class:`MulticlassAccuracy`."""

    def __new__(cls, task: str, threshold: float = 0.5, num_classes: Optional[int] = None,
                num_labels: Optional[int] = None, average: Optional[str] = "micro",
                multidim_average: str = "global", top_k: Optional[int] = 1, ignore_index: Optional[int] = None,
                validate_args: bool = True, **kwargs: Any) -> Metric:
        if _task("Accuracy", task) == "binary":
            return BinaryAccuracy(threshold, multidim_average, ignore_index, validate_args, **kwargs)
        return MulticlassAccuracy(num_classes, top_k or 1, average, multidim_average, ignore_index,
                                  validate_args, **kwargs)


class Precision:
    """``Precision(task=...)`` builds a :class:`BinaryPrecision` or :class:`MulticlassPrecision`."""

    def __new__(cls, task: str, threshold: float = 0.5, num_classes: Optional[int] = None,
                num_labels: Optional[int] = None, average: Optional[str] = "micro",
                multidim_average: str = "global", top_k: Optional[int] = 1, ignore_index: Optional[int] = None,
                validate_args: bool = True, **kwargs: Any) -> Metric:
        if _task("Precision", task) == "binary":
            return BinaryPrecision(threshold, multidim_average, ignore_index, validate_args, **kwargs)
        return MulticlassPrecision(num_classes, top_k or 1, average, multidim_average, ignore_index,
                                   validate_args, **kwargs)


class Recall:
    """``Recall(task=...)`` builds a :class:`BinaryRecall` or :class:`MulticlassRecall`."""

    def __new__(cls, task: str, threshold: float = 0.5, num_classes: Optional[int] = None,
                num_labels: Optional[int] = None, average: Optional[str] = "micro",
                multidim_average: str = "global", top_k: Optional[int] = 1, ignore_index: Optional[int] = None,
                validate_args: bool = True, **kwargs: Any) -> Metric:
        if _task("Recall", task) == "binary":
            return BinaryRecall(threshold, multidim_average, ignore_index, validate_args, **kwargs)
        return MulticlassRecall(num_classes, top_k or 1, average, multidim_average, ignore_index,
                                validate_args, **kwargs)


class F1Score:
    """``F1Score(task=...)`` builds a :class:`BinaryF1Score` or :class:`MulticlassF1Score`."""

    def __new__(cls, task: str, threshold: float = 0.5, num_classes: Optional[int] = None,
                num_labels: Optional[int] = None, average: Optional[str] = "micro",
                multidim_average: str = "global", top_k: Optional[int] = 1, ignore_index: Optional[int] = None,
                validate_args: bool = True, zero_division: float = 0, **kwargs: Any) -> Metric:
        if _task("F1Score", task) == "binary":
            return BinaryF1Score(threshold, multidim_average, ignore_index, validate_args, zero_division, **kwargs)
        return MulticlassF1Score(num_classes, top_k or 1, average, multidim_average, ignore_index,
                                 validate_args, zero_division, **kwargs)


class ConfusionMatrix:
    """``ConfusionMatrix(task=...)`` builds a binary or multiclass confusion matrix."""

    def __new__(cls, task: str, threshold: float = 0.5, num_classes: Optional[int] = None,
                num_labels: Optional[int] = None, normalize: Optional[str] = None,
                ignore_index: Optional[int] = None, validate_args: bool = True, **kwargs: Any) -> Metric:
        if _task("ConfusionMatrix", task) == "binary":
            return BinaryConfusionMatrix(threshold, ignore_index, normalize, validate_args, **kwargs)
        return MulticlassConfusionMatrix(num_classes, ignore_index, normalize, validate_args, **kwargs)
