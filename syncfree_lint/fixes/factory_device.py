"""SFL403's safe fix: a torch factory built on the host and moved -> built on the device.

``torch.zeros(n, 3).to(x.device)`` -> ``torch.zeros(n, 3, device=x.device)``; ``.cuda()`` ->
``device="cuda"``. No host tensor, no copy. Offered only where both give the same tensor bit for
bit (``decide`` says why not otherwise):
- the receiver is the factory call itself, spelt through the torch module: ``zeros``/``ones``/
  ``eye`` (exact in any dtype), or ``arange`` whose positional arguments are proven integers (a
  literal, ``len()``, ``x.size(0)``, ``x.shape[0]``, a name bound only to ints): its values are
  exact, but not after a cast, so ``arange`` takes no ``dtype`` from the move;
- the factory has no keyword but ``dtype=`` (``out=``, ``requires_grad=``, ``pin_memory=``: the
  device-built tensor would differ, e.g. a leaf where the moved one is not);
- the move is ``.to(d)``/``.to(device=d)`` (plus ``non_blocking=``, dropped: nothing is copied),
  or ``.to(d, t)``/``.to(device=d, dtype=t)`` for a factory without ``dtype=``, or ``.cuda()``;
  ``d`` is proven a device: ``tensor.device``, a string, ``torch.device(...)``.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Union

import libcst as cst

from syncfree_lint.edits import Declined, Replace, code
from syncfree_lint.fixes.scalar_tensor import host_number
from syncfree_lint.analysis.scope_index import ScopeIndex
from syncfree_lint.knowledge.dtypes import (
    EXACT_FACTORIES,
    HOST_DATA_CONSTRUCTORS,
    INTEGER_RANGE_FACTORIES,
    KEPT_FACTORY_KEYWORDS,
    RANDOM_FACTORIES,
)

QualName = Callable[[cst.BaseExpression], Optional[str]]
_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def builder(move: cst.Call, scope: cst.CSTNode, qualname: QualName,
            cache: Dict[int, ScopeIndex]) -> Callable[[], Union[List[Replace], Declined]]:
    def build() -> Union[List[Replace], Declined]:
        index = cache.get(id(scope))
        if index is None:
            index = cache[id(scope)] = ScopeIndex(scope)
        return decide(move, index, qualname)
    return build


def decide(move: cst.Call, index: ScopeIndex, qualname: QualName) -> Union[List[Replace], Declined]:
    """The edit for ``move`` (``factory(...).to(d)`` or ``.cuda()``), or why it is declined."""
    func = move.func
    assert isinstance(func, cst.Attribute)
    factory = func.value
    qual = qualname(factory.func) if isinstance(factory, cst.Call) and isinstance(factory.func, cst.Attribute) else None
    if not isinstance(factory, cst.Call) or qual is None or not qual.startswith("torch.") or qual.count(".") != 1:
        return Declined("the moved tensor is not a torch factory call (`torch.zeros(...)`) spelt through the module")
    name = qual.split(".")[1]
    if name in HOST_DATA_CONSTRUCTORS:
        return Declined(f"`torch.{name}` copies host data: built with `device=` it would still copy (build it once, "
                        f"outside the step)")
    if name in RANDOM_FACTORIES:
        return Declined(f"`torch.{name}` draws from the device's generator there: other values than the host's")
    if name not in EXACT_FACTORIES | INTEGER_RANGE_FACTORIES:
        return Declined(f"`torch.{name}` is not proven to give the same values on the device (only zeros, ones, eye "
                        f"and integer arange are built there)")
    keywords = {a.keyword.value for a in factory.args if a.keyword is not None}
    if keywords - KEPT_FACTORY_KEYWORDS or any(a.star for a in factory.args):
        return Declined(f"the factory takes `{sorted(keywords - KEPT_FACTORY_KEYWORDS or {'*'})[0]}=`, which the "
                        f"device-built tensor would not keep the same")
    if name in INTEGER_RANGE_FACTORIES:
        positional = [a.value for a in factory.args if a.keyword is None]
        if not positional or not all(host_number(a, index) == "int" for a in positional):
            return Declined("`arange` arguments not proven integers: float steps may round differently on the device")
    target = _target(move)
    if isinstance(target, Declined):
        return target
    device, dtype = target
    if dtype is not None and ("dtype" in keywords or name not in EXACT_FACTORIES):
        return Declined("the move also casts: a cast of this factory's values is not proven exact")
    added = [cst.Arg(keyword=cst.Name("device"), value=device, equal=_EQUAL)]
    if dtype is not None:
        added.append(cst.Arg(keyword=cst.Name("dtype"), value=dtype, equal=_EQUAL))
    args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in factory.args] + added
    return [Replace(move, None, code(factory.with_changes(args=args)))]


def _target(move: cst.Call):
    """(device, dtype or None) of the move, or why it is not a plain move to a proven device."""
    func = move.func
    assert isinstance(func, cst.Attribute)
    if func.attr.value == "type_as":
        return Declined("`.type_as(t)` takes `t`'s dtype and device: neither is spelt here")
    if func.attr.value == "cuda":
        if move.args:
            return Declined("`.cuda(...)` with arguments")
        return cst.SimpleString('"cuda"'), None
    positional = [a.value for a in move.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in move.args if a.keyword is not None}
    if set(keywords) - {"device", "dtype", "non_blocking"} or any(a.star for a in move.args) or len(positional) > 2:
        return Declined("`.to(...)` with arguments other than a device, a dtype and non_blocking")
    device = keywords.get("device", positional[0] if positional else None)
    dtype = keywords.get("dtype", positional[1] if len(positional) == 2 else None)
    if "device" in keywords and positional:
        return Declined("`.to(...)` with arguments other than a device, a dtype and non_blocking")
    if device is None or not _is_device(device):
        return Declined("the target is not proven a device (`x.device`, a string, `torch.device(...)`): `.to(t)` "
                        "of a tensor also takes its dtype")
    return device, dtype


def _is_device(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "device"
    if isinstance(expr, (cst.SimpleString, cst.FormattedString)):
        return True
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "device" \
        and isinstance(expr.func.value, cst.Name) and expr.func.value.value == "torch"
