"""SFL302: a Python-number ``weight`` in an aggregator update."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from syncfree_lint.analysis.metric_sites import is_aggregator
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.edits import FixPlan, code
from syncfree_lint.rules.base import Rule
from syncfree_lint.rules.torchmetrics._common import first_arg, is_python_number, replacing


class PythonWeight(Rule[cst.Call]):
    code = "SFL302"
    name = "python-number-weight"
    messages = {
        "default": "a Python-number `weight` is copied to the device on every update; pass a tensor weight",
    }
    evidence = ("metric",)
    fix_title = "pass `torch.full_like(value, weight)`"
    node_types = (cst.Call,)
    invalid = (
        """
        import torch
        from torchmetrics import MeanMetric

        def train(model, loader, optimizer, device):
            mean_loss = MeanMetric(nan_strategy="disable").to(device)
            for x, y in loader:
                loss = model(x).mean()
                loss.backward()
                optimizer.step()
                mean_loss.update(loss, weight=1.0)
        """,
    )
    valid = (
        """
        import torch
        from torchmetrics import MeanMetric

        def train(model, loader, optimizer, device):
            mean_loss = MeanMetric(nan_strategy="disable").to(device)
            for x, y in loader:
                loss = model(x).mean()
                loss.backward()
                optimizer.step()
                mean_loss.update(loss, weight=torch.full_like(loss, 1.0))
        """,
    )
    doc = """
## What it does
Flags an aggregator update with a Python number as the weight (`update(v, weight=1.0)`) inside
a step.

## Why it syncs
torchmetrics turns the number into a tensor on the metric's device with `torch.as_tensor(...,
device=...)`, a blocking host-to-device copy, then broadcasts it.

## Example
```python
mean_loss = MeanMetric().to(device)
for x, y in loader:
    loss = criterion(model(x), y)
    mean_loss.update(loss, weight=1.0)
```

## Use instead
```python
mean_loss = MeanMetric().to(device)
for x, y in loader:
    loss = criterion(model(x), y)
    mean_loss.update(loss, weight=torch.full_like(loss, 1.0))
```

## Fix safety
Safe: the weight has the same value and the shape torchmetrics broadcasts it to.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = ctx.metric_call(node)
        if found is None or found[1] != "update" or not is_aggregator(found[0].class_name):
            return
        weight = _weight_arg(node)
        value = first_arg(node)
        if weight is None or value is None or not is_python_number(weight.value, ctx):
            return
        fix = None
        if ctx.is_tensor(value) and ctx.is_imported("torch"):
            torch_name = ctx.alias_of("torch") or "torch"
            replacement = f"{torch_name}.full_like({code(value)}, {code(weight.value)})"
            fix = FixPlan(self.fix_title, "safe", replacing(weight.value, ctx.current_statement(), replacement))
        ctx.report(self, weight.value, fix=fix)


def _weight_arg(node: cst.Call) -> Optional[cst.Arg]:
    positional = [a for a in node.args if a.keyword is None and not a.star]
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "weight":
            return arg
    return positional[1] if len(positional) > 1 else None
