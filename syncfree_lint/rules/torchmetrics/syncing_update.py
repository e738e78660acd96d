"""SFL309: a torchmetrics metric whose ``update`` itself reads the device, updated in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.knowledge.metric_api import SYNCING_UPDATES
from syncfree_lint.rules.base import Rule


class SyncingUpdate(Rule[cst.Call]):
    code = "SFL309"
    name = "metric-update-syncs"
    messages = {
        "default": "torchmetrics `{metric}` {call} {why}: the host waits for the GPU every step; use "
                   "`syncfree.{metric}`, which updates on the device",
    }
    evidence = ("metric",)
    node_types = (cst.Call,)
    invalid = (
        """
        from torchmetrics.text import Perplexity

        def evaluate(model, loader, device):
            ppl = Perplexity().to(device)
            for x, y in loader:
                ppl.update(model(x.to(device)), y.to(device))
            return ppl.compute()
        """,
    )
    valid = (
        """
        from syncfree import Perplexity

        def evaluate(model, loader, device):
            ppl = Perplexity().to(device)
            for x, y in loader:
                ppl.update(model(x.to(device)), y.to(device))
            return ppl.compute()
        """,
    )
    doc = """
## What it does
Flags `update(...)` or a call (`metric(...)`) of a torchmetrics metric whose update reads the device itself
(`Perplexity`: a boolean-mask index of the token probabilities), inside a step.

## Why it syncs
A boolean mask index has a data-dependent size: the host waits for the GPU to count the selected elements before
it can allocate the result. The metric does it on every update, whatever its arguments.

## Example
```python
from torchmetrics.text import Perplexity
ppl = Perplexity().to(device)
for x, y in loader:
    ppl.update(model(x), y)
```

## Use instead
```python
import syncfree
from syncfree import Perplexity
ppl = Perplexity().to(device)
for x, y in loader:
    ppl.update(model(x), y)            # masked terms summed on the device
print(syncfree.to_host(ppl))           # read once, after the loop
```

## Fix safety
No automatic fix yet: the `syncfree` class computes the same value (`tests/runtime`), but the switch fix covers the
classes of `SFL301`/`SFL305` only.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = ctx.metric_call(node)
        if found is None or found[1] == "compute":
            return
        site, call = found
        for target in site.members or (site,):
            why = SYNCING_UPDATES.get(target.class_name)
            if why is not None:
                ctx.report(self, node, metric=target.class_name, call=call, why=why)
                return
