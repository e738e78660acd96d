"""SFL401: ``torch.tensor(<host data>, device=...)`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import keyword_value, positional
from syncfree_lint.edits import FixPlan
from syncfree_lint.fixes import scalar_tensor
from syncfree_lint.rules.base import Rule


class TensorFromPythonData(Rule[cst.Call]):
    code = "SFL401"
    name = "tensor-from-host-data-in-step"
    messages = {
        "default": "`torch.tensor(..., device=...)` in a step copies host data to the device and waits; build it once "
                   "outside the step, or keep it a CPU tensor",
        "function": "`torch.{function}(..., device=...)` in a step copies host data to the device and waits; build it "
                    "once outside the step, or keep it a CPU tensor",
        "default_device": "`torch.{function}(...)` with an accelerator as the default device copies host data to the "
                          "device in a step and waits; build it once outside the step",
        "new_tensor": "`.new_tensor(...)` of host data in a step copies it to the tensor's device and waits; build it "
                      "once outside the step (`register_buffer` in a module)",
    }
    node_types = (cst.Call,)
    invalid = (
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader):
            for x, y in loader:
                weights = torch.tensor([1.0, 2.0, 0.5], device="cuda")
                F.cross_entropy(model(x), y, weight=weights).backward()
        """,
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader, class_weights):
            for x, y in loader:
                logits = model(x.cuda())
                F.cross_entropy(logits, y.cuda(), weight=logits.new_tensor(class_weights)).backward()
        """,
    )
    valid = (
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader):
            weights = torch.tensor([1.0, 2.0, 0.5], device="cuda")
            for x, y in loader:
                F.cross_entropy(model(x), y, weight=weights).backward()
        """,
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader):
            for x, y in loader:
                weights = torch.tensor([1.0, 2.0, 0.5], device="cpu")
                F.cross_entropy(model(x), y, weight=weights).backward()
        """,
        """
        import torch
        import torch.nn.functional as F

        def train(model, loader, class_weights):
            weights = None
            for x, y in loader:
                logits = model(x.cuda())
                if weights is None:
                    weights = logits.new_tensor(class_weights)
                F.cross_entropy(logits, y.cuda(), weight=weights).backward()
        """,
    )
    doc = """
## What it does
Flags `torch.tensor(<python data>, device=<accelerator>)` and
`torch.as_tensor(<python data or numpy>, device=...)` inside a step, and `t.new_tensor(<host data>)` of a tensor
not known to be on the CPU (it builds on `t`'s device). In a file that makes an
accelerator the default device (`torch.set_default_device("cuda")`,
`torch.set_default_tensor_type(torch.cuda.FloatTensor)`), also `torch.tensor(data)` and
`torch.Tensor([...])` without `device=`: they build on the accelerator too.

## Why it syncs
The data is in pageable host memory. The copy to the device is synchronous with respect to the
host (it is staged through a pinned buffer), and on CUDA it also waits on the stream, once per step.

## Example
```python
for x, y in loader:
    weights = torch.tensor([1.0, 2.0, 0.5], device="cuda")
    loss = F.cross_entropy(model(x), y, weight=weights)
```

## Use instead
```python
weights = torch.tensor([1.0, 2.0, 0.5], device="cuda")  # once, before the loop
for x, y in loader:
    loss = F.cross_entropy(model(x), y, weight=weights)
```
A Python scalar that changes per step can stay a CPU 0-d tensor: it reaches a GPU kernel as an
argument, without a copy.

## Fix safety
Safe, for a Python number: `torch.tensor(x, device=d)` -> `torch.full((), x, device=d)` with the
dtype `torch.tensor` infers (`torch.bool`, `torch.int64`; a float gets the default dtype either way),
`dtype=` and `requires_grad=` kept; only where `x` is proven one Python type (`fixes/scalar_tensor.py`).
A one-number list or tuple is the same fill with size `(1,)`: `torch.tensor([x], device=d)` ->
`torch.full((1,), x, device=d)`. Longer lists and arrays have no automatic fix: hoisting needs the data to
be step-invariant.
"""
    fix_title = "fill on the device: `torch.full((), x, device=d)`, no host copy"

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        if not isinstance(node.func, (cst.Attribute, cst.Name)):
            return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "new_tensor":
            data, device = positional(node, 0), keyword_value(node, "device")  # `pw.new_tensor(self.perm_list)`:
            if data is not None and ctx.maybe_tensor(node.func.value) and ctx.kind(data) not in tensors.DEVICE_TENSORS \
                    and (device is None or not ctx.is_cpu_device(device)):  # on `pw`'s device, from host data
                ctx.report(self, node, "new_tensor")
            return
        qual = ctx.qualname(node.func) or ""
        device = keyword_value(node, "device")
        if device is None and ctx.default_device_is_accelerator() and _from_python_data(node, qual):
            # `torch.Tensor([1e10])` after `torch.set_default_tensor_type(torch.cuda.FloatTensor)`
            ctx.report(self, node, "default_device", function=qual.split(".")[-1])
            return
        if qual not in ("torch.tensor", "torch.as_tensor", "torch.asarray"):
            return
        if device is None or ctx.is_cpu_device(device):
            return
        data = positional(node, 0)
        if data is None or ctx.kind(data) in tensors.DEVICE_TENSORS:
            return
        fix = FixPlan(self.fix_title, "safe", scalar_tensor.builder(node, ctx.current_scope(), ctx.state(self).setdefault("scopes", {})))
        ctx.report(self, node, "function", fix=fix, function=qual.split(".")[-1])


#: constructors that copy Python data: ``torch.tensor(x)``, and the legacy ``torch.Tensor([...])`` forms
_DATA_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})
_LEGACY_CONSTRUCTORS = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.IntTensor",
                                  "torch.DoubleTensor", "torch.BoolTensor", "torch.HalfTensor"})


def _from_python_data(node: cst.Call, qual: str) -> bool:
    """A constructor that copies host data: ``torch.tensor(...)`` of anything, the legacy
    ``torch.Tensor(...)`` only of a list or tuple (``torch.Tensor(3, 4)`` is a shape)."""
    data = positional(node, 0)
    if data is None:
        return False
    if qual in _DATA_CONSTRUCTORS:
        return True
    return qual in _LEGACY_CONSTRUCTORS and isinstance(data, (cst.List, cst.Tuple, cst.ListComp))

