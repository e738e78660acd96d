"""SFL307: a torchmetrics object left on the CPU in a NCCL/DDP script."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import keyword_value
from syncfree_lint.fixes.metric_switch import switch_plan
from syncfree_lint.rules.base import Rule
from syncfree_lint.rules.torchmetrics._common import SWITCH_DOC, SWITCH_TITLE, first_arg


class CpuMetricUnderNccl(Rule[cst.Call]):
    code = "SFL307"
    name = "cpu-metric-under-nccl"
    messages = {
        "default": "metric stays on the CPU in a script that uses NCCL or DDP: its sync fails with \"No backend type "
                   "associated with device type cpu\"",
    }
    evidence = ("init_process_group", "DistributedDataParallel")  # what makes a script NCCL's (``check``)
    requires = ("init_process_group", "DistributedDataParallel")
    fix_title = SWITCH_TITLE
    node_types = (cst.Call,)
    step_only = False
    invalid = (
        """
        import torch.distributed as dist
        from torchmetrics.classification import MulticlassAccuracy

        dist.init_process_group("nccl")
        acc = MulticlassAccuracy(num_classes=10)
        """,
    )
    valid = (
        """
        import torch.distributed as dist
        from torchmetrics.classification import MulticlassAccuracy

        dist.init_process_group("nccl")
        acc = MulticlassAccuracy(num_classes=10).to("cuda")
        """,
        """
        import torch.distributed as dist
        from torchmetrics.classification import MulticlassAccuracy

        dist.init_process_group("gloo")
        acc = MulticlassAccuracy(num_classes=10)
        """,
    )
    doc = """
## What it does
Flags a torchmetrics object that is never moved with `.to(device)` (and is not a submodule of a
model that is moved) in a file that initialises a NCCL process group or wraps the model in
`DistributedDataParallel`.

## Why it fails
Its states stay on the CPU, and NCCL cannot reduce CPU tensors: the first sync raises
"No backend type associated with device type cpu".

## Example
```python
dist.init_process_group("nccl")
acc = MulticlassAccuracy(num_classes=10)    # never moved
```

## Use instead
```python
acc = MulticlassAccuracy(num_classes=10).to(device)
```
or a `syncfree` metric, which stages CPU states through the device under NCCL.
""" + SWITCH_DOC

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        if not isinstance(node.func, (cst.Name, cst.Attribute)):
            return
        qual = ctx.qualname(node.func) or ""
        state = ctx.state(self)
        if qual.endswith("init_process_group"):
            backend = keyword_value(node, "backend") or first_arg(node)
            if backend is None or (isinstance(backend, cst.SimpleString) and "nccl" in backend.value):
                state["nccl"] = True
        elif qual.endswith("DistributedDataParallel"):
            state["nccl"] = True

    def finish(self, ctx: SemanticModel) -> None:
        if not ctx.state(self).get("nccl"):
            return
        for site in ctx.metric_constructions():
            if site.call is not None and not site.moved and site.library == "torchmetrics" \
                    and site.class_name != "MetricCollection":
                ctx.report(self, site.call, fix=switch_plan(ctx, site), statement=site.statement)
