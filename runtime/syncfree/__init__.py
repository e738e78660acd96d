"""syncfree: sync-free distributed metrics and a host-sync guard for PyTorch.

Importing the package is cheap and does not import torch (its pytest plugin is loaded by every
pytest run): public names are resolved on first use (PEP 562).
"""

from typing import Any, List

_SUBMODULE_OF = {
    # base and helpers
    "Metric": "metric",
    "to_host": "host",
    "merge_state_dicts": "checkpoint",
    "MetricCollection": "collection",
    "validate": "validation",
    "validation_mode": "validation",
    # aggregation
    "MeanMetric": "aggregation",
    "SumMetric": "aggregation",
    "MaxMetric": "aggregation",
    "MinMetric": "aggregation",
    # classification
    "Accuracy": "tasks",
    "BinaryAccuracy": "classification",
    "MulticlassAccuracy": "classification",
    "Precision": "tasks",
    "BinaryPrecision": "classification",
    "MulticlassPrecision": "classification",
    "Recall": "tasks",
    "BinaryRecall": "classification",
    "MulticlassRecall": "classification",
    "F1Score": "tasks",
    "BinaryF1Score": "classification",
    "MulticlassF1Score": "classification",
    "ConfusionMatrix": "tasks",
    "BinaryConfusionMatrix": "classification",
    "MulticlassConfusionMatrix": "classification",
    "StatScores": "tasks",
    "BinaryStatScores": "scores",
    "MulticlassStatScores": "scores",
    "Specificity": "tasks",
    "BinarySpecificity": "scores",
    "MulticlassSpecificity": "scores",
    "FBetaScore": "tasks",
    "BinaryFBetaScore": "scores",
    "MulticlassFBetaScore": "scores",
    "JaccardIndex": "tasks",
    "BinaryJaccardIndex": "scores",
    "MulticlassJaccardIndex": "scores",
    # multilabel
    "MultilabelAccuracy": "multilabel",
    "MultilabelPrecision": "multilabel",
    "MultilabelRecall": "multilabel",
    "MultilabelF1Score": "multilabel",
    "MultilabelFBetaScore": "multilabel",
    "MultilabelSpecificity": "multilabel",
    "MultilabelStatScores": "multilabel",
    "MultilabelJaccardIndex": "multilabel",
    "MultilabelConfusionMatrix": "multilabel",
    # binned curves
    "BinaryROC": "curves",
    "BinaryPrecisionRecallCurve": "curves",
    "BinaryAUROC": "curves",
    "BinaryAveragePrecision": "curves",
    "MulticlassAUROC": "multiclass_curves",
    "AUROC": "tasks",
    "AveragePrecision": "tasks",
    "ROC": "tasks",
    "PrecisionRecallCurve": "tasks",
    "MulticlassAveragePrecision": "multiclass_curves",
    "MulticlassROC": "multiclass_curves",
    "MulticlassPrecisionRecallCurve": "multiclass_curves",
    "MultilabelAUROC": "multilabel_curves",
    "MultilabelAveragePrecision": "multilabel_curves",
    "MultilabelROC": "multilabel_curves",
    "MultilabelPrecisionRecallCurve": "multilabel_curves",
    # regression
    "MeanSquaredError": "regression",
    "MeanAbsoluteError": "regression",
    "MeanAbsolutePercentageError": "regression",
    "R2Score": "regression",
    # text
    "Perplexity": "text",
}

__all__ = sorted(_SUBMODULE_OF)


_SUBMODULES = ("guard",)  # ``syncfree.guard`` without importing it first


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBMODULES:
        module = importlib.import_module(f"syncfree.{name}")
        globals()[name] = module
        return module
    submodule = _SUBMODULE_OF.get(name)
    if submodule is None:
        raise AttributeError(f"module 'syncfree' has no attribute {name!r}")

    value = getattr(importlib.import_module(f"syncfree.{submodule}"), name)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext syncfree``: the ``%%sync_trace`` cell magic (``syncfree.ipython_magic``)."""
    from .ipython_magic import load_ipython_extension as load

    load(ipython)


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
