"""SFL110: ``torch.save`` of device tensors or a model's state in a step."""
from __future__ import annotations

from typing import Dict, Optional

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.scope import mentions_loader
from syncfree_lint.analysis.call_args import keyword_value, positional
from syncfree_lint.rules.base import Rule, method_call, receiver

# receivers whose state_dict() holds no device tensors: host values, and data loaders (a stateful
# loader's position) or what a loop over several loaders yields
_NO_DEVICE_STATE = (tensors.HOST_TENSOR, tensors.NUMPY, tensors.NUMBER, tensors.LOADER, tensors.HOST_LOADER,
                    tensors.BATCH, tensors.HOST_BATCH)


class TorchSaveInStep(Rule):
    code = "SFL110"
    name = "torch-save-in-step"
    messages = {
        "default": "`torch.save` of device tensors in a step copies them to the host and waits for the GPU every step; "
                   "save at intervals (`if step % save_every == 0:`) or after the loop",
        "state": "`torch.save` of a `state_dict()` in a step copies every tensor of it to the host and waits for the GPU "
                 "every step; save at intervals (`if step % save_every == 0:`) or after the loop",
    }
    evidence = ("torch",)  # torch.save is reached only through an import of torch
    requires = ("save",)
    node_types = (cst.Call, cst.Assign)
    invalid = (
        """
        import torch

        def train(model, loader, optimizer):
            for x, y in loader:
                model(x.cuda()).sum().backward()
                optimizer.step()
                torch.save(model.state_dict(), "last.pt")
        """,
        """
        import torch

        def train(model, loader, optimizer):
            for step, (x, y) in enumerate(loader):
                model(x.cuda()).sum().backward()
                optimizer.step()
                checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}
                torch.save(checkpoint, "last.pt")
        """,
    )
    valid = (
        """
        import torch

        def train(model, loader, optimizer, save_every):
            for step, (x, y) in enumerate(loader):
                model(x.cuda()).sum().backward()
                optimizer.step()
                if step % save_every == 0:
                    torch.save(model.state_dict(), "last.pt")
        """,
        """
        import torch

        def train(model, loader, optimizer):
            for x, y in loader:
                model(x.cuda()).sum().backward()
                optimizer.step()
            torch.save(model.state_dict(), "final.pt")
        """,
        """
        import torch

        def train(model, loader, optimizer):
            for step, (x, y) in enumerate(loader):
                model(x.cuda()).sum().backward()
                optimizer.step()
                position = loader.state_dict()
                torch.save(position, "loader.pt")
        """,
        """
        import torch

        def train(model, loader, optimizer, history):
            for step, (x, y) in enumerate(loader):
                model(x.cuda()).sum().backward()
                optimizer.step()
                torch.save({"step": step, "history": history}, "progress.pt")
        """,
    )
    doc = """
## What it does
Flags `torch.save(obj, f)` inside a step when `obj` holds device tensors: a tensor, a
`model.state_dict()` / `optimizer.state_dict()`, or a dict, list or tuple of them (also a name
bound to such a value in the same function). A data loader's `state_dict()` is host data. A save under a guard (`if step % save_every ==
0:`) or after the loop is not flagged.

## Why it syncs
`torch.save` serialises every tensor from host memory: each device tensor is copied to the host
first, and that copy waits for every kernel queued before it. Saving a checkpoint every step
stalls the GPU for the whole model's size, every step.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    torch.save(model.state_dict(), "last.pt")
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    if step % save_every == 0:
        torch.save(model.state_dict(), "last.pt")
```

## Fix safety
No automatic fix: how often to save is the user's choice.
"""

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:
        holders = ctx.state(self).setdefault(id(ctx.current_scope()), {})  # name -> message key of what it holds, or None
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    name = target.target.value
                    if _literal(node.value) or _is_state_dict_call(node.value):
                        holders[name] = _state_kind(node.value, ctx, holders)  # None: known to hold none
                    else:
                        holders.pop(name, None)
            return
        assert isinstance(node, cst.Call)
        if not isinstance(node.func, (cst.Name, cst.Attribute)) or ctx.qualname(node.func) != "torch.save":
            return
        obj = keyword_value(node, "obj")
        obj = obj if obj is not None else positional(node, 0)
        kind = _state_kind(obj, ctx, holders) if obj is not None else None
        if kind is not None:
            ctx.report(self, node, kind)


def _literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Dict, cst.List, cst.Tuple))


def _is_state_dict_call(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and method_call(expr) == "state_dict"


def _state_kind(expr: cst.BaseExpression, ctx: SemanticModel, holders: Dict[str, Optional[str]]) -> Optional[str]:
    """"state" for a state_dict (or a literal holding one), "default" for device tensors, else None."""
    if isinstance(expr, cst.Call) and _is_state_dict_call(expr):
        owner = receiver(expr)
        return "state" if ctx.kind(owner) not in _NO_DEVICE_STATE and not mentions_loader(owner) else None
    if isinstance(expr, cst.Name) and expr.value in holders:
        return holders[expr.value]
    if isinstance(expr, cst.Dict):
        parts = [element.value for element in expr.elements if isinstance(element, cst.DictElement)]
    elif isinstance(expr, (cst.List, cst.Tuple)):
        parts = [element.value for element in expr.elements]
    else:
        return "default" if ctx.is_tensor(expr) or ctx.kind(expr) in tensors.CONTAINERS else None
    found = [kind for kind in (_state_kind(part, ctx, holders) for part in parts) if kind is not None]
    return "state" if "state" in found else (found[0] if found else None)
