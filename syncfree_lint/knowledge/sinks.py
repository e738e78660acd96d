"""Logging sinks that read a tensor's value on the host when handed one.

TensorBoard's ``SummaryWriter`` converts a tensor with ``.cpu().numpy()``; wandb, mlflow,
accelerate's and Lightning Fabric's trackers convert with ``.item()``. Lightning's
``LightningModule.log`` is not a sink here: it keeps values on the device between logging
intervals (its ``sync_dist`` is SFL308's concern).
"""
from __future__ import annotations

#: methods that read their value arguments on the host, whatever the receiver (SummaryWriter)
WRITER_METHODS = frozenset({"add_scalar", "add_scalars", "add_histogram"})
#: functions, by qualified name, that read the values of their arguments (or of a dict argument)
SINK_FUNCTIONS = frozenset({
    "wandb.log", "mlflow.log_metric", "mlflow.log_metrics", "neptune.log_metric", "clearml.Logger.report_scalar",
})
#: methods of an ``Accelerator``/``Fabric`` object that send values to the trackers
ACCELERATOR_SINK_METHODS = frozenset({"log", "log_dict"})
#: methods of an experiment-tracker run or logger object (``run.log(...)``, ``logger.log_metrics(...)``)
TRACKER_METHODS = frozenset({"log_metrics", "log_metric"})
