"""The ``task=`` wrappers (``Accuracy(task="multiclass", num_classes=10)``, ``AUROC(task=...)``, ...): ONE
factory that builds the task's metric, as torchmetrics' wrappers do.

A wrapper is declared by torchmetrics' signature after ``task`` (names, order and defaults, so that
positional calls bind alike) and by the class of each task it offers. A call binds its arguments to
that signature, then hands the task's class the ones its constructor takes, by keyword, plus the
rest of ``**kwargs`` (the ``Metric`` options, ``capacity=``): ``num_classes`` reaches the multiclass
metric, ``max_fpr`` the binary AUROC. ``top_k=None`` means 1, as in torchmetrics.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, ClassVar, Dict, Tuple

from syncfree.metric import Metric

_TASKS = ("binary", "multiclass", "multilabel")
_COMMON = (("threshold", 0.5), ("num_classes", None), ("num_labels", None))
_SCORES = _COMMON + (("average", "micro"), ("multidim_average", "global"), ("top_k", 1), ("ignore_index", None),
                     ("validate_args", True))
_CURVES = (("thresholds", None), ("num_classes", None), ("num_labels", None))


def _task(owner: str, task: Any, offered: Tuple[str, ...] = _TASKS) -> str:
    """``task`` (a string or an enum with ``.value``) checked against the tasks ``owner`` offers."""
    task = getattr(task, "value", task)
    if task not in _TASKS:
        raise ValueError(f"{owner}: task must be 'binary', 'multiclass' or 'multilabel', got {task!r}")
    if task not in offered:
        raise TypeError(f"{owner}: task={task!r} is not supported by syncfree for this metric. Keep torchmetrics' "
                        f"{task.capitalize()}{owner} for it, or use task={' / '.join(map(repr, offered))}.")
    return task


class TaskWrapper:
    """Base of the wrappers: ``params`` (torchmetrics' signature after ``task``) and ``classes`` (task ->
    ``module.Class`` of syncfree)."""

    params: ClassVar[Tuple[Tuple[str, Any], ...]] = ()
    classes: ClassVar[Dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        parameters = [inspect.Parameter("task", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
                       for name, default in cls.params]
        parameters.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
        cls.__signature__ = inspect.Signature(parameters, return_annotation=Metric)  # type: ignore[attr-defined]

    def __new__(cls, *args: Any, **kwargs: Any) -> Metric:  # type: ignore[misc]  # returns the task's metric, not cls
        owner = cls.__name__
        try:
            bound = cls.__signature__.bind(*args, **kwargs)  # type: ignore[attr-defined]
        except TypeError as exc:
            raise TypeError(f"{owner}: {exc}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        options = values.pop("kwargs")
        task = _task(owner, values.pop("task"), tuple(cls.classes))
        if "top_k" in values and values["top_k"] is None:
            values["top_k"] = 1
        module, _, name = cls.classes[task].rpartition(".")
        target = getattr(importlib.import_module(module), name)
        accepted = inspect.signature(target.__init__).parameters
        return target(**{key: value for key, value in values.items() if key in accepted}, **options)


class Accuracy(TaskWrapper):
    """``Accuracy(task=...)``: :class:`BinaryAccuracy`, :class:`MulticlassAccuracy` or :class:`MultilabelAccuracy`."""

    params = _SCORES
    classes = {"binary": "syncfree.classification.BinaryAccuracy",
               "multiclass": "syncfree.classification.MulticlassAccuracy",
               "multilabel": "syncfree.multilabel.MultilabelAccuracy"}


class Precision(TaskWrapper):
    """``Precision(task=...)``: the binary, multiclass or multilabel precision."""

    params = _SCORES
    classes = {"binary": "syncfree.classification.BinaryPrecision",
               "multiclass": "syncfree.classification.MulticlassPrecision",
               "multilabel": "syncfree.multilabel.MultilabelPrecision"}


class Recall(TaskWrapper):
    """``Recall(task=...)``: the binary, multiclass or multilabel recall."""

    params = _SCORES
    classes = {"binary": "syncfree.classification.BinaryRecall",
               "multiclass": "syncfree.classification.MulticlassRecall",
               "multilabel": "syncfree.multilabel.MultilabelRecall"}


class F1Score(TaskWrapper):
    """``F1Score(task=...)``: the binary, multiclass or multilabel F1 score."""

    params = _SCORES + (("zero_division", 0),)
    classes = {"binary": "syncfree.classification.BinaryF1Score",
               "multiclass": "syncfree.classification.MulticlassF1Score",
               "multilabel": "syncfree.multilabel.MultilabelF1Score"}


class FBetaScore(TaskWrapper):
    """``FBetaScore(task=..., beta=...)``: the binary, multiclass or multilabel F-beta score."""

    params = (("beta", 1.0),) + _SCORES + (("zero_division", 0),)
    classes = {"binary": "syncfree.scores.BinaryFBetaScore",
               "multiclass": "syncfree.scores.MulticlassFBetaScore",
               "multilabel": "syncfree.multilabel.MultilabelFBetaScore"}


class Specificity(TaskWrapper):
    """``Specificity(task=...)``: the binary, multiclass or multilabel specificity."""

    params = _SCORES
    classes = {"binary": "syncfree.scores.BinarySpecificity",
               "multiclass": "syncfree.scores.MulticlassSpecificity",
               "multilabel": "syncfree.multilabel.MultilabelSpecificity"}


class StatScores(TaskWrapper):
    """``StatScores(task=...)``: binary, multiclass or multilabel stat scores."""

    params = _SCORES
    classes = {"binary": "syncfree.scores.BinaryStatScores",
               "multiclass": "syncfree.scores.MulticlassStatScores",
               "multilabel": "syncfree.multilabel.MultilabelStatScores"}


class JaccardIndex(TaskWrapper):
    """``JaccardIndex(task=...)``: the binary, multiclass or multilabel Jaccard index."""

    params = _COMMON + (("average", "macro"), ("ignore_index", None), ("validate_args", True))
    classes = {"binary": "syncfree.scores.BinaryJaccardIndex",
               "multiclass": "syncfree.scores.MulticlassJaccardIndex",
               "multilabel": "syncfree.multilabel.MultilabelJaccardIndex"}


class ConfusionMatrix(TaskWrapper):
    """``ConfusionMatrix(task=...)``: the binary, multiclass or multilabel confusion matrix."""

    params = _COMMON + (("normalize", None), ("ignore_index", None), ("validate_args", True))
    classes = {"binary": "syncfree.classification.BinaryConfusionMatrix",
               "multiclass": "syncfree.classification.MulticlassConfusionMatrix",
               "multilabel": "syncfree.multilabel.MultilabelConfusionMatrix"}


class AUROC(TaskWrapper):
    """``AUROC(task=...)``: the binary, multiclass or multilabel AUROC (binned, or exact for ``thresholds=None``)."""

    params = _CURVES + (("average", "macro"), ("max_fpr", None), ("ignore_index", None), ("validate_args", True))
    classes = {"binary": "syncfree.curves.BinaryAUROC",
               "multiclass": "syncfree.multiclass_curves.MulticlassAUROC",
               "multilabel": "syncfree.multilabel_curves.MultilabelAUROC"}


class AveragePrecision(TaskWrapper):
    """``AveragePrecision(task=...)``: the binary, multiclass or multilabel average precision."""

    params = _CURVES + (("average", "macro"), ("ignore_index", None), ("validate_args", True))
    classes = {"binary": "syncfree.curves.BinaryAveragePrecision",
               "multiclass": "syncfree.multiclass_curves.MulticlassAveragePrecision",
               "multilabel": "syncfree.multilabel_curves.MultilabelAveragePrecision"}


class ROC(TaskWrapper):
    """``ROC(task=...)``: the binary, multiclass or multilabel ROC curve (binned, or exact for ``thresholds=None``)."""

    params = _CURVES + (("ignore_index", None), ("validate_args", True))
    classes = {"binary": "syncfree.curves.BinaryROC",
               "multiclass": "syncfree.multiclass_curves.MulticlassROC",
               "multilabel": "syncfree.multilabel_curves.MultilabelROC"}


class PrecisionRecallCurve(TaskWrapper):
    """``PrecisionRecallCurve(task=...)``: the binary, multiclass or multilabel precision-recall curve (binned,
    or exact for ``thresholds=None``)."""

    params = _CURVES + (("ignore_index", None), ("validate_args", True))
    classes = {"binary": "syncfree.curves.BinaryPrecisionRecallCurve",
               "multiclass": "syncfree.multiclass_curves.MulticlassPrecisionRecallCurve",
               "multilabel": "syncfree.multilabel_curves.MultilabelPrecisionRecallCurve"}
