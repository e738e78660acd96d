"""``AUROC``, ``AveragePrecision``, ``ROC`` and ``PrecisionRecallCurve`` with ``task=...``: the binary
or multiclass metric.

As torchmetrics' task wrappers: ``task="binary"`` builds the ``Binary*`` metric of
:mod:`syncfree.curves`, ``task="multiclass"`` the ``Multiclass*`` one of
:mod:`syncfree.multiclass_curves`, ``task="multilabel"`` the ``Multilabel*`` one of
:mod:`syncfree.multilabel_curves`. The curves, and every multilabel metric, need ``thresholds=``
(see :mod:`syncfree.curves`).
"""

from __future__ import annotations

from typing import Any, Optional

from syncfree.classification import _task
from syncfree.curves import BinaryAUROC, BinaryAveragePrecision, BinaryPrecisionRecallCurve, BinaryROC, Thresholds
from syncfree.metric import Metric
from syncfree.multiclass_curves import (
    MulticlassAUROC,
    MulticlassAveragePrecision,
    MulticlassPrecisionRecallCurve,
    MulticlassROC,
)
from syncfree.multilabel_curves import (
    MultilabelAUROC,
    MultilabelAveragePrecision,
    MultilabelPrecisionRecallCurve,
    MultilabelROC,
)


class AUROC:
    """``AUROC(task=...)`` builds a :class:`BinaryAUROC` or a :class:`MulticlassAUROC`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, average: Optional[str] = "macro", max_fpr: Optional[float] = None,
                ignore_index: Optional[int] = None, validate_args: bool = True, **kwargs: Any) -> Metric:
        kind = _task("AUROC", task)
        if kind == "binary":
            return BinaryAUROC(max_fpr, thresholds, ignore_index, validate_args, **kwargs)
        if kind == "multilabel":
            return MultilabelAUROC(num_labels, average, thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassAUROC(num_classes, average, thresholds, ignore_index, validate_args, **kwargs)


class AveragePrecision:
    """``AveragePrecision(task=...)`` builds a :class:`BinaryAveragePrecision` or a :class:`MulticlassAveragePrecision`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, average: Optional[str] = "macro",
                ignore_index: Optional[int] = None, validate_args: bool = True, **kwargs: Any) -> Metric:
        kind = _task("AveragePrecision", task)
        if kind == "binary":
            return BinaryAveragePrecision(thresholds, ignore_index, validate_args, **kwargs)
        if kind == "multilabel":
            return MultilabelAveragePrecision(num_labels, average, thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassAveragePrecision(num_classes, average, thresholds, ignore_index, validate_args, **kwargs)


class ROC:
    """``ROC(task=...)`` builds a :class:`BinaryROC` or a :class:`MulticlassROC`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                **kwargs: Any) -> Metric:
        kind = _task("ROC", task)
        if kind == "binary":
            return BinaryROC(thresholds, ignore_index, validate_args, **kwargs)
        if kind == "multilabel":
            return MultilabelROC(num_labels, thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassROC(num_classes, thresholds, None, ignore_index, validate_args, **kwargs)


class PrecisionRecallCurve:
    """``PrecisionRecallCurve(task=...)`` builds a :class:`BinaryPrecisionRecallCurve` or a
    :class:`MulticlassPrecisionRecallCurve`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                **kwargs: Any) -> Metric:
        kind = _task("PrecisionRecallCurve", task)
        if kind == "binary":
            return BinaryPrecisionRecallCurve(thresholds, ignore_index, validate_args, **kwargs)
        if kind == "multilabel":
            return MultilabelPrecisionRecallCurve(num_labels, thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassPrecisionRecallCurve(num_classes, thresholds, None, ignore_index, validate_args, **kwargs)
