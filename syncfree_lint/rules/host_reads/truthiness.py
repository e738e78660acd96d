"""SFL106: a tensor used where Python needs a ``bool``, in a step."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.rules.base import Rule

_NAN_CHECKS = ("isnan", "isinf", "isfinite", "isneginf", "isposinf")
_WHERE = {cst.If: "`if`", cst.While: "`while`", cst.Assert: "`assert`", cst.IfExp: "a conditional expression",
          cst.CompIf: "a comprehension `if`"}


class TensorTruthiness(Rule):
    code = "SFL106"
    name = "tensor-truthiness"
    messages = {
        "default": "a tensor used as a condition waits for the GPU; use `torch.where` or check it at log intervals",
        "nan_check": "a NaN/inf check on a tensor in {where} waits for the GPU every step; mask the update with "
                     "`torch.where(torch.isfinite(loss), ...)` and count bad steps on device, or check at log intervals",
        "condition": "a tensor used as a condition in {where} waits for the GPU; decide on device with `torch.where`, "
                     "or check at log intervals",
        "min_max": "`{function}()` of a tensor and another value compares them in Python: the host waits for the "
                   "GPU; use `torch.{function}imum` or `clamp` on the device",
        "min_max_items": "`{function}()` of device tensors compares them in Python, each comparison a wait for the "
                         "GPU; `torch.stack(...).{function}()` keeps it on the device",
    }
    node_types = (cst.If, cst.While, cst.Assert, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation, cst.CompIf,
                  cst.Call)
    invalid = (
        """
        import torch

        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                loss = criterion(model(x), y)
                if torch.isnan(loss):
                    continue
                loss.backward()
                optimizer.step()
        """,
        """
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                assert loss < 100
        """,
        """
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                losses = []
                for scale in (1.0, 0.5):
                    losses.append((model(x * scale) - y).pow(2).mean())
                sum(losses).backward()
                optimizer.step()
                worst = max(losses)
        """,
    )
    valid = (
        """
        import torch

        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                loss = criterion(model(x), y)
                finite = torch.isfinite(loss)
                torch.where(finite, loss, torch.zeros_like(loss)).backward()
                optimizer.step()
        """,
        """
        def train(model, loader, optimizer, criterion, args):
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step > args.max_steps:
                    break
        """,
        """
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                losses = []
                for scale in (1.0, 0.5):
                    losses.append((model(x * scale) - y).pow(2).mean())
                sum(losses).backward()
                optimizer.step()
                worst = max(len(t.shape) for t in losses)
        """,
    )
    doc = """
## What it does
Flags a tensor used where Python needs a `bool`: `if t:`, `while t:`, `assert t`,
`x if t else y`, `t and u`, `not t`, including `if torch.isnan(loss):`,
`if (a == b).all():` and `if loss > 10:`; and Python's `min(a, b)` / `max(a, b)` with a tensor
among the values (they compare with `<`/`>` and branch on the result). Needs positive evidence
that the value is a tensor.

## Why it syncs
`bool(t)` reads the value on the host (`.item()`), so the CPU waits for every queued kernel
before it can choose a branch.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    if torch.isnan(loss):
        continue
    loss.backward()
    opt.step()
```

## Use instead
Make the decision on the device, or defer the check:
```python
for x, y in loader:
    loss = criterion(model(x), y)
    finite = torch.isfinite(loss)
    (torch.where(finite, loss, torch.zeros_like(loss))).backward()  # skip without a sync
    opt.step()
    bad_steps += ~finite                                            # read at log intervals
```
When the control flow really needs the value (early stopping, ranks agreeing to stop), read it
every N steps under an interval guard.

## Fix safety
No automatic fix: the branch structure has to change.
"""

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:
        if isinstance(node, cst.Call):
            self._min_max(node, ctx)
            return
        seen = ctx.state(self).setdefault("seen", set())
        if isinstance(node, (cst.If, cst.While, cst.Assert, cst.IfExp, cst.CompIf)):
            test = node.test
            where = _WHERE[type(node)]
            for site in truthy_sites(test, ctx):
                self._flag(site, where, ctx, seen)
            for sub in _bool_parts(test):
                seen.add(id(sub))
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            if id(node) not in seen:
                for site in truthy_sites(node, ctx):
                    self._flag(site, "`not`", ctx, seen)
                for sub in _bool_parts(node):
                    seen.add(id(sub))
        elif isinstance(node, cst.BooleanOperation) and id(node) not in seen:
            if isinstance(node.operator, cst.And) and ctx.is_off_switch(node.left):
                return  # `DEBUG and torch.isnan(x).any()`: the right side runs only when switched on
            self._flag(node.left, f"`{'and' if isinstance(node.operator, cst.And) else 'or'}`", ctx, seen)
            for sub in _bool_parts(node):
                seen.add(id(sub))

    def _min_max(self, node: cst.Call, ctx: SemanticModel) -> None:
        """``min(self.decay, (1 + n) / (10 + n))`` with ``n`` a device tensor: Python compares the values."""
        func = node.func
        if not isinstance(func, cst.Name) or func.value not in ("min", "max") or ctx.is_imported(func.value):
            return
        values = [arg.value for arg in node.args if arg.keyword is None]
        if any(arg.star for arg in node.args) or not values:
            return  # unpacked values
        if len(values) == 1:  # one iterable: its items are compared (`min(losses)` of device tensors)
            items = values[0]
            if ctx.kind(items) == tensors.TENSORS or ctx.element_kind(items) in tensors.DEVICE_TENSORS:
                ctx.report(self, node, "min_max_items", function=func.value)
            return
        if any(ctx.is_tensor(value) for value in values):
            ctx.report(self, node, "min_max", function=func.value)

    def _flag(self, site: cst.BaseExpression, where: str, ctx: SemanticModel, seen: set) -> None:
        if id(site) in seen or not ctx.is_tensor(site):
            return
        seen.add(id(site))
        ctx.report(self, site, "nan_check" if _mentions(site, _NAN_CHECKS) else "condition", where=where)


def truthy_sites(expr: cst.BaseExpression, ctx: SemanticModel) -> Iterator[cst.BaseExpression]:
    """The sub-expressions Python calls ``bool()`` on when ``expr`` is used as a condition (the
    right side of ``DEBUG and ...`` only when a switch the user turns on holds: not per step)."""
    if isinstance(expr, cst.BooleanOperation):
        yield from truthy_sites(expr.left, ctx)
        if not (isinstance(expr.operator, cst.And) and ctx.is_off_switch(expr.left)):
            yield from truthy_sites(expr.right, ctx)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from truthy_sites(expr.expression, ctx)
    else:
        yield expr


def _bool_parts(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    yield expr
    if isinstance(expr, cst.BooleanOperation):
        yield from _bool_parts(expr.left)
        yield from _bool_parts(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from _bool_parts(expr.expression)


def _mentions(expr: cst.CSTNode, names: tuple) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in names:
            return True
        if isinstance(node, cst.Attribute):
            if node.attr.value in names:
                return True
            stack.append(node.value)
        elif isinstance(node, cst.Call):
            stack.append(node.func)
            stack.extend(a.value for a in node.args)
        elif isinstance(node, (cst.UnaryOperation,)):
            stack.append(node.expression)
        elif isinstance(node, cst.Comparison):
            stack.append(node.left)
    return False
