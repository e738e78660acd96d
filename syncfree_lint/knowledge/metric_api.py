"""The part of a torchmetrics metric's public interface that a ``syncfree`` metric provides with
the same meaning. The torchmetrics -> syncfree switch is declined when a file reads anything else
of the metric object (``metric.tp``, ``metric.metric_state``, ``metric.plot()``): code that reads
torchmetrics internals would break or change. ``tests/unit/test_knowledge.py`` checks this table
against both real packages.
"""
from __future__ import annotations

SHARED_METRIC_API = frozenset({
    # the metric protocol
    "update", "forward", "compute", "reset",
    # nn.Module plumbing both inherit
    "to", "cuda", "cpu", "train", "eval", "training", "state_dict", "load_state_dict", "device", "dtype",
    "set_dtype", "float", "double", "half", "bfloat16", "type", "requires_grad_", "zero_grad",
    # constructor arguments both keep as attributes
    "num_classes", "average", "top_k", "ignore_index", "multidim_average", "validate_args", "zero_division",
})

#: ``self.<method>(name, metric)`` in a LightningModule: Lightning takes the metric object itself and
#: calls its ``compute``/``reset`` at epoch ends; a ``syncfree`` metric logs the same values there
#: (``tests/runtime/test_lightning.py``), so handing a metric to these is not an escape for the switch
LIGHTNING_LOG_METHODS = frozenset({"log", "log_dict"})

#: torchmetrics classes whose ``update`` reads the device whatever their arguments, beyond the checks the other
#: SFL3xx rules name (NaN checks of aggregators, input validation of classifiers): class -> what syncs, read in
#: torchmetrics' source (``tests/unit/test_knowledge.py`` runs each on the sync guard's stand-in and checks the read is
#: there, and that ``syncfree`` has the class and updates without one: SFL309's message offers it)
SYNCING_UPDATES = {
    "Perplexity": "indexes the target probabilities with a boolean mask (`probs[mask]`), which sizes its result on "
                  "the host",
}

#: torchmetrics' aggregation metrics (their ``update`` checks for NaN unless ``nan_strategy`` says otherwise)
AGGREGATORS = frozenset({"MeanMetric", "SumMetric", "MaxMetric", "MinMetric", "CatMetric", "RunningMean", "RunningSum"})

#: classification families: the class itself, or ``Binary``/``Multiclass``/``Multilabel`` + the name; their ``update``
#: validates the input tensors (a read of the device) while ``validate_args`` is on
CLASSIFICATION_BASES = ("Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "ConfusionMatrix", "AUROC",
                        "AveragePrecision", "Specificity", "StatScores", "JaccardIndex", "MatthewsCorrCoef",
                        "CohenKappa", "HammingDistance", "ExactMatch", "CalibrationError", "ROC",
                        "PrecisionRecallCurve")

#: classification classes whose constructor hands ``validate_args=False`` to the parent that does the checking and
#: never turns it back on, so ``update`` reads nothing whatever ``validate_args`` says (read in torchmetrics' source;
#: ``tests/unit/test_knowledge.py`` updates each on the sync guard's stand-in)
INPUTS_UNCHECKED = frozenset({"BinaryAUROC"})

#: what the bundled runtime implements: torchmetrics class -> the family of constructor arguments it honours
#: (``tests/unit/test_knowledge.py`` checks each against ``syncfree``'s exports and signatures)
SYNCFREE = {
    "MeanMetric": "aggregation", "SumMetric": "aggregation", "MaxMetric": "aggregation", "MinMetric": "aggregation",
    "Accuracy": "task", "Precision": "task", "Recall": "task", "F1Score": "task", "ConfusionMatrix": "task",
    "BinaryAccuracy": "binary", "BinaryPrecision": "binary", "BinaryRecall": "binary", "BinaryF1Score": "binary",
    "BinaryConfusionMatrix": "binary",
    "MulticlassAccuracy": "multiclass", "MulticlassPrecision": "multiclass", "MulticlassRecall": "multiclass",
    "MulticlassF1Score": "multiclass", "MulticlassConfusionMatrix": "multiclass",
    "MeanSquaredError": "regression", "MeanAbsoluteError": "regression",
    "MetricCollection": "collection",
}

#: constructor arguments every ``syncfree`` metric honours, and those of each family
RUNTIME_BASE_KWARGS = frozenset({"sync_on_compute", "compute_with_cache", "process_group", "dist_sync_on_step",
                                 "compute_on_cpu"})
RUNTIME_CLASS_KWARGS = {
    "aggregation": frozenset({"nan_strategy"}),
    "binary": frozenset({"threshold", "multidim_average", "ignore_index", "validate_args", "zero_division",
                         "normalize"}),
    "multiclass": frozenset({"num_classes", "top_k", "average", "multidim_average", "ignore_index", "validate_args",
                             "zero_division", "normalize"}),
    "task": frozenset({"task", "num_classes", "threshold", "top_k", "average", "multidim_average", "ignore_index",
                       "validate_args", "zero_division", "normalize"}),
    "regression": frozenset({"squared", "num_outputs"}),
}

#: values an argument must have for ``syncfree`` to honour it (anything else: keep torchmetrics)
RUNTIME_REQUIRED_VALUES = {
    "task": ("binary", "multiclass"),
    "multidim_average": ("global",),
    "dist_sync_on_step": (False,),
    "compute_on_cpu": (False,),
}

#: classification families whose update counts into a confusion matrix: ``torch.bincount`` (binary, multiclass) or a
#: boolean-mask index (multilabel), a read of the device in every update, whatever ``validate_args`` says
CONFMAT_BASES = frozenset({"JaccardIndex", "ConfusionMatrix", "MatthewsCorrCoef", "CohenKappa"})
#: families built on stat scores: their multiclass form counts per class with ``torch.bincount`` unless
#: ``average="micro"``; with it, and float scores, nothing is read (validation reads integer labels only)
STAT_SCORE_BASES = frozenset({"Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity",
                              "StatScores", "HammingDistance"})
#: the ``average`` a multiclass stat-score metric takes when none is given: ``MulticlassAccuracy`` counts per class,
#: the task wrapper ``Accuracy(task="multiclass")`` does not
DEFAULT_MULTICLASS_AVERAGE = "macro"
DEFAULT_TASK_WRAPPER_AVERAGE = "micro"
