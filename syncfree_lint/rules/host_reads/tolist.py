"""SFL104: ``.tolist()`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.rules.base import Rule, method_call
from syncfree_lint.rules.host_reads._common import host_read_receiver


class TolistRead(Rule[cst.Call]):
    code = "SFL104"
    name = "tolist-in-step"
    messages = {
        "default": "`.tolist()` in a step copies to the host and waits for the GPU; accumulate on device and convert once",
    }
    evidence = (".tolist(",)
    node_types = (cst.Call,)
    invalid = (
        """
        def predict(model, loader):
            for batch in loader:
                predictions.extend(model(batch.cuda()).argmax(-1).tolist())
        """,
    )
    valid = (
        """
        def predict(model, loader):
            for batch in loader:
                predictions.append(model(batch.cuda()).argmax(-1))
            return torch.cat(predictions).tolist()
        """,
        """
        def predict(model, loader):
            for batch in loader:
                predictions.extend(model(batch.cuda()).argmax(-1).cpu().tolist())  # SFL102 flags the copy
        """,
    )
    doc = """
## What it does
Flags `t.tolist()` on a tensor inside a step (not after `.cpu()` on the same chain, where
the copy is already flagged).

## Why it syncs
Building Python objects needs the values on the host: a device-to-host copy that waits for
every queued kernel.

## Example
```python
for batch in loader:
    predictions.extend(model(batch).argmax(-1).tolist())
```

## Use instead
```python
for batch in loader:
    predictions.append(model(batch).argmax(-1))
predictions = torch.cat(predictions).tolist()
```

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        if method_call(node) == "tolist" and not node.args and host_read_receiver(node, ctx):
            ctx.report(self, node)
