"""SFL201: ``nonzero`` and its twins in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import keyword_value
from syncfree_lint.knowledge.syncing_api import DATA_DEPENDENT_FUNCTIONS
from syncfree_lint.rules.base import Rule, method_call, receiver
from syncfree_lint.rules.shapes._common import device_args, device_receiver, torch_call


class Nonzero(Rule[cst.Call]):
    code = "SFL201"
    name = "nonzero-in-step"
    messages = {
        "default": "`nonzero` has a data-dependent output shape: the host waits for the GPU to size the result; use a mask "
                   "with `torch.where`",
        "function": "`torch.{function}` has a data-dependent output shape: the host waits for the GPU to size the result; "
                    "use a mask with `torch.where`",
        "where": "single-argument `torch.where(cond)` is `nonzero`: the host waits for the GPU to size the result; use the "
                 "three-argument form",
        "method": "`.{method}()` has a data-dependent output shape: the host waits for the GPU to size the result; use a "
                  "mask with `torch.where`",
        "library": "`{function}()` keeps a data-dependent number of boxes: the host waits for the GPU to size the result; "
                   "call it once per batch (`batched_nms` with the image index as `idxs`), not once per image",
    }
    evidence = ("nonzero", "nms")
    requires = ("nonzero", "argwhere", "where", "nms")
    node_types = (cst.Call,)
    invalid = (
        """
        import torch

        def train(model, loader, ignore_index):
            for x, y in loader:
                logits = model(x)
                idx = torch.nonzero(y == ignore_index)
                logits.sum().backward()
        """,
        """
        import torch

        def train(model, loader):
            for x, y in loader:
                logits = model(x)
                rows = torch.where(logits > 0)
                logits.sum().backward()
        """,
        """
        import torch
        from torchvision.ops import batched_nms

        @torch.no_grad()
        def evaluate(model, loader, results):
            model.eval()
            for images, sizes in loader:
                boxes, scores, labels = model(images.cuda())
                for i in range(boxes.shape[0]):
                    keep = batched_nms(boxes[i], scores[i], labels[i], 0.5)
                    results.append(keep)
        """,
    )
    valid = (
        """
        import torch

        def train(model, loader, ignore_index):
            for x, y in loader:
                logits = torch.where((y == ignore_index).unsqueeze(-1), 0.0, model(x))
                logits.sum().backward()
        """,
        """
        import torch
        import torchvision

        def prepare(boxes, scores):
            return torchvision.ops.nms(boxes.cpu(), scores.cpu(), 0.5)
        """,
        """
        import numpy as np

        def train(model, loader, labels):
            for x, y in loader:
                model(x).sum().backward()
                kept = np.nonzero(labels)
        """,
    )
    doc = """
## What it does
Flags `torch.nonzero(t)`, `t.nonzero()`, `torch.argwhere(t)`, single-argument
`torch.where(cond)` and torchvision's `nms`/`batched_nms` of device boxes inside a step.

## Why it syncs
The number of results is only known once the kernel has run: the host reads the count back
(a sync) to allocate the output before it can queue anything that uses it. torchvision's CUDA
NMS copies its overlap mask to the host and chooses the kept boxes there: one sync per call, so
a per-image loop of `nms` calls syncs once per image.

## Example
```python
for x, y in loader:
    idx = torch.nonzero(y == ignore_index)
    logits[idx] = 0.0
```

## Use instead
```python
for x, y in loader:
    logits = torch.where((y == ignore_index).unsqueeze(-1), 0.0, logits)
```
If the indices are needed, `torch.nonzero_static(t, size=k)` gives a fixed-size result.

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        qual = ctx.qualname(node.func)
        if qual in DATA_DEPENDENT_FUNCTIONS:
            if device_args(node, ctx):
                ctx.report(self, node, "library", function=qual.rsplit(".", 1)[-1])
            return
        found = torch_call(node, ctx, "nonzero", "argwhere")
        if found:
            if device_args(node, ctx):
                ctx.report(self, node, "function", function=found)
            return
        if torch_call(node, ctx, "where") and len(node.args) == 1 and node.args[0].keyword is None:
            if device_args(node, ctx):
                ctx.report(self, node, "where")
            return
        name = method_call(node)
        if name in ("nonzero", "argwhere") and device_receiver(node, ctx):
            if ctx.is_tensor(receiver(node)) or name == "nonzero" and keyword_value(node, "as_tuple") is not None \
                    or ctx.kind(receiver(node)) is None:
                ctx.report(self, node, "method", method=name)
