"""SFL3xx: torchmetrics updates, computes and Lightning logging inside a step."""
from syncfree_lint.rules.torchmetrics import (
    aggregator_update, compute_in_step, cpu_metric_nccl, nan_checked_aggregator, python_scalar_value, python_weight,
    sync_dist_on_step, validating_classifier,
)

__all__ = [
    "aggregator_update", "compute_in_step", "cpu_metric_nccl", "nan_checked_aggregator", "python_scalar_value",
    "python_weight", "sync_dist_on_step", "validating_classifier",
]
