"""More stat-score metrics (binary and multiclass): specificity, F-beta, the raw stat scores and
the Jaccard index, plus their task wrappers (``task="multilabel"`` builds the classes of
:mod:`syncfree.multilabel`).

They share the layouts, fast paths and deferred label checks of :mod:`syncfree.classification`
(one ``put_`` per update into a confusion-matrix histogram; see :class:`syncfree._labels._Labels`);
only the reduction of tp/fp/tn/fn to a score differs (:mod:`syncfree._scores`). The Jaccard index
is a confusion matrix, as in torchmetrics (so binary logits are decided after ``ignore_index``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from torch import Tensor

from syncfree import _scores
from syncfree.classification import (
    BinaryConfusionMatrix,
    MulticlassConfusionMatrix,
    _BinaryStatScores,
    _MulticlassStatScores,
)


class _BinaryReduced(_BinaryStatScores):
    beta = 1.0

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        stats = {name: value[1] for name, value in _scores.multiclass_stats(states).items()}
        return _scores.reduce(self._kind, stats, "binary", zero=self.zero_division, beta=self.beta, dtype=self.dtype)


class _MulticlassReduced(_MulticlassStatScores):
    beta = 1.0

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return _scores.reduce(self._kind, _scores.multiclass_stats(states), self.average, top_k=self.top_k,
                              zero=self.zero_division, beta=self.beta, dtype=self.dtype)


class BinarySpecificity(_BinaryReduced):
    """Specificity of binary predictions: tn / (tn + fp)."""

    _kind = "specificity"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryFBetaScore(_BinaryReduced):
    """F-beta of binary predictions: (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)."""
    higher_is_better = True

    _kind = "fbeta"

    def __init__(self, beta: float, threshold: float = 0.5, multidim_average: str = "global",
                 ignore_index: Optional[int] = None, validate_args: bool = True, zero_division: float = 0,
                 **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, zero_division, kwargs)
        self.beta = _scores.check_beta(type(self).__name__, beta)


class BinaryStatScores(_BinaryReduced):
    """``[tp, fp, tn, fn, support]`` of binary predictions (int64)."""

    _kind = "stat_scores"

    def __init__(self, threshold: float = 0.5, multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(threshold, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassSpecificity(_MulticlassReduced):
    """Multiclass specificity tn / (tn + fp) per class, averaged."""

    _kind = "specificity"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class MulticlassFBetaScore(_MulticlassReduced):
    """Multiclass F-beta score."""
    higher_is_better = True

    _kind = "fbeta"

    def __init__(self, beta: float, num_classes: Optional[int] = None, top_k: int = 1,
                 average: Optional[str] = "macro", multidim_average: str = "global",
                 ignore_index: Optional[int] = None, validate_args: bool = True, zero_division: float = 0,
                 **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args,
                         zero_division, kwargs)
        self.beta = _scores.check_beta(type(self).__name__, beta)


class MulticlassStatScores(_MulticlassReduced):
    """``[tp, fp, tn, fn, support]`` per class (``average="none"``), summed (micro) or averaged."""

    _kind = "stat_scores"

    def __init__(self, num_classes: Optional[int] = None, top_k: int = 1, average: Optional[str] = "macro",
                 multidim_average: str = "global", ignore_index: Optional[int] = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k, average, multidim_average, ignore_index, validate_args, 0, kwargs)


class BinaryJaccardIndex(BinaryConfusionMatrix):
    """Intersection over union of the positive class: tp / (tp + fp + fn)."""
    higher_is_better = True

    def __init__(self, threshold: float = 0.5, ignore_index: Optional[int] = None, validate_args: bool = True,
                 zero_division: float = 0, **kwargs: Any) -> None:
        super().__init__(threshold, ignore_index, None, validate_args, **kwargs)
        self.zero_division = float(zero_division)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return _scores.jaccard(states["confmat"], "binary", self.ignore_index, self.zero_division, self.dtype)


class MulticlassJaccardIndex(MulticlassConfusionMatrix):
    """Per-class intersection over union, averaged (micro/macro/weighted/none)."""
    higher_is_better = True

    def __init__(self, num_classes: Optional[int] = None, average: Optional[str] = "macro",
                 ignore_index: Optional[int] = None, validate_args: bool = True, zero_division: float = 0,
                 **kwargs: Any) -> None:
        super().__init__(num_classes, ignore_index, None, validate_args, **kwargs)
        average = "none" if average is None else average
        if average not in _scores.AVERAGES:
            raise ValueError(f"MulticlassJaccardIndex: average must be one of {_scores.AVERAGES} or None, "
                             f"got {average!r}")
        self.average = average
        self.zero_division = float(zero_division)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return _scores.jaccard(states["confmat"], self.average, self.ignore_index, self.zero_division, self.dtype)
