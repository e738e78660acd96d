"""SFL304: an aggregator built with NaN checks on and updated in a step."""
from __future__ import annotations

from syncfree_lint.analysis.metric_sites import MetricSite, is_aggregator, nan_checks_on
from syncfree_lint.rules.torchmetrics._common import SWITCH_DOC, ConstructionRule


class NanCheckedAggregator(ConstructionRule):
    code = "SFL304"
    name = "nan-checked-aggregator"
    messages = {
        "default": "aggregator built with NaN checks on (torchmetrics' default `nan_strategy`) and updated in a step: a "
                   "host read per update",
    }
    evidence = ("metric",)
    invalid = (
        """
        from torchmetrics import MeanMetric

        def train(step, loader, device):
            loss_metric = MeanMetric().to(device)
            for x, y in loader:
                loss_metric.update(step(x, y))
        """,
    )
    valid = (
        """
        from torchmetrics import MeanMetric

        def train(step, loader, device):
            loss_metric = MeanMetric(nan_strategy="disable").to(device)
            for x, y in loader:
                loss_metric.update(step(x, y))
        """,
        """
        from torchmetrics import MeanMetric

        def train(step, loader, device):
            loss_metric = MeanMetric().to(device)
            for x, y in loader:
                step(x, y)
            loss_metric.update(step(x, y))
        """,
    )
    doc = """
## What it does
Flags the construction of a torchmetrics aggregator whose `nan_strategy` checks values (the
default `"warn"`, or `"error"`, `"ignore"`, a float) when the metric is updated in a step.

## Why it syncs
Every `update` runs `torch.isnan(x).any()` and branches on it in Python: a device-to-host read.

## Example
```python
loss_metric = MeanMetric()                 # nan_strategy="warn"
for x, y in loader:
    loss_metric.update(step(x, y))
```

## Use instead
```python
from syncfree import MeanMetric            # NaNs counted on device
loss_metric = MeanMetric()
```
or `MeanMetric(nan_strategy="disable")` when NaNs cannot occur.
""" + SWITCH_DOC

    def applies(self, site: MetricSite) -> bool:
        return is_aggregator(site.class_name) and nan_checks_on(site)
