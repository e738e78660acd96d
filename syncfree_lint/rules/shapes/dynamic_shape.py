"""SFL203: ``unique``, ``bincount``, ``repeat_interleave`` and ``one_hot`` sized by the data, in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import keyword_value, positional
from syncfree_lint.rules.base import Rule, method_call
from syncfree_lint.rules.shapes._common import device_args, device_receiver, torch_call


class DynamicShapeOps(Rule[cst.Call]):
    code = "SFL203"
    name = "data-dependent-shape-op"
    messages = {
        "default": "this op has a data-dependent output shape: the host waits for the GPU to size the result",
        "unique": "`{op}` has a data-dependent output shape: the host waits for the GPU to size the result; keep a "
                  "fixed-size representation (a histogram over known values)",
        "bincount": "`bincount` has a data-dependent output shape: the host waits for the GPU to size the result; use "
                    "`scatter_add_` into a fixed-size tensor",
        "repeat_interleave": "`repeat_interleave` with tensor repeats and no `output_size=` waits for the GPU to sum the "
                             "repeats; pass `output_size=`",
        "one_hot": "`one_hot` without `num_classes` waits for the GPU to find the largest label; pass `num_classes=`",
    }
    evidence = (".unique(", "bincount")
    requires = ("unique", "bincount", "repeat_interleave", "one_hot")
    node_types = (cst.Call,)
    invalid = (
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader):
            for x, y in loader:
                target = F.one_hot(y)
                model(x, target).sum().backward()
        """,
        """
        import torch

        def train(model, loader):
            for x, y in loader:
                counts = torch.bincount(y)
                model(x, counts).sum().backward()
        """,
        """
        def train(model, loader):
            for x, y in loader:
                classes = y.unique()
                model(x, classes).sum().backward()
        """,
    )
    valid = (
        """
        import torch.nn.functional as F

        def train(model, loader, num_classes):
            for x, y in loader:
                target = F.one_hot(y, num_classes=num_classes)
                model(x, target).sum().backward()
        """,
        """
        import torch

        def train(model, loader, lengths, total):
            for x, y in loader:
                index = torch.repeat_interleave(x, lengths, output_size=total)
                model(index).sum().backward()
        """,
    )
    doc = """
## What it does
Flags, inside a step: `torch.unique` / `t.unique()`, `unique_consecutive`, `torch.bincount` /
`t.bincount()`, `repeat_interleave(t, repeats_tensor)` without `output_size=`, and
`F.one_hot(t)` without `num_classes`.

## Why it syncs
The output size depends on values computed on the device (how many distinct values, the
largest label, the sum of repeats). The host reads them back before it can allocate.

## Example
```python
for x, y in loader:
    target = F.one_hot(y)                          # size = y.max() + 1
    counts = torch.bincount(y)                     # size = y.max() + 1
```

## Use instead
```python
for x, y in loader:
    target = F.one_hot(y, num_classes=num_classes)
    counts = torch.zeros(num_classes, device=y.device).scatter_add_(0, y, torch.ones_like(y, dtype=torch.float))
```
`repeat_interleave(t, repeats, output_size=n)` when the total is known.

## Fix safety
No automatic fix: the static size is something only the user knows.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = torch_call(node, ctx, "unique", "unique_consecutive", "bincount")
        method = None if found else method_call(node)  # `torch.unique(x)` is a function: its argument decides
        if not found and method in ("unique", "unique_consecutive", "bincount") and device_receiver(node, ctx):
            found = method
        if found and (device_args(node, ctx) if not method else True):
            if found == "bincount":
                ctx.report(self, node, "bincount")
            else:
                ctx.report(self, node, "unique", op=found)
            return
        if torch_call(node, ctx, "repeat_interleave") or method == "repeat_interleave":
            if keyword_value(node, "output_size") is not None:
                return
            repeats = keyword_value(node, "repeats")
            index = 0 if method and not torch_call(node, ctx, "repeat_interleave") else 1
            value = repeats if repeats is not None else positional(node, index)
            if value is not None and ctx.is_tensor(value):
                ctx.report(self, node, "repeat_interleave")
            return
        if torch_call(node, ctx, "one_hot"):
            classes = keyword_value(node, "num_classes")
            value = classes if classes is not None else positional(node, 1)
            missing = value is None or (isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer)
                                        and value.expression.value == "1")
            if missing:
                ctx.report(self, node, "one_hot")
