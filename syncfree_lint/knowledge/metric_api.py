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
