"""SFL308: Lightning's ``self.log(..., sync_dist=True)`` every training step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import keyword_value
from syncfree_lint.rules.base import Rule


class LightningSyncDistOnStep(Rule[cst.Call]):
    code = "SFL308"
    name = "sync-dist-on-step"
    messages = {
        "default": "`self.log(..., sync_dist=True)` in `training_step` all-reduces and syncs every step (it logs on_step "
                   "by default); log with `on_step=False` or without `sync_dist`",
    }
    node_types = (cst.Call,)
    invalid = (
        """
        import lightning

        class Model(lightning.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.compute_loss(batch)
                self.log("train_loss", loss, sync_dist=True)
                return loss
        """,
    )
    valid = (
        """
        import lightning

        class Model(lightning.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.compute_loss(batch)
                self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
                return loss
        """,
        """
        import lightning

        class Model(lightning.LightningModule):
            def validation_step(self, batch, batch_idx):
                loss = self.compute_loss(batch)
                self.log("val_loss", loss, sync_dist=True)
        """,
    )
    doc = """
## What it does
Flags `self.log(..., sync_dist=True)` (and `self.log_dict`) in a LightningModule's
`training_step`, unless `on_step=False` is passed.

## Why it syncs
In `training_step`, Lightning logs on every step by default. With `sync_dist=True` each log
call runs an `all_reduce` and reads the value on the host, every step and on every rank.

## Example
```python
def training_step(self, batch, batch_idx):
    loss = self.compute_loss(batch)
    self.log("train_loss", loss, sync_dist=True)
    return loss
```

## Use instead
```python
    self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
```

## Fix safety
No automatic fix: step-level curves change into epoch-level ones.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("log", "log_dict")
                and isinstance(func.value, cst.Name) and func.value.value == "self"):
            return
        if ctx.current_function_name() != "training_step":
            return
        sync = keyword_value(node, "sync_dist")
        on_step = keyword_value(node, "on_step")
        if sync is None or not (isinstance(sync, cst.Name) and sync.value == "True"):
            return
        if isinstance(on_step, cst.Name) and on_step.value == "False":
            return
        ctx.report(self, node)
