"""``AUROC``, ``AveragePrecision``, ``ROC`` and ``PrecisionRecallCurve`` with ``task=...``: the binary
or multiclass metric.

As torchmetrics' task wrappers: ``task="binary"`` builds the ``Binary*`` metric of
:mod:`syncfree.curves`, ``task="multiclass"`` the ``Multiclass*`` one of
:mod:`syncfree.multiclass_curves`. The curves need ``thresholds=`` (see :mod:`syncfree.curves`);
``task="multilabel"`` is not supported (``TypeError``).
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


class AUROC:
    """``AUROC(task=...)`` builds a :class:`BinaryAUROC` or a :class:`MulticlassAUROC`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, average: Optional[str] = "macro", max_fpr: Optional[float] = None,
                ignore_index: Optional[int] = None, validate_args: bool = True, **kwargs: Any) -> Metric:
        if _task("AUROC", task, multilabel=False) == "binary":
            return BinaryAUROC(max_fpr, thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassAUROC(num_classes, average, thresholds, ignore_index, validate_args, **kwargs)


class AveragePrecision:
    """``AveragePrecision(task=...)`` builds a :class:`BinaryAveragePrecision` or a :class:`MulticlassAveragePrecision`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, average: Optional[str] = "macro",
                ignore_index: Optional[int] = None, validate_args: bool = True, **kwargs: Any) -> Metric:
        if _task("AveragePrecision", task, multilabel=False) == "binary":
            return BinaryAveragePrecision(thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassAveragePrecision(num_classes, average, thresholds, ignore_index, validate_args, **kwargs)


class ROC:
    """``ROC(task=...)`` builds a :class:`BinaryROC` or a :class:`MulticlassROC`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                **kwargs: Any) -> Metric:
        if _task("ROC", task, multilabel=False) == "binary":
            return BinaryROC(thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassROC(num_classes, thresholds, None, ignore_index, validate_args, **kwargs)


class PrecisionRecallCurve:
    """``PrecisionRecallCurve(task=...)`` builds a :class:`BinaryPrecisionRecallCurve` or a
    :class:`MulticlassPrecisionRecallCurve`."""

    def __new__(cls, task: str, thresholds: Thresholds = None, num_classes: Optional[int] = None,  # type: ignore[misc]  # task wrapper: returns the task's metric (not cls), as torchmetrics
                num_labels: Optional[int] = None, ignore_index: Optional[int] = None, validate_args: bool = True,
                **kwargs: Any) -> Metric:
        if _task("PrecisionRecallCurve", task, multilabel=False) == "binary":
            return BinaryPrecisionRecallCurve(thresholds, ignore_index, validate_args, **kwargs)
        return MulticlassPrecisionRecallCurve(num_classes, thresholds, None, ignore_index, validate_args, **kwargs)
