"""Classification metrics (binary and multiclass) built on per-class tp/fp/tn/fn counts.

States are int64 counts on the metric's device. Confusion matrices, binary stat scores and
multiclass stat scores with at most ``_HIST_MAX_CLASSES`` classes hold ``confmat`` (C x C, rows:
target, columns: prediction) and ``_bad_labels`` (2 x C bins whose sum is the bad-label count),
views into ONE flat buffer: an update computes every entry's bin and adds them all with a single
``put_(..., accumulate=True)`` (fixed size, no mask, never a host sync); tp/fp/tn/fn are derived
from the matrix in ``compute`` (see :class:`_Labels`). Multiclass stat scores with more classes keep per-class
``tp``, ``fp``, ``tn``, ``fn`` (``(num_classes,)``) and ``_bad_label_count`` instead.

Errors, when they are raised:

- at ``update`` (known without reading the data, as torchmetrics raises them): preds/target
  that are not tensors or are complex (``TypeError``); shapes that do not match (``ValueError``:
  binary preds and target of one shape; multiclass labels of the target's shape or float scores
  ``(N, num_classes, ...)``; integer preds with a class dimension; ``top_k > 1`` without scores);
- deferred (value errors: finding them needs a host sync, which ``update`` never makes): labels
  out of range (targets not in ``[0, num_classes)`` and not ``ignore_index``; integer preds out
  of range) and float labels that are not integral (``0.5``, NaN). They are excluded from the
  counts and counted on the device; :func:`syncfree.to_host` and ``compute(check=True)`` then
  raise ``ValueError`` when ``validate_args=True`` (torchmetrics raises at ``update`` in that
  case) and warn when ``validate_args=False``. ``compute()`` alone never reads the counters.

Float targets holding labels (``0.``/``1.``, or class indices) are accepted, as in torchmetrics.

Float preds: binary preds outside ``[0, 1]`` are treated as logits (sigmoid, decided per batch
on the device; the confusion matrix decides on the entries left after ``ignore_index``, the stat
scores on every entry, both as torchmetrics); multiclass preds ``(N, C, ...)`` are reduced with
argmax, or with ``top_k`` (a sample counts as correct when its target is in its top k, else as
its top-1 class); multiclass float preds of the target's shape are labels.

``task="multilabel"`` builds the classes of :mod:`syncfree.multilabel` (not for ``ConfusionMatrix``).

Not supported (``TypeError``): ``ConfusionMatrix(task="multilabel")``, ``multidim_average="samplewise"``,
``num_classes=None`` for multiclass metrics (states need a fixed size).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import torch
from torch import Tensor

from syncfree import _scores
from syncfree._labels import (
    _AVERAGES,
    _BAD_LABELS,
    _HIST_MAX_CLASSES,
    _NORMALIZE,
    _check_common,
    _check_num_classes,
    _check_zero_division,
    _class_stats,
    _Labels,
    _valid_and_bad,
)
from syncfree.metric import host_scalar


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
        stats = {name: value[1] for name, value in _scores.multiclass_stats(states).items()}
        return _scores.reduce(self._kind, stats, "binary", zero=self.zero_division, dtype=self.dtype)


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
        return _scores.reduce(self._kind, _scores.multiclass_stats(states), self.average, top_k=self.top_k,
                              zero=self.zero_division, dtype=self.dtype)


# ---- public classes -------------------------------------------------------------------------
class BinaryAccuracy(_BinaryStatScores):
    """Accuracy of binary predictions: (tp + tn) / all."""
    higher_is_better = True

    _kind = "accuracy"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryPrecision(_BinaryStatScores):
    """Precision of binary predictions: tp / (tp + fp)."""
    higher_is_better = True

    _kind = "precision"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryRecall(_BinaryStatScores):
    """Recall of binary predictions: tp / (tp + fn)."""
    higher_is_better = True

    _kind = "recall"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryF1Score(_BinaryStatScores):
    """F1 of binary predictions: 2 tp / (2 tp + fp + fn)."""
    higher_is_better = True

    _kind = "f1"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, zero_division: float = 0, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, zero_division, kwargs)


class MulticlassAccuracy(_MulticlassStatScores):
    """Multiclass accuracy (micro: fraction correct; macro/weighted/none: per-class recall)."""
    higher_is_better = True

    _kind = "accuracy"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassPrecision(_MulticlassStatScores):
    """Multiclass precision."""
    higher_is_better = True

    _kind = "precision"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassRecall(_MulticlassStatScores):
    """Multiclass recall."""
    higher_is_better = True

    _kind = "recall"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassF1Score(_MulticlassStatScores):
    """Multiclass F1 score."""
    higher_is_better = True

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

    _ignored_first = True
    _accumulate = _Labels._binary_update


class MulticlassConfusionMatrix(_ConfusionMatrixBase):
    """num_classes x num_classes confusion matrix (rows: target, columns: prediction)."""

    def __init__(self, num_classes: Optional[int] = None, ignore_index: Optional[int] = None,
                 normalize: Optional[str] = None, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._init_confmat(_check_num_classes(type(self).__name__, num_classes), normalize, ignore_index,
                           validate_args)

    _accumulate = _Labels._multiclass_update
