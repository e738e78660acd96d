"""What the SFL2xx rules share."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import positional
from syncfree_lint.rules.base import receiver


def torch_call(node: cst.Call, ctx: SemanticModel, *names: str) -> str:
    """The matched ``torch.<name>`` (also ``torch.Tensor.<name>``), or ''."""
    if isinstance(node.func, (cst.Attribute, cst.Name)):
        qual = ctx.qualname(node.func) or ""
        for name in names:
            if qual in (f"torch.{name}", f"torch.Tensor.{name}", f"torch.nn.functional.{name}"):
                return name
    return ""


def device_receiver(node: cst.Call, ctx: SemanticModel) -> bool:
    """A method call on something that may be a device tensor (not torch or numpy themselves)."""
    return ctx.maybe_tensor(receiver(node)) and not (ctx.qualname(receiver(node)) or "").startswith(("torch", "numpy"))


def device_args(node: cst.Call, ctx: SemanticModel) -> bool:
    """Not every tensor argument is known to be on the host."""
    first = positional(node, 0)
    if first is None:
        first = node.args[0].value if node.args else None
    return first is None or ctx.kind(first) not in (tensors.HOST_TENSOR, tensors.NUMPY, tensors.NUMBER, tensors.OTHER)
