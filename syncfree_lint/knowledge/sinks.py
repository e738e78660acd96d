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

#: methods of a ``logging.Logger`` (and loguru-style loggers) that format their arguments
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})
#: logger methods below the default level: their lazy ``%`` arguments are never formatted unless the
#: user turns debug logging on (``logger.debug("center %s", t)`` reads nothing)
QUIET_LOGGER_METHODS = frozenset({"debug"})
#: methods that show a value (loggers, progress bars, writers, trackers): a statement that only
#: calls one of these displays what it was given, and may run at an interval instead (a suggestion:
#: fewer lines shown). Also read by the SFL101 proof: a float and ``float(t)`` log alike here.
DISPLAY_METHODS = LOGGER_METHODS | frozenset({"log_metric", "log_metrics", "log_dict", "set_postfix", "set_postfix_str",
                                              "set_description", "set_description_str"}) | WRITER_METHODS
#: functions that show their arguments
DISPLAY_FUNCTIONS = frozenset({"print"})
#: the interval a display-only suggestion proposes (``fixes/display_interval.py``): the reader chooses
SUGGESTED_INTERVAL = 100
