"""SFL501: a per-rank ratio all-reduced and divided by the world size."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.call_args import keyword_value
from syncfree_lint.rules.base import Rule


class RatioAllReduce(Rule):
    code = "SFL501"
    name = "all-reduced-ratio"
    messages = {
        "default": "a per-rank ratio is all_reduced and divided by the world size: wrong when ranks hold different sample "
                   "counts; all_reduce the numerator and the denominator, then divide",
        "avg": "a per-rank ratio is all_reduced with `ReduceOp.AVG`: wrong when ranks hold different sample counts; "
               "all_reduce the numerator and the denominator, then divide",
    }
    evidence = ("all_reduce",)
    requires = ("all_reduce",)
    node_types = (cst.Assign, cst.AugAssign, cst.Call)
    step_only = False
    invalid = (
        """
        import torch.distributed as dist

        def evaluate(correct, total):
            acc = correct / total
            dist.all_reduce(acc)
            acc /= dist.get_world_size()
            return acc
        """,
        """
        import torch.distributed as dist

        def evaluate(correct, total):
            acc = correct / total
            dist.all_reduce(acc, op=dist.ReduceOp.AVG)
            return acc
        """,
    )
    valid = (
        """
        import torch
        import torch.distributed as dist

        def evaluate(correct, total):
            stats = torch.stack([correct, total]).float()
            dist.all_reduce(stats)
            return stats[0] / stats[1]
        """,
        """
        import torch.distributed as dist

        def evaluate(loss_sum):
            dist.all_reduce(loss_sum)
            return loss_sum / dist.get_world_size()
        """,
    )
    doc = """
## What it does
Flags a per-rank ratio (an accuracy, a mean: a name assigned from a division or `.mean()`)
that is `all_reduce`d and then divided by the world size (or reduced with `ReduceOp.AVG`).
Reported wherever it happens, not only in steps: it is a correctness bug, not a sync.

## Why it is wrong
The mean of per-rank means equals the global mean only when every rank saw the same number of
samples. With a `DistributedSampler` that does not drop the last batch, or uneven shards, the
ranks differ, and the result is biased.

## Example
```python
acc = correct / total
dist.all_reduce(acc)
acc /= dist.get_world_size()
```

## Use instead
```python
stats = torch.stack([correct, total]).float()
dist.all_reduce(stats)
acc = stats[0] / stats[1]
```
`syncfree` metrics keep sums and counts, and reduce them this way.

## Fix safety
No automatic fix: the numerator and denominator have to be kept apart first.
"""

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:
        state = ctx.state(self)
        scope = id(ctx.current_scope())
        ratios = state.setdefault(("ratios", scope), set())
        pending = state.setdefault(("pending", scope), {})  # name -> (the all_reduce call, its statement)
        if isinstance(node, cst.Assign):
            for target in node.targets:
                name = dotted(target.target)
                if name is None:
                    continue
                if name in pending and _divides(node.value, name):
                    call, statement = pending.pop(name)
                    ctx.report(self, call, statement=statement)
                elif _is_ratio(node.value, ctx):
                    ratios.add(name)
                else:
                    ratios.discard(name)
        elif isinstance(node, cst.AugAssign):
            name = dotted(node.target)
            if name in pending and isinstance(node.operator, (cst.DivideAssign, cst.FloorDivideAssign)) \
                    and _mentions_world_size(node.value):
                call, statement = pending.pop(name)
                ctx.report(self, call, statement=statement)
        elif isinstance(node, cst.Call):
            if not isinstance(node.func, (cst.Name, cst.Attribute)):
                return
            qual = ctx.qualname(node.func) or ""
            if not qual.endswith("all_reduce") or not node.args:
                return
            name = dotted(node.args[0].value)
            if name is None or name not in ratios:
                return
            op = keyword_value(node, "op")
            if op is not None and isinstance(op, cst.Attribute) and op.attr.value == "AVG":
                ctx.report(self, node, "avg")
            elif op is None or (isinstance(op, cst.Attribute) and op.attr.value == "SUM"):
                pending[name] = (node, ctx.current_statement())


def _divides(value: cst.BaseExpression, name: str) -> bool:
    return (
        isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, (cst.Divide, cst.FloorDivide))
        and dotted(value.left) == name
        and _mentions_world_size(value.right)
    )


def _is_ratio(expr: cst.BaseExpression, ctx: SemanticModel) -> bool:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.FloorDivide)):
        return True
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "mean":
            return True
        if isinstance(func, (cst.Name, cst.Attribute)) and (ctx.qualname(func) or "") == "torch.mean":
            return True
    return False


def _mentions_world_size(expr: cst.BaseExpression) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and "world_size" in node.value.lower():
            return True
        if isinstance(node, cst.Attribute):
            if "world_size" in node.attr.value.lower() or node.attr.value == "num_processes":
                return True
            stack.append(node.value)
        elif isinstance(node, cst.Call):
            stack.append(node.func)
        elif isinstance(node, cst.BinaryOperation):
            stack.extend((node.left, node.right))
    return False
