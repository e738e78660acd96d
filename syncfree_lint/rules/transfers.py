"""SFL4xx: host-to-device copies inside a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.tensors import is_cpu_device, is_true, keyword_value, positional
from syncfree_lint.fixes import pinned_transfer, scalar_tensor
from syncfree_lint.fixes.plan import FixPlan
from syncfree_lint.rules.base import Rule, method_call, receiver


class TensorFromPythonData(Rule[cst.Call]):
    code = "SFL401"
    name = "tensor-from-host-data-in-step"
    message = "`torch.tensor(..., device=...)` in a step copies host data to the device and waits; build it once outside the step, or keep it a CPU tensor"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `torch.tensor(<python data>, device=<accelerator>)` and
`torch.as_tensor(<python data or numpy>, device=...)` inside a step.

## Why it syncs
The data is in pageable host memory. The copy to the device is synchronous with respect to the
host (it is staged through a pinned buffer), and on CUDA it also waits on the stream, once per step.

## Example
```python
for x, y in loader:
    weights = torch.tensor([1.0, 2.0, 0.5], device="cuda")
    loss = F.cross_entropy(model(x), y, weight=weights)
```

## Use instead
```python
weights = torch.tensor([1.0, 2.0, 0.5], device="cuda")  # once, before the loop
for x, y in loader:
    loss = F.cross_entropy(model(x), y, weight=weights)
```
A Python scalar that changes per step can stay a CPU 0-d tensor: it reaches a GPU kernel as an
argument, without a copy.

## Fix safety
Safe, for a Python number: `torch.tensor(x, device=d)` -> `torch.full((), x, device=d)` with the
dtype `torch.tensor` infers (`torch.bool`, `torch.int64`; a float gets the default dtype either way),
`dtype=` and `requires_grad=` kept; only where `x` is proven one Python type (`fixes/scalar_tensor.py`).
Lists and arrays have no automatic fix: hoisting needs the data to be step-invariant.
"""
    fix_title = "fill on the device: `torch.full((), x, device=d)`, no host copy"

    def check(self, node: cst.Call, ctx) -> None:
        if not isinstance(node.func, (cst.Attribute, cst.Name)):
            return
        qual = ctx.qualname(node.func)
        if qual not in ("torch.tensor", "torch.as_tensor", "torch.asarray"):
            return
        device = keyword_value(node, "device")
        if device is None or is_cpu_device(device, ctx.imports):
            return
        data = positional(node, 0)
        if data is None or ctx.kind(data) in tensors.DEVICE_TENSORS:
            return
        name = qual.split(".")[-1]
        scope = ctx.function.node if ctx.function is not None else ctx.module
        ctx.report(self, node, f"`torch.{name}(..., device=...)` in a step copies host data to the device and waits; build it once outside the step, or keep it a CPU tensor",
                   fix=FixPlan(self.fix_title, "safe", scalar_tensor.builder(node, scope, ctx.state(self).setdefault("scopes", {}))))


class BlockingBatchTransfer(Rule[cst.Call]):
    code = "SFL402"
    name = "blocking-batch-transfer"
    message = "batch moved to the device without `non_blocking=True`: the host waits for the copy; use `pin_memory=True` in the loader and `non_blocking=True`"
    node_types = (cst.Call,)
    default_enabled = False
    doc = """
## What it does
Flags a batch drawn from a data loader moved with `.to(device)` or `.cuda()` without
`non_blocking=True`, inside a step. Off by default: it costs less than a device-to-host read,
and only pays off together with pinned memory.

## Why it syncs
A host-to-device copy from pageable memory blocks the host until the copy is staged. With
`pin_memory=True` in the loader and `non_blocking=True`, the copy overlaps with compute.

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
```

## Fix safety
Safe: `non_blocking=True` is added where the loop's loader is built in the same file with
`pin_memory=True` (`fixes/pinned_transfer.py`); without pinned memory it would gain nothing.
"""
    fix_title = "copy from pinned memory without waiting: `non_blocking=True`"

    def check(self, node: cst.Call, ctx) -> None:
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
            if target is None or is_cpu_device(target, ctx.imports):
                return
            if isinstance(target, cst.Attribute) and target.attr.value in ("float16", "bfloat16", "float32", "float", "half", "long", "int"):
                return
        scopes = ([ctx.function.node] if ctx.function is not None else []) + [ctx.module]
        build = pinned_transfer.builder(node, [loop.node for loop in ctx.loops], scopes, ctx.state(self).setdefault("scopes", {}))
        ctx.report(self, node, fix=FixPlan(self.fix_title, "safe", build))


RULES = (TensorFromPythonData, BlockingBatchTransfer)
