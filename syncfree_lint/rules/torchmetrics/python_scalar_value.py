"""SFL303: a Python number passed to a metric update."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.edits import FixPlan, code
from syncfree_lint.rules.base import Rule
from syncfree_lint.rules.torchmetrics._common import first_arg, is_python_number, replacing


class PythonScalarValue(Rule[cst.Call]):
    code = "SFL303"
    name = "python-scalar-metric-value"
    messages = {
        "default": "a Python number passed to a metric is copied to the device on every update; pass "
                   "`torch.as_tensor(value)`",
    }
    evidence = ("metric",)
    fix_title = "wrap the value in `torch.as_tensor(...)`"
    node_types = (cst.Call,)
    invalid = (
        """
        import time
        import torch
        from torchmetrics import MeanMetric

        def train(model, loader, optimizer, device):
            step_time = MeanMetric(nan_strategy="disable").to(device)
            for x, y in loader:
                t0 = time.perf_counter()
                model(x).mean().backward()
                optimizer.step()
                step_time.update(time.perf_counter() - t0)
        """,
    )
    valid = (
        """
        import time
        import torch
        from torchmetrics import MeanMetric

        def train(model, loader, optimizer, device):
            step_time = MeanMetric(nan_strategy="disable").to(device)
            for x, y in loader:
                t0 = time.perf_counter()
                model(x).mean().backward()
                optimizer.step()
                step_time.update(torch.as_tensor(time.perf_counter() - t0))
        """,
    )
    doc = """
## What it does
Flags a metric update (or call) whose value is a Python number inside a step: a literal, a
`float(...)`, the result of `.item()`, or `time.perf_counter()` arithmetic.

## Why it syncs
torchmetrics builds a tensor on the metric's device from the number (`torch.as_tensor(x,
device=...)`), a blocking host-to-device copy every update. A CPU 0-d tensor reaches a GPU kernel
as a kernel argument instead, with no copy.

## Example
```python
step_time = MeanMetric().to(device)
for x, y in loader:
    t0 = time.perf_counter()
    train_step(x, y)
    step_time.update(time.perf_counter() - t0)
```

## Use instead
```python
step_time = MeanMetric().to(device)
for x, y in loader:
    t0 = time.perf_counter()
    train_step(x, y)
    step_time.update(torch.as_tensor(time.perf_counter() - t0))
```

## Fix safety
Safe: the same number, as a CPU 0-d tensor.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = ctx.metric_call(node)
        if found is None or found[1] == "compute":
            return
        value = first_arg(node)
        if value is None or not is_python_number(value, ctx):
            return
        fix = None
        torch_name = ctx.alias_of("torch")
        if torch_name is not None:
            replacement = f"{torch_name}.as_tensor({code(value)})"
            fix = FixPlan(self.fix_title, "safe", replacing(value, ctx.current_statement(), replacement))
        ctx.report(self, value, fix=fix)
