"""Multilabel stat-score metrics: accuracy, precision, recall, F1, F-beta, specificity, stat scores,
the Jaccard index and the confusion matrix over ``num_labels`` independent binary labels.

Inputs, as torchmetrics: ``preds`` and ``target`` of one shape ``(N, num_labels, ...)``. Float preds
are probabilities, or logits when any value is outside ``[0, 1]`` (sigmoid; decided per batch on
the device, over every entry, NaN counting as a logit); they are thresholded with ``threshold``.
Integer preds are labels in ``{0, 1}``. Targets are ``{0, 1}`` or ``ignore_index`` (ignored).

Layout: ONE flat int64 buffer of ``6 x num_labels`` counts: ``confmat`` (2 x 2 x L: target, pred,
label), ``_bad_labels`` (L: entries whose target is not 0/1/ignore_index or whose integer pred is
not 0/1; torchmetrics raises at update with ``validate_args=True``) and L scratch bins that ignored
entries fall into. Every entry of a batch has one bin, ``row * L + label`` with ``row`` from a
20-entry lookup table of the clamped (target, pred) pair, so an update is ONE ``put_`` (no mask, no
data-dependent shape, no host sync). Bad labels are reported by :func:`syncfree.to_host` /
``compute(check=True)``: ``ValueError`` with ``validate_args=True``, a warning otherwise.

Not supported (``TypeError``): ``multidim_average="samplewise"``, ``num_labels=None``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch
from torch import Tensor

from syncfree import _scores
from syncfree._labels import _NORMALIZE, _check_common, _check_inputs, _check_zero_division, _labels_of
from syncfree.metric import Metric, host_scalar

_BAD = ("{metric}: {count} value(s) outside {{0, 1}} were excluded (targets must be 0, 1 or ignore_index; "
        "integer preds 0 or 1)")
_ROWS = 6  # t0p0, t0p1, t1p0, t1p1, bad, ignored


def _lut() -> Tensor:
    """Row of every (target code, pred code): target code ``clamp(t, -1, 2) + 1`` (4: ignored),
    pred code ``clamp(p, -1, 2) + 1``; code = target code * 4 + pred code."""
    rows = []
    for tc in range(5):
        for pc in range(4):
            t, p = tc - 1, pc - 1
            if tc == 4:
                rows.append(5)
            elif t in (0, 1) and p in (0, 1):
                rows.append(2 * t + p)
            else:
                rows.append(4)
    return torch.tensor(rows, dtype=torch.int64)


class _MultilabelStatScores(Metric):
    _kind = ""
    beta = 1.0

    def __init__(self, num_labels: Optional[int], threshold: float, average: Optional[str], multidim_average: str,
                 ignore_index: Optional[int], validate_args: bool, zero_division: Any,
                 kwargs: Dict[str, Any]) -> None:
        zero_division = kwargs.pop("zero_division", zero_division)
        super().__init__(**kwargs)
        owner = type(self).__name__
        _check_common(owner, multidim_average, ignore_index)
        if num_labels is None:
            raise TypeError(
                f"{owner}: num_labels is required: syncfree keeps fixed-size per-label states on the device. "
                "Pass num_labels=<number of labels>."
            )
        if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 2:
            raise ValueError(f"{owner}: num_labels must be an int larger than 1, got {num_labels!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(f"{owner}: threshold must be a float in [0, 1], got {threshold!r}")
        average = "none" if average is None else average
        if average not in _scores.AVERAGES:
            raise ValueError(f"{owner}: average must be one of {_scores.AVERAGES} or None, got {average!r}")
        self.num_labels = num_labels
        self.threshold = float(threshold)
        self._threshold = host_scalar(self.threshold)
        self.average = average
        self.multidim_average = multidim_average
        self.ignore_index = ignore_index
        self.validate_args = validate_args
        self.zero_division = _check_zero_division(owner, zero_division)
        L = num_labels
        self.add_state_group("_hist", [("confmat", (2, 2, L), "sum"), ("_bad_labels", (L,), "sum")],
                             torch.int64, scratch=L)
        self.add_check("_bad_labels", "error" if validate_args else "warn", _BAD, state=False)
        self.add_constant("_lut", _lut())
        self.add_constant("_label_ids", torch.arange(L, dtype=torch.int64))

    _update_attributes = ("num_labels", "ignore_index", "threshold")  # see Metric: compute groups

    def check_counters(self, states: Optional[Mapping[str, Tensor]] = None) -> List[Tuple[Tensor, str, str]]:
        bad = (self.states() if states is None else states)["_bad_labels"].sum()
        return [(bad, policy, message) for _, policy, message in self._checks if policy != "off"]

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        owner = type(self).__name__
        L = self.num_labels
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor) or target.dtype is not torch.int64:
            _check_inputs(owner, preds, target)
            target = _labels_of(target, 2)
        if preds.shape != target.shape:
            raise ValueError(f"{owner}.update: preds and target must have the same shape, got "
                             f"{tuple(preds.shape)} and {tuple(target.shape)}")
        if preds.ndim < 2 or preds.shape[1] != L:
            raise ValueError(f"{owner}.update: preds and target must have shape (N, num_labels={L}, ...), got "
                             f"{tuple(preds.shape)}")
        if preds.is_complex():
            _check_inputs(owner, preds, target)
        if preds.is_floating_point():
            p = preds.detach()
            # Probabilities when every value is in [0, 1], else logits (NaN: a logit, as torchmetrics on CPU).
            pc = (torch.where((p.clamp(0, 1) == p).all(), p, p.sigmoid()) > self._threshold).long()
        else:
            pc = preds.long().clamp(-1, 2)
        tc = target.clamp(-1, 2)
        if self.ignore_index is not None:
            tc = tc.masked_fill(target == self.ignore_index, 3)
        code = torch.add(pc + 1, tc, alpha=4).add_(4)  # (tc + 1) * 4 + (pc + 1)
        row = torch.take(self._lut, code)
        labels = self._label_ids if preds.ndim == 2 else self._label_ids.view((L,) + (1,) * (preds.ndim - 2))
        index = torch.add(labels, row, alpha=L).reshape(-1)
        S._hist.put_(index, torch.ones_like(index), accumulate=True)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return _scores.reduce(self._kind, _scores.multilabel_stats(states), self.average, multilabel=True,
                              zero=self.zero_division, beta=self.beta, dtype=self.dtype)



class MultilabelAccuracy(_MultilabelStatScores):
    """Per-label accuracy (tp + tn) / all, averaged (micro: over every label and sample)."""
    higher_is_better = True

    _kind = "accuracy"

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MultilabelPrecision(_MultilabelStatScores):
    """Per-label precision tp / (tp + fp), averaged."""
    higher_is_better = True

    _kind = "precision"

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MultilabelRecall(_MultilabelStatScores):
    """Per-label recall tp / (tp + fn), averaged."""
    higher_is_better = True

    _kind = "recall"

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MultilabelSpecificity(_MultilabelStatScores):
    """Per-label specificity tn / (tn + fp), averaged."""

    _kind = "specificity"

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MultilabelStatScores(_MultilabelStatScores):
    """``[tp, fp, tn, fn, support]`` per label (``average="none"``), summed (micro) or averaged."""

    _kind = "stat_scores"

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MultilabelF1Score(_MultilabelStatScores):
    """Per-label F1, averaged."""
    higher_is_better = True

    _kind = "fbeta"

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, zero_division: float = 0, **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, multidim_average, ignore_index, validate_args,
                         zero_division, kwargs)


class MultilabelFBetaScore(_MultilabelStatScores):
    """Per-label F-beta, averaged."""
    higher_is_better = True

    _kind = "fbeta"

    def __init__(self, beta: float, num_labels: Optional[int] = None, threshold: float = 0.5,
                 average: Optional[str] = "macro", multidim_average: str = "global",
                 ignore_index: Optional[int] = None, validate_args: bool = True, zero_division: float = 0,
                 **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, multidim_average, ignore_index, validate_args,
                         zero_division, kwargs)
        self.beta = _scores.check_beta(type(self).__name__, beta)


class MultilabelJaccardIndex(_MultilabelStatScores):
    """Per-label intersection over union tp / (tp + fp + fn), averaged."""
    higher_is_better = True

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, average: Optional[str] = "macro",
                 ignore_index: Optional[int] = None, validate_args: bool = True, zero_division: float = 0,
                 **kwargs: Any) -> None:
        super().__init__(num_labels, threshold, average, "global", ignore_index, validate_args, zero_division,
                         kwargs)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        cm = states["confmat"].permute(2, 0, 1)  # (L, 2, 2), torchmetrics' multilabel confusion matrix
        return _scores.jaccard(cm, self.average, None, self.zero_division, self.dtype)  # as torchmetrics


class MultilabelConfusionMatrix(_MultilabelStatScores):
    """One 2 x 2 confusion matrix per label, ``(num_labels, 2, 2)``: rows target, columns prediction
    (``[[tn, fp], [fn, tp]]``), as torchmetrics; ``normalize`` as for the multiclass matrix."""

    def __init__(self, num_labels: Optional[int] = None, threshold: float = 0.5, ignore_index: Optional[int] = None,
                 normalize: Optional[str] = None, validate_args: bool = True, **kwargs: Any) -> None:
        if normalize not in _NORMALIZE:
            raise ValueError(f"{type(self).__name__}: normalize must be one of {_NORMALIZE}, got {normalize!r}")
        super().__init__(num_labels, threshold, "micro", "global", ignore_index, validate_args, 0, kwargs)
        self.normalize = normalize

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        confmat = states["confmat"].permute(2, 0, 1)  # (target, pred, label) -> (label, target, pred)
        if self.normalize in (None, "none"):
            return confmat.clone()
        confmat = confmat.to(self.dtype)
        if self.normalize == "true":
            confmat = confmat / confmat.sum(-1, keepdim=True)
        elif self.normalize == "pred":
            confmat = confmat / confmat.sum(-2, keepdim=True)
        else:
            confmat = confmat / confmat.sum((-2, -1), keepdim=True)
        # Labels without samples give 0/0: zero, as torchmetrics does (without its warning).
        return torch.where(torch.isnan(confmat), torch.zeros_like(confmat), confmat)
