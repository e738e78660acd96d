"""SFL2xx: operations whose output shape depends on the data."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.tensors import keyword_value, positional
from syncfree_lint.rules.base import Rule, method_call, receiver


def _torch_call(node: cst.Call, ctx, *names: str) -> str:
    """The matched ``torch.<name>`` (also ``torch.Tensor.<name>``), or ''."""
    if isinstance(node.func, (cst.Attribute, cst.Name)):
        qual = ctx.qualname(node.func) or ""
        for name in names:
            if qual in (f"torch.{name}", f"torch.Tensor.{name}", f"torch.nn.functional.{name}"):
                return name
    return ""


def _device_receiver(node: cst.Call, ctx) -> bool:
    return ctx.maybe_tensor(receiver(node)) and not (ctx.qualname(receiver(node)) or "").startswith(("torch", "numpy"))


def _device_args(node: cst.Call, ctx) -> bool:
    """Not every tensor argument is known to be on the host."""
    first = positional(node, 0)
    if first is None:
        first = node.args[0].value if node.args else None
    return first is None or ctx.kind(first) not in (tensors.HOST_TENSOR, tensors.NUMPY, tensors.NUMBER, tensors.OTHER)


class Nonzero(Rule[cst.Call]):
    code = "SFL201"
    name = "nonzero-in-step"
    message = "`nonzero` has a data-dependent output shape: the host waits for the GPU to size the result; use a mask with `torch.where`"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `torch.nonzero(t)`, `t.nonzero()`, `torch.argwhere(t)` and single-argument
`torch.where(cond)` inside a step.

## Why it syncs
The number of results is only known once the kernel has run: the host reads the count back
(a sync) to allocate the output before it can queue anything that uses it.

## Example
```python
for x, y in loader:
    idx = torch.nonzero(y == ignore_index)
    logits[idx] = 0.0
```

## Use instead
```python
for x, y in loader:
    logits = torch.where((y == ignore_index).unsqueeze(-1), 0.0, logits)
```
If the indices are needed, `torch.nonzero_static(t, size=k)` gives a fixed-size result.

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx) -> None:
        found = _torch_call(node, ctx, "nonzero", "argwhere")
        if found:
            if _device_args(node, ctx):
                ctx.report(self, node, f"`torch.{found}` has a data-dependent output shape: the host waits for the GPU to size the result; use a mask with `torch.where`")
            return
        if _torch_call(node, ctx, "where") and len(node.args) == 1 and node.args[0].keyword is None:
            if _device_args(node, ctx):
                ctx.report(self, node, "single-argument `torch.where(cond)` is `nonzero`: the host waits for the GPU to size the result; use the three-argument form")
            return
        name = method_call(node)
        if name in ("nonzero", "argwhere") and _device_receiver(node, ctx):
            if ctx.is_tensor(receiver(node)) or name == "nonzero" and keyword_value(node, "as_tuple") is not None or ctx.kind(receiver(node)) is None:
                ctx.report(self, node, f"`.{name}()` has a data-dependent output shape: the host waits for the GPU to size the result; use a mask with `torch.where`")


def _is_mask_index(node: cst.Subscript, ctx) -> bool:
    if len(node.slice) != 1:
        return False
    element = node.slice[0].slice
    if not isinstance(element, cst.Index):
        return False
    return ctx.kind(element.value) == tensors.MASK


def _python_scalar(expr: cst.BaseExpression, ctx) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return True
    if isinstance(expr, cst.Attribute) and (ctx.qualname(expr) or "") in ("math.inf", "math.nan", "float"):
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float":
        return True
    return ctx.kind(expr) == tensors.NUMBER


class MaskIndexing(Rule):
    code = "SFL202"
    name = "boolean-mask-indexing"
    message = "boolean-mask indexing has a data-dependent shape: the host waits for the GPU; use `torch.where(mask, x, 0)` or `masked_fill`"
    node_types = (cst.Subscript, cst.Assign, cst.AugAssign, cst.Call)
    doc = """
## What it does
Flags `t[mask]` with a boolean tensor mask inside a step (reads, in-place updates, and writes
of a tensor value), and `torch.masked_select` / `t.masked_select`. Not flagged:
`t[mask] = <python scalar>`, which is a `masked_fill` and needs no sync.

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

    def check(self, node: cst.CSTNode, ctx) -> None:
        if isinstance(node, cst.Subscript):
            if ctx.is_store(node):
                return
            if _is_mask_index(node, ctx) and ctx.maybe_tensor(node.value):
                ctx.report(self, node)
        elif isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                if isinstance(target, cst.Subscript) and _is_mask_index(target, ctx) and ctx.maybe_tensor(target.value):
                    if isinstance(node, cst.AugAssign) or not _python_scalar(node.value, ctx):
                        ctx.report(self, target, "boolean-mask write of a tensor value has a data-dependent shape: the host waits for the GPU; use `torch.where(mask, value, t)`")
        elif isinstance(node, cst.Call):
            if _torch_call(node, ctx, "masked_select") or (method_call(node) == "masked_select" and _device_receiver(node, ctx)):
                ctx.report(self, node, "`masked_select` has a data-dependent output shape: the host waits for the GPU; use `torch.where(mask, x, 0)`")


class DynamicShapeOps(Rule[cst.Call]):
    code = "SFL203"
    name = "data-dependent-shape-op"
    message = "this op has a data-dependent output shape: the host waits for the GPU to size the result"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags, inside a step: `torch.unique` / `t.unique()`, `unique_consecutive`, `torch.bincount` /
`t.bincount()`, `repeat_interleave(t, repeats_tensor)` without `output_size=`, and
`F.one_hot(t)` without `num_classes`.

## Why it syncs
The output size depends on values computed on the device (how many distinct values, the
largest label, the sum of repeats). The host reads them back before it can allocate.

## Example
```python
for x, y in loader:
    target = F.one_hot(y)                          # size = y.max() + 1
    counts = torch.bincount(y)                     # size = y.max() + 1
```

## Use instead
```python
for x, y in loader:
    target = F.one_hot(y, num_classes=num_classes)
    counts = torch.zeros(num_classes, device=y.device).scatter_add_(0, y, torch.ones_like(y, dtype=torch.float))
```
`repeat_interleave(t, repeats, output_size=n)` when the total is known.

## Fix safety
No automatic fix: the static size is something only the user knows.
"""

    def check(self, node: cst.Call, ctx) -> None:
        found = _torch_call(node, ctx, "unique", "unique_consecutive", "bincount")
        method = method_call(node)
        if not found and method in ("unique", "unique_consecutive", "bincount") and _device_receiver(node, ctx):
            found = method
        if found and (_device_args(node, ctx) if not method else True):
            hint = {"bincount": "; use `scatter_add_` into a fixed-size tensor"}.get(found, "; keep a fixed-size representation (a histogram over known values)")
            ctx.report(self, node, f"`{found}` has a data-dependent output shape: the host waits for the GPU to size the result{hint}")
            return
        if _torch_call(node, ctx, "repeat_interleave") or method == "repeat_interleave":
            if keyword_value(node, "output_size") is not None:
                return
            repeats = keyword_value(node, "repeats")
            value = repeats if repeats is not None else positional(node, 0 if method and not _torch_call(node, ctx, "repeat_interleave") else 1)
            if value is not None and ctx.is_tensor(value):
                ctx.report(self, node, "`repeat_interleave` with tensor repeats and no `output_size=` waits for the GPU to sum the repeats; pass `output_size=`")
            return
        if _torch_call(node, ctx, "one_hot"):
            classes = keyword_value(node, "num_classes")
            value = classes if classes is not None else positional(node, 1)
            missing = value is None or (isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer) and value.expression.value == "1")
            if missing:
                ctx.report(self, node, "`one_hot` without `num_classes` waits for the GPU to find the largest label; pass `num_classes=`")


RULES = (Nonzero, MaskIndexing, DynamicShapeOps)
