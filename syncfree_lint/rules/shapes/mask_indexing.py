"""SFL202: boolean-mask indexing in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.knowledge import torch_api as api
from syncfree_lint.rules.base import Rule, method_call
from syncfree_lint.rules.shapes._common import device_receiver, torch_call


class MaskIndexing(Rule):
    code = "SFL202"
    name = "boolean-mask-indexing"
    messages = {
        "default": "boolean-mask indexing has a data-dependent shape: the host waits for the GPU; use "
                   "`torch.where(mask, x, 0)` or `masked_fill`",
        "write": "boolean-mask write of a tensor value has a data-dependent shape: the host waits for the GPU; use "
                 "`torch.where(mask, value, t)`",
        "masked_select": "`masked_select` has a data-dependent output shape: the host waits for the GPU; use "
                         "`torch.where(mask, x, 0)`",
    }
    evidence = ("masked_select",)
    node_types = (cst.Subscript, cst.Assign, cst.AugAssign, cst.Call)
    invalid = (
        """
        def train(model, loader, criterion):
            for x, y in loader:
                logits = model(x)
                valid = y != -100
                criterion(logits[valid], y[valid]).backward()
        """,
        """
        def train(model, loader):
            for x, y in loader:
                out = model(x)
                out[y == 0] = out.mean()
                out.sum().backward()
        """,
    )
    valid = (
        """
        import torch.nn.functional as F

        def train(model, loader):
            for x, y in loader:
                F.cross_entropy(model(x), y, ignore_index=-100).backward()
        """,
        """
        def train(model, loader):
            for x, y in loader:
                out = model(x)
                out[y == 0] = 0.0
                out.sum().backward()
        """,
        """
        def train(model, loader, num_classes):
            for x, y in loader:
                y[y < 0] = num_classes
                model(x, y).sum().backward()
        """,
    )
    doc = """
## What it does
Flags `t[mask]` (and `t[mask, 1:]`) with a boolean tensor mask inside a step (reads, in-place
updates, and writes of a tensor value), and `torch.masked_select` / `t.masked_select`. Not flagged:
`t[mask] = <python scalar>` (also `t[:, mask] = ...`), which PyTorch runs as a `masked_fill` with no sync.

## Why it syncs
The result has as many elements as the mask has `True` values. The host must read that count
from the device to allocate the output.

## Example
```python
for x, y in loader:
    valid = y != -100
    loss = criterion(logits[valid], y[valid])
```

## Use instead
```python
for x, y in loader:
    loss = F.cross_entropy(logits, y, ignore_index=-100)
    # or: per-element loss, then (loss * valid).sum() / valid.sum().clamp(min=1)
```

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:
        if isinstance(node, cst.Subscript):
            if ctx.is_store(node):
                return
            if _is_mask_index(node, ctx) and ctx.maybe_tensor(node.value):
                ctx.report(self, node)
        elif isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                if isinstance(target, cst.Subscript) and _is_mask_index(target, ctx) and ctx.maybe_tensor(target.value):
                    # `x[mask] = 0.0`, `x[:, mask] = 0.0`: `index_put_` takes a mask with a Python scalar to
                    # `masked_fill_` on the device (beside slices and ints, not beside another tensor index)
                    if isinstance(node, cst.AugAssign) or not _python_scalar(node.value, ctx):
                        ctx.report(self, target, "write")
        elif isinstance(node, cst.Call):
            if torch_call(node, ctx, "masked_select") or (method_call(node) == "masked_select" and device_receiver(node, ctx)):
                ctx.report(self, node, "masked_select")


def _is_mask_index(node: cst.Subscript, ctx: SemanticModel) -> bool:
    """A boolean mask anywhere in the index: ``t[mask]``, ``t[mask, 1:]``."""
    return any(isinstance(element.slice, cst.Index) and ctx.kind(element.slice.value) == tensors.MASK
               for element in node.slice)


def _python_scalar(expr: cst.BaseExpression, ctx: SemanticModel) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return True
    if isinstance(expr, cst.Attribute) and (ctx.qualname(expr) or "") in ("math.inf", "math.nan", "float"):
        return True
    if isinstance(expr, cst.Attribute) and api.reads_setting(dotted(expr) or ""):
        return True  # `pred[torch.isinf(pred)] = self.cfg.max_depth`: a setting, a Python number
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float":
        return True
    if isinstance(expr, cst.BinaryOperation):  # `1.0 / num_codes`
        return _python_scalar(expr.left, ctx) and _python_scalar(expr.right, ctx)
    kind = ctx.kind(expr)
    if kind is None and isinstance(expr, (cst.Name, cst.Attribute)):  # `Matcher.BELOW_LOW_THRESHOLD`: a constant
        last = expr.value if isinstance(expr, cst.Name) else expr.attr.value
        return last.isupper() or last.startswith(api.COUNT_NAME_PREFIXES)  # or a count: `num_classes`
    return kind == tensors.NUMBER
