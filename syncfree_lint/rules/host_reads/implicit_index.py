"""SFL112: a tensor where Python needs an int (a slice bound, ``range()``, an index into a list), converted implicitly."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.edits import code
from syncfree_lint.knowledge.torch_api import TENSOR_INT_ARGUMENT_METHODS, TORCH_NUMBER_ARGUMENT_FACTORIES
from syncfree_lint.rules.base import Rule

#: receivers that take a tensor index through ``__index__`` on the host: lists, tuples, strings (a
#: known non-tensor value) and NumPy arrays; a dict hashes the tensor object and reads nothing
_HOST_SEQUENCES = frozenset({tensors.OTHER, tensors.NUMPY})
#: an index computed on the device (``logits.argmax()``); not an item of a batch, which is often host
#: metadata (``data["dataset"]`` keying a dict of counts)
_COMPUTED = frozenset({tensors.TENSOR, tensors.MASK})


class ImplicitIndex(Rule[cst.CSTNode]):
    code = "SFL112"
    name = "tensor-as-python-int"
    messages = {
        "default": "a tensor used as a slice bound is converted to a Python int: the host waits for the GPU; "
                   "slice with a host int (a length you already know) or mask on device",
        "range": "`range()` of a tensor converts it to a Python int: the host waits for the GPU; loop over a host "
                 "count, or vectorise",
        "factory": "`{function}()` of a tensor bound or size converts it to a Python number: the host waits for the "
                   "GPU; pass a host number (a length you already know), or build to the padded size and mask",
        "size": "`{function}()` with a tensor as its count or size converts it to a Python int: the host waits for "
                "the GPU; pass a host int (from shapes you already know), or keep the size fixed and mask",
        "sequence": "a tensor used as an index into a Python sequence (`{container}`) is converted to a Python int: "
                    "the host waits for the GPU; keep the values in a tensor and index it on the device, or read the "
                    "index at log intervals",
    }
    node_types = (cst.Slice, cst.Call, cst.Subscript)
    invalid = (
        """
        def train(model, loader, optimizer):
            for tokens, lengths in loader:
                longest = lengths.max()
                out = model(tokens[:, :longest])
                out.mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                out = model(x)
                count = (y > 0).sum()
                for i in range(count):
                    out = out + i
                out.mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, lengths in loader:
                lengths = lengths.cuda()
                ids = torch.arange(0, lengths.max(), device=lengths.device)
                out = model(x, ids[None] < lengths[:, None])
                out.mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                losses = model(x, y)
                k = (losses > losses.mean()).sum()
                losses.topk(k).values.mean().backward()
                optimizer.step()
        """,
        """
        def train(model, loader, optimizer):
            for x, index in loader:
                out = model(x)
                n = index.max() + 1
                pooled = out.new_zeros((n, out.size(1))).index_add_(0, index, out)
                pooled.mean().backward()
                optimizer.step()
        """,
        """
        def train(model, loader, optimizer, class_names):
            worst = []
            for x, y in loader:
                losses = model(x, y)
                names = list(class_names)
                worst.append(names[losses.argmax()])
                losses.mean().backward()
                optimizer.step()
        """,
    )
    valid = (
        """
        import torch
        def train(model, loader, optimizer):
            for x, lengths in loader:
                x, lengths = x.cuda(), lengths.cuda()
                ids = torch.arange(x.shape[1], device=x.device)
                out = model(x, ids[None] < lengths[:, None])
                out.mean().backward()
                optimizer.step()
        """,
        """
        def train(model, loader, optimizer, max_len):
            for tokens, lengths in loader:
                out = model(tokens[:, :max_len])
                out.mean().backward()
                optimizer.step()
        """,
        """
        def train(model, loader, optimizer):
            for x, y in loader:
                out = model(x)
                for i in range(x.shape[0]):
                    out = out + i
                out.mean().backward()
                optimizer.step()
        """,
        """
        def train(model, loader, optimizer, keep):
            for x, y in loader:
                losses = model(x, y)
                k = max(1, int(keep * losses.numel()))
                losses.topk(k).values.mean().backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer, class_names):
            for x, y in loader:
                losses = model(x, y)
                names = list(class_names)
                table = torch.zeros(len(names), device=losses.device)
                table[losses.argmax()] += 1
                losses.mean().backward()
                optimizer.step()
        """,
    )
    doc = """
## What it does
Flags a tensor used where Python needs an `int`, inside a step: a slice bound
(`x[:, :lengths.max()]`, `seq[: batch["len"][i]]`), an argument of `range()`, a bound or size
of a torch factory (`torch.arange(0, lengths.max(), device=d)`, `torch.zeros(n)` with a tensor `n`), and
the count or size of a tensor method (`scores.topk(k)` with `k = mask.sum()`, `x.narrow(0, 0, n)`,
`x.view(n, -1)`, `x.repeat(n, 1)`, `x.new_zeros((n, d))`: a size tuple holding a tensor too;
`knowledge/torch_api.TENSOR_INT_ARGUMENT_METHODS`), and an index computed on the device into a Python
list, tuple, string or NumPy array (`class_names[logits.argmax()]`). An index into a tensor (`x[idx]`,
advanced indexing) is not flagged: it stays on the device.

## Why it syncs
Python converts the bound with `__index__`, which reads the tensor's value on the host: the
CPU waits for every kernel queued before it, exactly like `int(t)`.

## Example
```python
for tokens, lengths in loader:
    out = model(tokens[:, : lengths.max()])
```

## Use instead
```python
for tokens, lengths in loader:              # pad to a fixed length, or take the length on the host
    out = model(tokens, attention_mask=positions < lengths[:, None])
```

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:
        if isinstance(node, cst.Subscript):
            if ctx.kind(node.value) in _HOST_SEQUENCES:
                for element in node.slice:
                    index = element.slice
                    if isinstance(index, cst.Index) and index.star is None and ctx.kind(index.value) in _COMPUTED:
                        ctx.report(self, index.value, "sequence", container=code(node.value))
                        return
        elif isinstance(node, cst.Slice):
            for bound in (node.lower, node.upper, node.step):
                if bound is not None and ctx.is_tensor(bound):
                    ctx.report(self, bound)
                    return
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "range" \
                and not ctx.is_imported("range"):
            if any(not arg.keyword and ctx.is_tensor(arg.value) for arg in node.args):
                ctx.report(self, node, "range")
        elif isinstance(node, cst.Call) and (ctx.qualname(node.func) or "") in TORCH_NUMBER_ARGUMENT_FACTORIES:
            if any(not arg.keyword and not arg.star and _holds_tensor(arg.value, ctx) for arg in node.args):
                ctx.report(self, node, "factory", function=(ctx.qualname(node.func) or "").rsplit(".", 1)[-1])
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in TENSOR_INT_ARGUMENT_METHODS:
            qual = ctx.qualname(node.func) or ""
            function = qual.startswith("torch.")  # `torch.topk(t, k)`: the sizes follow `t`
            if not function and not ctx.is_tensor(node.func.value):
                return  # `self.expand(x)`: a submodule named like the method
            arguments = node.args[1:] if function else node.args
            if any(not arg.star and _holds_tensor(arg.value, ctx) for arg in arguments):
                ctx.report(self, node, "size", function=node.func.attr.value)


def _holds_tensor(value: cst.BaseExpression, ctx: SemanticModel) -> bool:
    """A device tensor, or a size tuple holding one (``x.new_zeros((n, d))`` with a tensor ``n``). A name taken for
    a data batch (``def sample(self, batch)``) given as a size is a batch size: a batch of data is never one."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return any(isinstance(element, cst.Element) and _holds_tensor(element.value, ctx) for element in value.elements)
    if isinstance(value, cst.Name) and ctx.kind(value) == tensors.BATCH:
        return False
    return ctx.is_tensor(value)
