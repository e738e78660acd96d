"""SFL111: a library call that waits for the device inside, in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.knowledge.syncing_api import (
    READING_FUNCTIONS, READING_METHODS, SCALER_ONLY_METHODS, SYNCING_FUNCTIONS, SYNCING_METHODS,
)
from syncfree_lint.rules.base import Rule, method_call, receiver


class SyncingCall(Rule[cst.Call]):
    code = "SFL111"
    name = "syncing-call-in-step"
    messages = {
        "default": "`{call}` in a step waits for the GPU: it {why}; call it at log intervals or once per epoch",
    }
    evidence = ("barrier", "_object", "get_scale", "GradScaler", "equal", "allclose", "is_nonzero", "assert_close", "LBFGS")
    node_types = (cst.Call,)
    invalid = (
        """
        import torch.distributed as dist
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x).mean().backward()
                optimizer.step()
                dist.barrier()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            scaler = torch.cuda.amp.GradScaler()
            for x, y in loader:
                scaler.scale(model(x).mean()).backward()
                scaler.step(optimizer)
                scaler.update()
                print(scaler.get_scale())
        """,
    )
    valid = (
        """
        import torch.distributed as dist
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x).mean().backward()
                optimizer.step()
            dist.barrier()
        """,
        """
        import torch
        def train(model, loader, optimizer, log_every=100):
            scaler = torch.cuda.amp.GradScaler()
            for step, (x, y) in enumerate(loader):
                scaler.scale(model(x).mean()).backward()
                scaler.step(optimizer)
                scaler.update()
                if step % log_every == 0:
                    print(scaler.get_scale())
        """,
    )
    doc = """
## What it does
Flags library calls that wait for the device inside, though nothing at the call reads a tensor:
`torch.distributed.barrier()`, the object collectives (`all_gather_object`,
`broadcast_object_list`, ...), and a `GradScaler`'s `get_scale()` and `state_dict()` (the
receiver built as `GradScaler()`, or any receiver not known to be something else for
`get_scale`, a method only loss scalers have); `torch.optim.LBFGS.step(closure)`; and the comparisons that answer with a Python
bool (`torch.equal`, `torch.allclose`, `torch.is_nonzero`, `torch.testing.assert_close` and the
`.equal()` / `.allclose()` / `.is_nonzero()` methods) when a device tensor is compared. The calls are listed in
`knowledge/syncing_api.py`.

## Why it syncs
`barrier()` blocks the host until every rank reaches it; under NCCL it also waits for the work
queued on the device. The object collectives pickle their objects through host memory, reading
back any tensor they hold. `torch.equal(a, b)` compares on the device, then copies the one-bool
answer to the host. `GradScaler.get_scale()` returns a Python float: it calls `.item()` on
the scale tensor; `state_dict()` does the same for the scale and the growth tracker.
`LBFGS.step` runs the closure up to `max_iter` times and converts the loss and the gradient
norms to Python numbers to decide when to stop.

## Example
```python
for x, y in loader:
    scaler.scale(loss_fn(model(x), y)).backward()
    scaler.step(optimizer)
    scaler.update()
    scale_meter.update(scaler.get_scale())
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    ...
    scaler.update()
    if step % log_every == 0:
        scale_meter.update(scaler.get_scale())   # or keep scaler._scale on device
```
Drop a per-step `barrier()`: collectives already order the ranks.

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        qual = ctx.qualname(node.func) or ""
        if qual in SYNCING_FUNCTIONS:
            ctx.report(self, node, call=qual.rsplit(".", 1)[-1] + "()", why=SYNCING_FUNCTIONS[qual])
            return
        if qual in READING_FUNCTIONS:
            if any(ctx.kind(arg.value) in tensors.DEVICE_TENSORS for arg in node.args):
                ctx.report(self, node, call=qual.rsplit(".", 1)[-1] + "()", why=READING_FUNCTIONS[qual])
            return
        method = method_call(node)
        if not method:
            return
        if method in READING_METHODS:
            if ctx.kind(receiver(node)) in tensors.DEVICE_TENSORS:
                ctx.report(self, node, call=f".{method}()", why=READING_METHODS[method])
            return
        cls = ctx.instance_class(receiver(node))
        if cls is not None and not cls.local:
            why = SYNCING_METHODS.get(cls.name, {}).get(method)
            if why is not None:
                ctx.report(self, node, call=f".{method}()", why=why)
            return
        if cls is None and method in SCALER_ONLY_METHODS and not node.args \
                and ctx.kind(receiver(node)) not in tensors.NOT_DEVICE:
            ctx.report(self, node, call=f".{method}()", why=SCALER_ONLY_METHODS[method])
