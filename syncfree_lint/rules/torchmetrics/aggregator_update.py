"""SFL301: a torchmetrics aggregator updated in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.metric_sites import is_aggregator, nan_checks_on
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.fixes.metric_switch import switch_plan
from syncfree_lint.rules.base import Rule
from syncfree_lint.rules.torchmetrics._common import SWITCH_DOC, SWITCH_TITLE


class AggregatorUpdate(Rule[cst.Call]):
    code = "SFL301"
    name = "torchmetrics-aggregator-update"
    messages = {
        "default": "torchmetrics aggregator `update` checks its input for NaN with a host read every step; use the "
                   "`syncfree` metric",
        "metric": "torchmetrics `{metric}` {call} checks its input for NaN with a host read every step; use "
                  "`syncfree.{metric}`",
    }
    evidence = ("metric",)
    fix_title = SWITCH_TITLE
    node_types = (cst.Call,)
    invalid = (
        """
        from torchmetrics import MeanMetric

        def train(model, loader, optimizer, criterion, device):
            train_loss = MeanMetric().to(device)
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                train_loss.update(loss)
        """,
        """
        import torchmetrics

        def train(model, loader, optimizer, criterion, device):
            train_loss = torchmetrics.SumMetric().to(device)
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                train_loss(loss)
        """,
    )
    valid = (
        """
        from syncfree import MeanMetric

        def train(model, loader, optimizer, criterion, device):
            train_loss = MeanMetric().to(device)
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                train_loss.update(loss)
        """,
        """
        from torchmetrics import MeanMetric

        def train(model, loader, optimizer, criterion, device):
            train_loss = MeanMetric(nan_strategy="disable").to(device)
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                train_loss.update(loss)
        """,
    )
    doc = """
## What it does
Flags `update(value)` or a call (`metric(value)`) of a torchmetrics aggregator (`MeanMetric`,
`SumMetric`, `MaxMetric`, `MinMetric`, ...) inside a step.

## Why it syncs
The aggregators check their input for NaN with `if torch.isnan(x).any():`, a device-to-host
read every update. A Python scalar input also costs a blocking host-to-device copy.

## Example
```python
from torchmetrics import MeanMetric
train_loss = MeanMetric().to(device)
for x, y in loader:
    loss = step(x, y)
    train_loss.update(loss)
```

## Use instead
```python
from syncfree import MeanMetric
train_loss = MeanMetric().to(device)
for x, y in loader:
    loss = step(x, y)
    train_loss.update(loss)           # NaNs counted on device, reported by syncfree.to_host
```
""" + SWITCH_DOC

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = ctx.metric_call(node)
        if found is None or found[1] == "compute" or not is_aggregator(found[0].class_name):
            return
        site = found[0]
        if not nan_checks_on(site):
            return  # nan_strategy="disable": no host read (a Python value is SFL303's)
        ctx.report(self, node, "metric", metric=site.class_name, call=found[1], fix=switch_plan(ctx, site))
