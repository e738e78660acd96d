"""SFL103: ``.numpy()`` / ``np.asarray(t)`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import positional
from syncfree_lint.rules.base import Rule, method_call
from syncfree_lint.rules.host_reads._common import host_read_receiver


class NumpyRead(Rule[cst.Call]):
    code = "SFL103"
    name = "numpy-in-step"
    messages = {
        "default": "`.numpy()` in a step copies to the host and waits for the GPU; keep tensors on device and convert "
                   "after the loop",
        "function": "`{function}()` of a tensor in a step copies to the host and waits for the GPU; convert after the loop",
    }
    evidence = (".numpy(",)
    node_types = (cst.Call,)
    invalid = (
        """
        def evaluate(model, loader):
            for x, y in loader:
                scores.append(model(x.cuda()).softmax(-1).numpy())
        """,
        """
        import numpy as np
        import torch

        def evaluate(model, loader):
            for x, y in loader:
                out = torch.softmax(model(x.cuda()), -1)
                scores.append(np.asarray(out))
        """,
        """
        def evaluate(model, loader):
            for x, y in loader:
                scores.append(model(x.cuda()).softmax(-1).numpy(force=True))
        """,
    )
    valid = (
        """
        def evaluate(model, loader):
            for x, y in loader:
                scores.append(model(x.cuda()).softmax(-1))
            return torch.cat(scores).cpu().numpy()
        """,
        """
        import numpy as np

        def evaluate(model, loader):
            for x, y in loader:
                weights = np.asarray([1.0, 2.0])
                model(x.cuda(), weights)
        """,
    )
    doc = """
## What it does
Flags `t.numpy()` (and `t.numpy(force=True)`, which copies to the host first), and `np.asarray(t)` / `np.array(t)` of a tensor, inside a step. After a
`.cpu()` on the same chain (`t.cpu().numpy()`), only the `.cpu()` is flagged: the copy has
already happened there.

## Why it syncs
NumPy arrays live in host memory, so the tensor has to be copied from the device first, and
the copy waits for every queued kernel.

## Example
```python
for x, y in loader:
    scores.append(model(x).softmax(-1).numpy())
```

## Use instead
```python
for x, y in loader:
    scores.append(model(x).softmax(-1))
scores = torch.cat(scores).cpu().numpy()  # once, after the loop
```

## Fix safety
No automatic fix: the consumer of the array decides where the conversion belongs.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        name = method_call(node)
        # `.numpy(force=True)` copies a device tensor to the host first
        if name == "numpy" and all(arg.keyword is not None and arg.keyword.value == "force" for arg in node.args) \
                and host_read_receiver(node, ctx):
            ctx.report(self, node)
            return
        if isinstance(node.func, (cst.Attribute, cst.Name)):
            qual = ctx.qualname(node.func)
            if qual in ("numpy.asarray", "numpy.array", "numpy.asanyarray"):
                first = positional(node, 0)
                if first is not None and ctx.is_tensor(first):
                    ctx.report(self, node, "function", function=qual.replace("numpy", "np"))
