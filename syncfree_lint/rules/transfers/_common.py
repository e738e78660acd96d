"""What the SFL4xx rules share: where a ``.to(...)``/``.cuda()`` call sends its tensor."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import keyword_value, positional
from syncfree_lint.rules.base import method_call

#: ``.to(<dtype>)`` names: a cast, not a move
_DTYPE_WORDS = frozenset({"float16", "bfloat16", "float32", "float64", "float", "half", "double", "long", "int",
                          "int64", "int32", "bool", "uint8", "int8", "complex64"})


def device_target(node: cst.Call, ctx: SemanticModel) -> Optional[cst.BaseExpression]:
    """The accelerator ``node`` moves its receiver to: the argument of ``.to(...)`` (``node`` itself
    for ``.cuda()``; the device tensor of ``.type_as(t)``, whose device it takes), or None when it
    is not a move to an accelerator (a cast, the CPU)."""
    name = method_call(node)
    if name == "cuda":
        return node
    if name == "type_as":
        other = positional(node, 0)
        return other if other is not None and ctx.is_tensor(other) else None
    if name != "to":
        return None
    device = keyword_value(node, "device")
    target = device if device is not None else positional(node, 0)
    if target is None or ctx.is_cpu_device(target):
        return None
    if isinstance(target, cst.Attribute) and target.attr.value in _DTYPE_WORDS:
        return None
    name = target.value if isinstance(target, cst.Name) else target.attr.value if isinstance(target, cst.Attribute) else ""
    if "dtype" in name.lower():
        return None  # `.to(dtype)`, `.to(x.dtype)`: a cast
    return target
