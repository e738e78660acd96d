"""SFL102: ``.cpu()`` / ``.to("cpu")`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.tensors import is_true, keyword_value, positional
from syncfree_lint.rules.base import Rule, method_call
from syncfree_lint.rules.host_reads._common import host_read_receiver


class CpuCopy(Rule[cst.Call]):
    code = "SFL102"
    name = "cpu-copy-in-step"
    messages = {
        "default": "`.cpu()` in a step copies to the host and waits for the GPU; move it out of the step or pass "
                   "`non_blocking=True` to `.to('cpu')`",
        "to": "`.to('cpu')` in a step copies to the host and waits for the GPU; move it out of the step or pass "
              "`non_blocking=True`",
    }
    evidence = (".cpu(",)
    node_types = (cst.Call,)
    invalid = (
        """
        def evaluate(model, loader):
            preds = []
            for x, y in loader:
                preds.append(model(x.cuda()).argmax(-1).cpu())
            return preds
        """,
        """
        def evaluate(model, loader):
            for x, y in loader:
                out = model(x.to("cuda"))
                save(out.to("cpu"))
        """,
    )
    valid = (
        """
        def evaluate(model, loader):
            for x, y in loader:
                out = model(x.to("cuda"))
                save(out.to("cpu", non_blocking=True))
        """,
        """
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x.cuda()).sum().backward()
                optimizer.step()
            model.cpu()
        """,
    )
    doc = """
## What it does
Flags `t.cpu()`, `t.to("cpu")`, `t.to(torch.device("cpu"))` and `t.to(device="cpu")` on a
tensor inside a step. Not flagged: `non_blocking=True` (no wait by itself), modules
(`model.cpu()`), values already on the host.

## Why it syncs
A device-to-host copy into pageable memory is synchronous: the host waits for the copy, and
the copy waits for every kernel queued before it.

## Example
```python
for batch in loader:
    out = model(batch)
    preds.append(out.argmax(-1).cpu())
```

## Use instead
```python
for batch in loader:
    out = model(batch)
    preds.append(out.argmax(-1))      # stays on the device
all_preds = torch.cat(preds).cpu()    # one copy after the loop
```
or `out.to("cpu", non_blocking=True)` into pinned memory, read after an event or at the end.

## Fix safety
No automatic fix: moving the copy changes where the data lives.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        name = method_call(node)
        if name == "cpu":
            if not node.args and host_read_receiver(node, ctx):
                ctx.report(self, node)
        elif name == "to":
            target = keyword_value(node, "device")
            value = target if target is not None else positional(node, 0)
            if value is None or not ctx.is_cpu_device(value):
                return
            blocking = keyword_value(node, "non_blocking")
            if blocking is not None and is_true(blocking):
                return
            if host_read_receiver(node, ctx):
                ctx.report(self, node, "to")
