"""SFL108: an explicit ``synchronize()`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.rules.base import Rule, method_call


class ExplicitSynchronize(Rule[cst.Call]):
    code = "SFL108"
    name = "explicit-synchronize"
    messages = {
        "default": "`synchronize()` in a step blocks the host until the GPU is idle; remove it or time with CUDA events "
                   "read at log intervals",
        "function": "`{function}()` in a step blocks the host until the GPU is idle; remove it or time with CUDA events "
                    "read at log intervals",
    }
    evidence = ("synchronize",)
    requires = ("synchronize",)
    node_types = (cst.Call,)
    invalid = (
        """
        import time
        import torch

        def train(loader, train_step):
            for x, y in loader:
                t0 = time.perf_counter()
                train_step(x.cuda(), y.cuda()).backward()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
        """,
    )
    valid = (
        """
        import torch

        def train(loader, train_step):
            for step, (x, y) in enumerate(loader):
                train_step(x.cuda(), y.cuda()).backward()
                if step % 100 == 0:
                    torch.cuda.synchronize()
        """,
        """
        import torch

        def train(loader, train_step):
            for x, y in loader:
                train_step(x.cuda(), y.cuda()).backward()
            torch.cuda.synchronize()
        """,
    )
    doc = """
## What it does
Flags explicit waits inside a step: `torch.cuda.synchronize()` (and the `torch.xpu`, `torch.mps`,
`torch.accelerator` twins), `<stream>.synchronize()`, `<event>.synchronize()` and
`torch.cuda.current_stream().synchronize()`.

## Why it syncs
That is what it is for: the host blocks until the device has drained its queue. In a step it
is usually left over from timing code and empties the pipeline every step.

## Example
```python
for x, y in loader:
    t0 = time.perf_counter()
    train_step(x, y)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
```

## Use instead
```python
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for step, (x, y) in enumerate(loader):
    if step % 100 == 0:
        start.record()
    train_step(x, y)
    if step % 100 == 0:
        end.record()
        end.synchronize()               # once per 100 steps
        print(start.elapsed_time(end))
```

## Fix safety
No automatic fix: the wait may guard a measurement or a host buffer.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        if method_call(node) != "synchronize":
            if isinstance(node.func, cst.Name):
                qual = ctx.qualname(node.func) or ""
                if qual == "synchronize" and not node.args:  # synchronize = torch.cuda.synchronize
                    ctx.report(self, node)
                elif qual.startswith("torch.") and qual.endswith(".synchronize"):
                    ctx.report(self, node, "function", function=qual)
            return
        qual = ctx.qualname(node.func) or ""
        if qual.startswith("torch.") or not qual.startswith(("numpy.", "threading.", "multiprocessing.")):
            shown = qual if qual.startswith("torch.") else "synchronize"
            ctx.report(self, node, "function", function=shown)
