"""SFL105: ``float(t)``, ``int(t)``, ``math.fn(t)`` of a tensor in a step."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.rules.base import Rule

_CONVERTERS = {"float", "int", "bool", "complex"}


class PythonScalar(Rule[cst.Call]):
    code = "SFL105"
    name = "python-scalar-of-tensor"
    messages = {
        "default": "converting a tensor to a Python number in a step waits for the GPU; keep the tensor and read it at "
                   "log intervals",
        "function": "`{function}()` of a tensor in a step waits for the GPU; keep the tensor and read it at log intervals",
    }
    node_types = (cst.Call,)
    invalid = (
        """
        import torch.nn.functional as F

        def train(model, loader):
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                history.append(float(loss))
        """,
        """
        import math
        import torch

        def train(model, loader):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                print(math.sqrt(loss))
        """,
    )
    valid = (
        """
        import torch.nn.functional as F

        def train(model, loader):
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                history.append(loss.detach())
        """,
        """
        def train(model, loader, args):
            for x, y in loader:
                model(x, scale=float(args.scale))
        """,
    )
    doc = """
## What it does
Flags `float(t)`, `int(t)`, `bool(t)`, `complex(t)`, `math.<fn>(t)` and `operator.index(t)`
on a value known to be a tensor, inside a step.

## Why it syncs
Each of these calls `t.item()` under the hood: a device-to-host copy that waits for every
queued kernel.

## Example
```python
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    history.append(float(loss))
```

## Use instead
```python
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    history.append(loss.detach())
history = torch.stack(history).tolist()  # once, after the loop
```
For math functions, use the `torch` twin (`torch.sqrt`, `torch.exp`), which stays on device.

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        func = node.func
        if not node.args:
            return
        name: Optional[str] = None
        if isinstance(func, cst.Name) and func.value in _CONVERTERS and not ctx.is_imported(func.value):
            name = func.value
        elif isinstance(func, (cst.Attribute, cst.Name)):
            qual = ctx.qualname(func) or ""
            if qual.startswith("math.") or qual == "operator.index":
                name = qual
        if name is None:
            return
        first = node.args[0].value
        if ctx.is_tensor(first):
            ctx.report(self, node, "function", function=name)
