"""SFL403: a tensor built on the host, copied to the device every step."""
from __future__ import annotations

from typing import Optional, Union

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.call_args import is_true, keyword_value
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.edits import FixPlan, code
from syncfree_lint.fixes import factory_device
from syncfree_lint.knowledge.torch_api import TORCH_FACTORIES
from syncfree_lint.rules.base import Rule, receiver
from syncfree_lint.rules.transfers._common import device_target


class HostBuiltToDevice(Rule[Union[cst.Call, cst.Subscript]]):
    code = "SFL403"
    name = "host-built-tensor-to-device-in-step"
    messages = {
        "default": "a tensor built on the host is copied to the device every step (`.{method}()`): the copy waits for "
                   "the host; build it on the device (`device=`) or once outside the step",
        "index": "a host tensor (`{index}`) indexes a device tensor every step: it is copied to the device first, and "
                 "the copy waits for the GPU; build the index on the device (`device=`)",
    }
    node_types = (cst.Call, cst.Subscript)
    invalid = (
        """
        import torch
        def train(model, loader, optimizer, device):
            for x, y in loader:
                positions = torch.arange(x.shape[1]).to(device)
                model(x.to(device), positions).mean().backward()
                optimizer.step()
        """,
        """
        import numpy as np
        import torch
        def train(model, loader, optimizer, table):
            for x, y in loader:
                weights = torch.from_numpy(np.asarray(table)).cuda()
                (model(x.cuda()) * weights).mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                x = x.cuda()
                perm = torch.randperm(x.shape[0])
                model(x[perm]).mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                x = x.cuda()
                valid = torch.ones(x.size(0), 1).type_as(x)
                (model(x) - valid).pow(2).mean().backward()
                optimizer.step()
        """,
        """
        import torch
        class Decoder(torch.nn.Module):
            def forward(self, x):
                causal = torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril().to(x.device)
                return x.masked_fill(~causal, 0.0)
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x.cuda()).mean().backward()
                optimizer.step()
        """,
    )
    valid = (
        """
        import torch
        def train(model, loader, optimizer, device):
            positions = torch.arange(512).to(device)
            for x, y in loader:
                model(x.to(device), positions[: x.shape[1]]).mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer, device):
            for x, y in loader:
                positions = torch.arange(x.shape[1], device=device)
                model(x.to(device), positions).mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                x = x.cuda()
                perm = torch.randperm(x.shape[0], device=x.device)
                model(x[perm]).mean().backward()
                optimizer.step()
        """,
        """
        import numpy as np
        import torch
        def train(model, loader, optimizer, device):
            for x, y in loader:
                weights = torch.from_numpy(np.ones(4)).pin_memory().to(device, non_blocking=True)
                (model(x.to(device)) * weights).mean().backward()
                optimizer.step()
        """,
        """
        import torch
        class Decoder(torch.nn.Module):
            def forward(self, x):
                keep = (x > 0).tril().to(x.device)
                return x.masked_fill(~keep, 0.0)
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x.cuda()).mean().backward()
                optimizer.step()
        """,
    )
    doc = """
## What it does
Flags `.to(<accelerator>)`, `.cuda()` and `.type_as(<device tensor>)` inside a step on a tensor
that the code built on the host, and a host tensor used as the index of a device tensor (`x[:, torch.randperm(n)]`, or a
name bound to one; the index is copied to the device the same way): a factory without `device=` (`torch.arange(n)`, `torch.ones(k)`, `torch.Tensor([...])`),
`torch.from_numpy(...)`, and arithmetic on them (`torch.exp(-k * torch.arange(n)).to(device)`).
Batches from a data loader, rows of data prepared once (`inputs[step].to(device)`) and batches
assembled from them (`torch.stack([data[i] for i in ix])`) are not flagged here (SFL402, opt-in,
covers their copies), nor a tensor held by an object (`self.table.to(device)`): it is kept across
steps, and once moved, `.to()` costs nothing; nor one stored on the object as it is moved
(`self.pe = pe.to(device)`): a cache, filled when it misses; nor a copy from pinned memory
without waiting (`t.pin_memory().to(device, non_blocking=True)`): the host does not wait for it.

## Why it syncs
The tensor is created in pageable host memory and copied to the device every step. A copy from
pageable memory is staged by the host: the CPU does the copy's work instead of queueing kernels,
and the device waits for data the host has not sent yet. It is the same value each step in most
cases, built again for nothing.

## Example
```python
for x, y in loader:
    freqs = torch.exp(-math.log(10000) * torch.arange(half) / half).to(device)
```

## Use instead
```python
freqs = torch.exp(-math.log(10000) * torch.arange(half) / half).to(device)   # once
for x, y in loader:
    ...
# or build it where it lives: torch.arange(half, device=x.device)
```

## Fix safety
Safe, for a torch factory moved as it is built: `torch.zeros(n, 3).to(x.device)` becomes
`torch.zeros(n, 3, device=x.device)` (`.cuda()`: `device="cuda"`), only where the device-built
tensor is the same bit for bit: `zeros`/`ones`/`eye` (a `dtype` of the move goes along),
`arange` with integer arguments and no cast, no factory keyword but `dtype=`, and a target
proven a device (`x.device`, a string, `torch.device(...)`): `fixes/factory_device.py`. Other
host-built tensors (arithmetic on factories, `from_numpy`, random factories) have no fix: their
values may differ on the device, or they need hoisting out of the step.
"""
    fix_title = "build it on the device: `device=` in the factory, no host copy"

    def check(self, node: Union[cst.Call, cst.Subscript], ctx: SemanticModel) -> None:
        if isinstance(node, cst.Subscript):
            self._index(node, ctx)
            return
        if device_target(node, ctx) is None:
            return
        moved = receiver(node)
        if _held_by_object(moved):
            return  # `self.table.to(dev)`: kept across steps, moved once in practice (`.to()` of a moved tensor is free)
        if isinstance(moved, cst.Subscript):
            return  # `inputs[step].to(dev)`: a batch taken from data prepared once (SFL402's domain)
        if _kept_by_object(node, ctx.current_statement()):
            return  # `self.pe = pe.to(dev)`: a cache filled when it misses, not each step
        if _pinned(moved) and is_true(keyword_value(node, "non_blocking")):
            return  # `x.pin_memory().to(dev, non_blocking=True)`: an async copy, the host does not wait
        kind = ctx.kind(moved)
        if kind == tensors.HOST_TENSOR or (kind in tensors.DEVICE_TENSORS and _bool_factory_on_host(moved, ctx)):
            fix = FixPlan(self.fix_title, "safe", factory_device.builder(
                node, ctx.current_scope(), ctx.qualname, ctx.state(self).setdefault("scopes", {})))
            ctx.report(self, node, fix=fix, method=node.func.attr.value)  # type: ignore[attr-defined]


    def _index(self, node: cst.Subscript, ctx: SemanticModel) -> None:
        """``x[idx]`` with ``x`` a device tensor and ``idx`` a tensor on the host."""
        if not ctx.is_tensor(node.value):
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and index.star is None and ctx.kind(index.value) == tensors.HOST_TENSOR:
                ctx.report(self, index.value, "index", index=code(index.value))
                return


_MOVES = frozenset({"to", "cuda", "type_as"})


def _bool_factory_on_host(expr: cst.BaseExpression, ctx: SemanticModel) -> bool:
    """``torch.ones(T, T, dtype=torch.bool).tril()`` or ``torch.triu(torch.ones(..., dtype=torch.bool))``:
    a boolean mask that a torch factory built on the host (its kind says ``MASK``, as for any bool
    tensor, and what is computed from it a tensor), not moved on the way."""
    while isinstance(expr, cst.Call):
        qual = ctx.qualname(expr.func) if isinstance(expr.func, (cst.Name, cst.Attribute)) else None
        if qual is not None and qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in TORCH_FACTORIES:
            device = keyword_value(expr, "device")
            return not ctx.default_device_is_accelerator() if device is None else ctx.is_cpu_device(device)
        if qual is not None and qual.startswith("torch.") and expr.args:
            expr = expr.args[0].value  # `torch.triu(mask, 1)`: what it is applied to
        elif isinstance(expr.func, cst.Attribute) and qual is None and expr.func.attr.value not in _MOVES:
            expr = expr.func.value  # `mask.tril()`: its receiver
        else:
            return False
    return False


def _pinned(expr: cst.BaseExpression) -> bool:
    """``t.pin_memory()``: the copy's source is page-locked host memory."""
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "pin_memory"


def _held_by_object(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
        if isinstance(expr, cst.Name) and expr.value == "self":
            return True
    return False


def _kept_by_object(call: cst.Call, statement: Optional[cst.CSTNode]) -> bool:
    """``self.<attr> = <call>``: the moved tensor is stored on the object, kept across steps."""
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else statement
    if not isinstance(assign, cst.Assign) or assign.value is not call:
        return False
    return all(isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
               and t.target.value.value == "self" for t in assign.targets)
