"""Exact curves (``thresholds=None``, torchmetrics' default): the samples in a bounded device buffer.

torchmetrics keeps every prediction in lists that grow with the data. Here the samples go into ONE
preallocated buffer per metric: ``samples`` (``capacity`` x ``width``, floating; reduce ``"cat"``),
one row per sample: its scores and, in the last column, ``target + 1`` (0 marks an unused slot).
``_filled`` counts the samples this rank offered to the buffer, ``_dropped`` those that did not fit.

Filling never syncs the host: a batch's rows go to ``_filled + cumsum(keep) - 1`` (index arithmetic
on the device; rows not kept, or past the end, go to one scratch row after the buffer), written by
ONE ``put_``; the overflow is counted on the device. A sync gathers every rank's buffer (the
``"cat"`` bucket, see :mod:`syncfree.distributed`), once, at ``compute`` or ``sync``.

Overflow: the value is NaN (on the device), and the next host read of the check counters
(:func:`syncfree.to_host`, ``compute(check=True)``, the Lightning callback) raises a ``ValueError``
naming ``capacity=`` and ``thresholds=``.

The scores (AUROC, average precision) are exact, torchmetrics' values, without data-dependent
shapes (so without a host read): the samples are sorted by score, and every sample is a point of
the curve evaluated at its score's tie group (``searchsorted``), so the samples of one tie group
are one repeated point, which adds zero area.

The curves themselves (ROC and precision-recall curves with ``thresholds=None``) have one point
per distinct score: their length is the data's, so their ``compute`` reads it (:func:`clf_curves`:
one host read of every curve's length; the points are then taken with ``nonzero_static``, no
further read). Before that, in the same ``compute``, the check counters are read and reported
(an overflow raises there instead of giving a NaN curve). Update, forward's accumulation and
sync stay sync-free; read an exact curve where the host wants it anyway (once per epoch, to plot or
log it), or pass ``thresholds=`` for a curve that ``compute`` returns without a read.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch
from torch import Tensor

DEFAULT_CAPACITY = 65536
OVERFLOW = ("{metric}: {count} sample(s) did not fit in the sample buffer (an exact curve, thresholds=None, keeps "
            "at most capacity= samples per rank) and were dropped, so the value would cover only the first samples. "
            "Pass a larger capacity= (e.g. the number of samples per rank in an epoch), or thresholds=<int> "
            "(a binned curve: constant memory, any number of samples).")
BUFFER_STATES = ("samples", "_filled", "_dropped")


def check_capacity(owner: str, capacity: Optional[int], thresholds: Any) -> Optional[int]:
    """The buffer size for ``thresholds=None`` (``DEFAULT_CAPACITY`` when not given); None when binned."""
    if thresholds is not None:
        if capacity is not None:
            raise ValueError(f"{owner}: capacity= is the sample buffer of an exact curve (thresholds=None); "
                             f"with thresholds={thresholds!r} the states are binned. Drop capacity=, or pass "
                             "thresholds=None")
        return None
    if capacity is None:
        return DEFAULT_CAPACITY
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"{owner}: capacity must be a positive int (samples kept per rank), got {capacity!r}")
    return capacity


def add_buffer(metric: Any, capacity: int, width: int) -> None:
    """Register the buffer states (and the scratch row) on ``metric`` and the overflow check."""
    metric.add_state_group("_samples", [("samples", (capacity, width), "cat")], scratch=width)
    metric.add_state_group("_fill", [("_filled", (), "sum"), ("_dropped", (), "sum")], torch.int64)
    metric.add_constant("_columns", torch.arange(width, dtype=torch.int64))
    metric.add_check("_dropped", "error", OVERFLOW, state=False)


def append(S: Any, rows: Tensor, keep: Tensor, columns: Tensor) -> None:
    """Write ``rows`` (n x width) where ``keep`` into the buffer held by ``S``, after the samples it holds
    (``columns``: the metric's ``_columns`` constant, ``arange(width)`` on its device)."""
    capacity, width = S.samples.shape
    slot = keep.cumsum(0).add_(S._filled).sub_(1)  # a bool cumsum is int64
    fits = keep & (slot < capacity)
    index = torch.add(columns, torch.where(fits, slot, capacity).unsqueeze(1), alpha=width)  # else: scratch row
    S._samples.put_(index.reshape(-1), rows.to(S._samples.dtype).reshape(-1))
    n = torch.count_nonzero(keep)
    S._dropped.add_(n - torch.count_nonzero(fits))
    S._filled.add_(n)


def merge(S: Any, batch: Mapping[str, Tensor], columns: Tensor) -> None:
    """Append a batch's buffer (a scratch from ``forward``) to the buffer held by ``S``."""
    rows = batch["samples"]
    keep = torch.arange(rows.shape[0], device=rows.device) < batch["_filled"]
    append(S, rows, keep, columns)
    S._dropped.add_(batch["_dropped"])  # what the batch alone could not hold
    S._filled.add_(batch["_dropped"])


def batch_view(rows: int, width: int, dtype: torch.dtype, device: torch.device) -> SimpleNamespace:
    """The states ``_accumulate`` writes for ONE batch of ``rows`` samples (``forward``): a buffer of the
    batch's size (at most the metric's capacity, so that a batch larger than it overflows alike)
    instead of a scratch of the whole capacity, which ``compute`` would then sort."""
    flat = torch.zeros((rows + 1) * width, dtype=dtype, device=device)
    counts = torch.zeros(3, dtype=torch.int64, device=device)
    return SimpleNamespace(_samples=flat, samples=flat[:rows * width].view(rows, width),
                           _filled=counts[0], _dropped=counts[1], _bad_targets=counts[2])


def batch_of(view: SimpleNamespace) -> Dict[str, Tensor]:
    """The states of a :func:`batch_view`, by name."""
    return {name: getattr(view, name) for name in ("samples", "_filled", "_dropped", "_bad_targets")}


def split(states: Mapping[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    """(scores (rows x width-1), labels (rows), used (rows)) of the samples in ``states``."""
    samples = states["samples"]
    code = samples[:, -1]
    return samples[:, :-1], code.sub(1).long(), code > 0


def _points(scores: Tensor, positive: Tensor, used: Tensor) -> Tuple[Tensor, Tensor]:
    """(tps, fps) at every sample's score (K x M: K curves over M samples), samples in decreasing score
    order, each counted at the end of its tie group (so a tie group is one repeated point)."""
    s = torch.where(used, torch.nan_to_num(scores, nan=-math.inf), -math.inf)
    s, order = torch.sort(s, dim=-1, descending=True, stable=True)
    pos = (positive & used).gather(-1, order).to(torch.float64)
    neg = (~positive & used).gather(-1, order).to(torch.float64)
    at_least = s.shape[-1] - torch.searchsorted(s.flip(-1).contiguous(), s.contiguous(), right=False)
    end = at_least.sub_(1)
    return pos.cumsum(-1).gather(-1, end), neg.cumsum(-1).gather(-1, end)


def _ratio(num: Tensor, den: Tensor) -> Tensor:
    return torch.where(den != 0, num / den, torch.zeros_like(num))


def auroc(scores: Tensor, positive: Tensor, used: Tensor) -> Tensor:
    """Exact area under the ROC curve of each of K curves (K x M inputs), as torchmetrics."""
    tps, fps = _points(scores, positive, used)
    tpr = _ratio(tps, tps[..., -1:])
    fpr = _ratio(fps, fps[..., -1:])
    zero = torch.zeros_like(tpr[..., :1])
    return torch.trapezoid(torch.cat([zero, tpr], -1), torch.cat([zero, fpr], -1), dim=-1)


def average_precision(scores: Tensor, positive: Tensor, used: Tensor, no_positives: float = math.nan) -> Tensor:
    """Exact average precision of each of K curves (K x M inputs), as torchmetrics; a curve without
    positives gives ``no_positives`` (torchmetrics: 0 for a binary curve, NaN for a class)."""
    tps, fps = _points(scores, positive, used)
    precision = tps / (tps + fps)
    recall = tps / tps[..., -1:]
    previous = torch.cat([torch.zeros_like(recall[..., :1]), recall[..., :-1]], -1)
    step = torch.where(recall != previous, (recall - previous) * precision, torch.zeros_like(recall))
    return torch.where(tps[..., -1] > 0, step.sum(-1), no_positives)


def flag_overflow(value: Tensor, states: Mapping[str, Tensor]) -> Tensor:
    """``value``, or NaN where samples were dropped (on the device; the check counter says why)."""
    return torch.where(states["_dropped"] > 0, torch.full_like(value, math.nan), value)


def clf_curves(scores: Tensor, positive: Tensor, used: Tensor) -> List[Tuple[Tensor, Tensor, Tensor]]:
    """torchmetrics' ``_binary_clf_curve`` of each of K rows (K x M inputs; ``used``: which entries are
    samples): ``(fps, tps, thresholds)`` at every distinct score, scores decreasing. ONE host read
    (the K curves' lengths: only the data knows them)."""
    M = scores.shape[-1]
    s = torch.where(used, scores, -math.inf)  # scores are probabilities: an unused entry sorts last
    s, order = torch.sort(s, dim=-1, descending=True, stable=True)
    tps_all = (positive & used).gather(-1, order).to(scores.dtype).cumsum(-1)
    ends = torch.ones_like(s, dtype=torch.bool)
    ends[..., :-1] = s[..., :-1] != s[..., 1:]  # the last sample of each tie group (NaN: each its own)
    ends &= torch.arange(M, device=s.device) < used.sum(-1, keepdim=True)
    out = []
    for k, length in enumerate(ends.sum(-1).tolist()):  # the host read
        idx = torch.nonzero_static(ends[k], size=length).squeeze(1)
        tps = tps_all[k][idx]
        out.append((1 + idx.to(tps.dtype) - tps, tps, s[k][idx]))
    return out


def roc_points(fps: Tensor, tps: Tensor, thresholds: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """(fpr, tpr, thresholds) of one :func:`clf_curves` curve, as torchmetrics' exact ROC (starting at
    (0, 0) with threshold 1; a rate without negatives / positives is all zeros)."""
    zero = fps.new_zeros(1)
    fps, tps = torch.cat([zero, fps]), torch.cat([zero, tps])
    thresholds = torch.cat([thresholds.new_ones(1), thresholds])
    fpr = torch.where(fps[-1] > 0, fps / fps[-1].clamp(min=1), torch.zeros_like(fps))
    tpr = torch.where(tps[-1] > 0, tps / tps[-1].clamp(min=1), torch.zeros_like(tps))
    return fpr, tpr, thresholds


def pr_points(fps: Tensor, tps: Tensor, thresholds: Tensor,
              labels_all_zero: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
    """(precision, recall, thresholds) of one :func:`clf_curves` curve, as torchmetrics' exact curve
    (thresholds increasing; precision ends with 1, recall with 0). The recall is all ones where
    torchmetrics says "recall is undefined": when every target label is 0 (``labels_all_zero``; for
    a binary curve, when it has no positives); otherwise a curve without positives has NaN recall."""
    if tps.numel() == 0:  # no sample at all
        return tps.new_ones(1), tps.new_zeros(1), thresholds
    precision = tps / (tps + fps)
    undefined = tps[-1] == 0 if labels_all_zero is None else labels_all_zero
    recall = torch.where(undefined, torch.ones_like(tps), tps / tps[-1])
    precision = torch.cat([precision.flip(0), precision.new_ones(1)])
    recall = torch.cat([recall.flip(0), recall.new_zeros(1)])
    if thresholds.shape == (1,):  # torchmetrics squeezes a one-point curve's thresholds (a shape: no read)
        return precision, recall, thresholds[0]
    return precision, recall, thresholds.flip(0)
