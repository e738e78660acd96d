"""SFL109: a tensor handed to a logging sink in a step."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.knowledge import sinks
from syncfree_lint.rules.base import Rule


class TensorToLoggingSink(Rule[cst.Call]):
    code = "SFL109"
    name = "tensor-to-logging-sink"
    messages = {
        "default": "a tensor handed to a logging sink in a step is read on the host, a wait for the GPU; log at intervals, "
                   "or log values read at intervals",
    }
    node_types = (cst.Call,)
    invalid = (
        """
        def train(model, loader, optimizer, criterion, writer):
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                writer.add_scalar("train/loss", loss, step)
        """,
        """
        import wandb

        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                wandb.log({"loss": loss})
        """,
    )
    valid = (
        """
        def train(model, loader, optimizer, criterion, writer):
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    writer.add_scalar("train/loss", loss, step)
        """,
        """
        import wandb

        def train(model, loader, optimizer, criterion, scheduler):
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()
                wandb.log({"lr": scheduler.get_last_lr()[0]})
        """,
    )
    doc = """
## What it does
Flags a device tensor handed to a logger that reads it on the host, inside a step:
TensorBoard's `writer.add_scalar(tag, t, step)` (and `add_scalars`, `add_histogram`),
`wandb.log({"loss": t})`, `mlflow.log_metric("loss", t)`, `accelerator.log({...})`,
`fabric.log(name, t)` / `fabric.log_dict({...})` and tracker `log_metrics({...})`; also a dict
that holds device tensors, built by a literal or a comprehension (`logs = {"loss": loss}`,
`{k: v for k, v in losses.items()}`), handed over here or passed to a helper that logs it.

## Why it syncs
These sinks turn the tensor into a Python number (`.item()`) or a numpy array (`.cpu().numpy()`)
on the host before they store it. That copy waits for every kernel queued before it, once per
step, hidden inside a logging call.

## Example
```python
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    writer.add_scalar("train/loss", loss, step)
```

## Use instead
```python
running = torch.zeros((), device=device)
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running += loss.detach()
    if step % 100 == 99:
        writer.add_scalar("train/loss", running.item() / 100, step)
        running.zero_()
```

## Fix safety
No automatic fix: which interval to log at is the user's choice.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        if not self._is_sink(node, ctx):
            return
        for value in _values(node):
            if ctx.is_tensor(value) or ctx.kind(value) in tensors.CONTAINERS:
                ctx.report(self, value)

    @staticmethod
    def _is_sink(node: cst.Call, ctx: SemanticModel) -> bool:
        func = node.func
        if isinstance(func, (cst.Name, cst.Attribute)) and ctx.qualname(func) in sinks.SINK_FUNCTIONS:
            return True
        if not isinstance(func, cst.Attribute):
            return False
        method = func.attr.value
        if isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            return False  # the class's own method (``self.log_metrics(...)``), not a tracker
        if method in sinks.WRITER_METHODS or method in sinks.TRACKER_METHODS:
            return True
        return method in sinks.ACCELERATOR_SINK_METHODS and ctx.kind(func.value) == tensors.ACCELERATOR


def _values(node: cst.Call) -> Iterator[cst.BaseExpression]:
    """The arguments a sink reads: every argument (a name or a comprehension holding device tensors
    is reported whole: its kind is TENSORS), and the values of dict literals."""
    for arg in node.args:
        value = arg.value
        if isinstance(value, cst.Dict):
            for element in value.elements:
                if isinstance(element, cst.DictElement):
                    yield element.value
        else:
            yield value
