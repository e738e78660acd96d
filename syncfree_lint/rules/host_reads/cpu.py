"""SFL102: ``.cpu()`` / ``.to("cpu")`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import is_true, keyword_value, positional
from syncfree_lint.knowledge.containers import KEEPING_METHODS
from syncfree_lint.rules.base import Rule, method_call
from syncfree_lint.rules.host_reads._common import host_read_receiver


class CpuCopy(Rule[cst.Call]):
    code = "SFL102"
    name = "cpu-copy-in-step"
    messages = {
        "default": "`{call}` in a step copies to the host and waits for the GPU; move the copy and what reads it "
                   "out of the step (`non_blocking=True` would race here: the host reads the value before the copy "
                   "is known to be done)",
        "kept": "`{call}` in a step copies to the host and waits for the GPU; keep the values on the device and copy "
                "once after the loop, or use `.to('cpu', non_blocking=True)` and read them only after a later "
                "sync (`torch.cuda.synchronize()` or an event)",
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
The message suggests `out.to("cpu", non_blocking=True)` only where the copy is kept (appended,
stored in an item, returned) and not read in the step: a non-blocking copy returns before the
data has arrived, so a value read at once (`.numpy()`, printed, compared, bound to a name and
used) would be read unfilled. Read kept copies after `torch.cuda.synchronize()` or an event.

## Fix safety
No automatic fix: moving the copy changes where the data lives.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        name = method_call(node)
        if name == "cpu":
            if not node.args and host_read_receiver(node, ctx):
                ctx.report(self, node, _use(node, ctx), call=".cpu()")
        elif name == "to":
            target = keyword_value(node, "device")
            value = target if target is not None else positional(node, 0)
            if value is None or not ctx.is_cpu_device(value):
                return
            blocking = keyword_value(node, "non_blocking")
            if blocking is not None and is_true(blocking):
                return
            if host_read_receiver(node, ctx):
                ctx.report(self, node, _use(node, ctx), call=".to('cpu')")


def _use(node: cst.Call, ctx: SemanticModel) -> str:
    """"kept" when the copy is appended, stored in an item or returned by its statement (not read
    in the step, so a non-blocking copy may be read after a later sync), else "default"."""
    statement = ctx.current_statement()
    if isinstance(statement, (cst.Return, cst.Expr)) and isinstance(statement.value, cst.Yield):
        return "kept" if statement.value.value is node else "default"
    if isinstance(statement, cst.Return):
        return "kept" if statement.value is node else "default"
    if isinstance(statement, cst.Assign):
        stored = all(isinstance(t.target, cst.Subscript) for t in statement.targets)
        return "kept" if stored and statement.value is node else "default"
    if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        call = statement.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in KEEPING_METHODS \
                and any(arg.value is node for arg in call.args):
            return "kept"
    return "default"
