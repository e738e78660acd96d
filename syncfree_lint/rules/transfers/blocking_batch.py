"""SFL402 (opt-in): a batch moved to the device without ``non_blocking=True``."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import is_true, keyword_value, positional
from syncfree_lint.edits import FixPlan
from syncfree_lint.fixes import pinned_transfer
from syncfree_lint.rules.base import Rule, method_call, receiver


class BlockingBatchTransfer(Rule[cst.Call]):
    code = "SFL402"
    name = "blocking-batch-transfer"
    messages = {
        "default": "batch moved to the device without `non_blocking=True`: the host waits for the copy; copy from "
                   "pinned memory (`pin_memory=True` in the loader, or `.pin_memory()`) with `non_blocking=True`",
    }
    node_types = (cst.Call,)
    default_enabled = False
    invalid = (
        """
        def train(model, loader, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                model(x, y).backward()
        """,
        """
        import torch
        data = torch.randint(0, 50, (10000,))
        def get_batch(device):
            ix = torch.randint(len(data) - 8, (4,))
            return torch.stack([data[i:i + 8] for i in ix]).to(device)
        def train(model, optimizer, device):
            for step in range(100):
                model(get_batch(device)).backward()
                optimizer.step()
        """,
    )
    valid = (
        """
        def train(model, loader, device):
            for x, y in loader:
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                model(x, y).backward()
        """,
        """
        import torch
        data = torch.randint(0, 50, (10000,))
        def get_batch(device):
            ix = torch.randint(len(data) - 8, (4,))
            return torch.stack([data[i:i + 8] for i in ix]).pin_memory().to(device, non_blocking=True)
        def train(model, optimizer, device):
            for step in range(100):
                model(get_batch(device)).backward()
                optimizer.step()
        """,
    )
    doc = """
## What it does
Flags a batch moved with `.to(device)` or `.cuda()` without `non_blocking=True`, inside a step:
one drawn from a data loader, or one assembled on the host from rows of data prepared before
(`torch.stack([data[i] for i in ix])`, as nanoGPT's `get_batch` does). Off by default: nearly
every loop copies its batch this way, and the change only pays off together with pinned memory.

## Why it syncs
A blocking host-to-device copy makes the host wait until the copy is done, behind every kernel
already queued on the stream: on an H100, `torch.cuda.set_sync_debug_mode("warn")` reports each
such copy as a synchronizing operation (`benchmarks/results/gpu/sync_debug_vs_lint.txt`). From
pinned memory with `non_blocking=True`, the copy is queued and the host goes on.

## Example
```python
for x, y in loader:
    x, y = x.to(device), y.to(device)
```

## Use instead
```python
loader = DataLoader(dataset, batch_size=64, pin_memory=True)
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)

# a batch assembled on the host
x = torch.stack([data[i:i + block] for i in ix]).pin_memory().to(device, non_blocking=True)
```

## Fix safety
Safe: `non_blocking=True` is added where the loop's loader is built in the same file with
`pin_memory=True` (`fixes/pinned_transfer.py`); without pinned memory it would gain nothing.
"""
    fix_title = "copy from pinned memory without waiting: `non_blocking=True`"

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        name = method_call(node)
        if name not in ("to", "cuda"):
            return
        blocking = keyword_value(node, "non_blocking")
        if blocking is not None and is_true(blocking):
            return
        if ctx.kind(receiver(node)) not in (tensors.BATCH, tensors.HOST_BATCH):
            return
        if name == "to":
            device = keyword_value(node, "device")
            target = device if device is not None else positional(node, 0)
            if target is None or ctx.is_cpu_device(target):
                return
            if isinstance(target, cst.Attribute) and target.attr.value in ("float16", "bfloat16", "float32", "float", "half",
                                                                          "long", "int"):
                return
        build = pinned_transfer.builder(node, ctx.enclosing_loops(), ctx.enclosing_scopes(), ctx.state(self).setdefault("scopes", {}))
        ctx.report(self, node, fix=FixPlan(self.fix_title, "safe", build))
