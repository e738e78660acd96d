"""SFL306: ``metric.compute()`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.rules.base import Rule


class ComputeInStep(Rule[cst.Call]):
    code = "SFL306"
    name = "metric-compute-in-step"
    messages = {
        "default": "`metric.compute()` in a step reads and syncs the metric every step; compute at log intervals or after "
                   "the epoch",
    }
    evidence = ("metric",)
    node_types = (cst.Call,)
    invalid = (
        """
        from torchmetrics.classification import MulticlassAccuracy

        def evaluate(model, loader, device):
            acc = MulticlassAccuracy(num_classes=10, validate_args=False).to(device)
            for step, (x, y) in enumerate(loader):
                acc.update(model(x), y)
                print(acc.compute())
        """,
    )
    valid = (
        """
        from torchmetrics.classification import MulticlassAccuracy

        def evaluate(model, loader, device):
            acc = MulticlassAccuracy(num_classes=10, validate_args=False).to(device)
            for step, (x, y) in enumerate(loader):
                acc.update(model(x), y)
                if step % 100 == 0:
                    print(acc.compute())
        """,
        """
        from torchmetrics.classification import MulticlassAccuracy

        def evaluate(model, loader, device):
            acc = MulticlassAccuracy(num_classes=10, validate_args=False).to(device)
            for step, (x, y) in enumerate(loader):
                acc.update(model(x), y)
            return acc.compute()
        """,
    )
    doc = """
## What it does
Flags `metric.compute()` on a torchmetrics object inside a step, not under an interval guard.

## Why it syncs
`compute()` synchronizes the states across processes (an `all_reduce` per state) and usually
runs checks and host-side branches. Every step, that serializes the ranks.

## Example
```python
acc = MulticlassAccuracy(num_classes=10).to(device)
for step, (x, y) in enumerate(loader):
    acc.update(model(x), y)
    print(acc.compute())
```

## Use instead
```python
acc = MulticlassAccuracy(num_classes=10).to(device)
for step, (x, y) in enumerate(loader):
    acc.update(model(x), y)
    if step % 100 == 0:
        print(acc.compute())
```

## Fix safety
No automatic fix: the interval is the user's choice.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = ctx.metric_call(node)
        if found is not None and found[1] == "compute":
            ctx.report(self, node)
