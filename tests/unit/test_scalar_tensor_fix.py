"""SFL401's fix (fixes/scalar_tensor.py): the rewritten `torch.full` builds the very tensor `torch.tensor` did.

Each case is a function whose last statement is `t = torch.tensor(...)`. The fix's text is
evaluated next to the original in the same namespace, under the float32 and the float64 default
dtype: value, dtype, device, shape and requires_grad must all agree. Declined cases name their reason.
"""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from syncfree_lint.edits import Declined, Replace, code
from syncfree_lint.fixes import scalar_tensor
from syncfree_lint.analysis.scope_index import ScopeIndex

torch = pytest.importorskip("torch")

FIXED = {
    "float literal": ("", "torch.tensor(0.1, device=d)"),
    "bool literal": ("", "torch.tensor(False, device=d)"),
    "negative int, explicit dtype": ("", "torch.tensor(-3, device=d, dtype=torch.float16)"),
    "large int": ("", "torch.tensor(1099511627776, device=d)"),
    "requires_grad": ("", "torch.tensor(2.0, requires_grad=True, device=d)"),
    "bool with int32": ("flag = False\nflag = True", "torch.tensor(flag, dtype=torch.int32, device=d)"),
    "range counter": ("for step in range(3):\n    pass", "torch.tensor(step, device=d)"),
    "int arithmetic": ("n = 2\nn += 1", "torch.tensor(n * 2 - 1, device=d)"),
    "true division": ("n = 3", "torch.tensor(n / 4, device=d)"),
    "len": ("n = len([1, 2])", "torch.tensor(n, device=d)"),
    "bool arithmetic": ("", "torch.tensor(True + True, device=d)"),
    "one-float list": ("", "torch.tensor([0.1], device=d)"),
    "one-int tuple, explicit dtype": ("n = 7", "torch.tensor((n,), device=d, dtype=torch.int32)"),
    "one-bool list": ("", "torch.tensor([True], device=d)"),
    "float('inf') in a list": ("", "torch.tensor([float('inf')], device=d, dtype=torch.float32)"),
    "tensor size in a list": ("x = torch.ones(5, 2)", "torch.tensor([x.numel()], device=d)"),
    "size bound to a name": ("x = torch.ones(5, 2)\nn = x.size(0)", "torch.tensor(n, device=d)"),
}

DECLINED = {
    "may be int or float": ("n = 1\nif d:\n    n = 0.5", "torch.tensor(n, device=d)", "`n` may be float or int"),
    "parameter": ("", "torch.tensor(d, device=d)", "`d` is a parameter"),
    "unknown call": ("n = compute()", "torch.tensor(n, device=d)", "`compute(...)` is not known"),
    "power": ("", "torch.tensor(2 ** -1, device=d)", "depends on the values"),
    "list of two numbers": ("", "torch.tensor([1.0, 2.0], device=d)", "not a Python number literal"),
    "nested list": ("", "torch.tensor([[1.0]], device=d)", "not a Python number literal"),
    "starred list": ("xs = [1.0]", "torch.tensor([*xs], device=d)", "not a Python number literal"),
    "list of a parameter": ("", "torch.tensor([d], device=d)", "`d` is a parameter"),
    "pin_memory": ("", "torch.tensor(1.0, device=d, pin_memory=False)", "`pin_memory=`"),
    "as_tensor": ("", "torch.as_tensor(1.0, device=d)", "only `torch.tensor(...)`"),
}


def decide(setup: str, expression: str):
    body = textwrap.indent(f"{setup}\nt = {expression}\n", "    ")
    module = cst.parse_module(f"import torch\n\n\ndef make(d):\n{body}")
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    last = function.body.body[-1]
    call = last.body[0].value  # type: ignore[attr-defined]
    return scalar_tensor.decide(call, ScopeIndex(function))


def build(setup: str, expression: str, dtype):
    namespace = {"torch": torch}
    source = f"def make(d):\n{textwrap.indent(setup, '    ')}\n    return {expression}\n"
    torch.set_default_dtype(dtype)
    try:
        exec(source, namespace)
        return namespace["make"]("cpu")
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_form_builds_the_same_tensor(name):
    setup, expression = FIXED[name]
    parts = decide(setup, expression)
    assert not isinstance(parts, Declined), parts
    [edit] = parts
    assert isinstance(edit, Replace) and edit.text.startswith(("torch.full((), ", "torch.full((1,), "))
    assert code(edit.node) == expression
    for dtype in (torch.float32, torch.float64):
        before, after = build(setup, expression, dtype), build(setup, edit.text, dtype)
        assert (after.dtype, after.device, after.shape, after.requires_grad) == \
            (before.dtype, before.device, before.shape, before.requires_grad), (edit.text, dtype)
        assert after.item() == before.item() and type(after.item()) is type(before.item())


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_declined_with_its_reason(name):
    setup, expression, reason = DECLINED[name]
    decision = decide(setup, expression)
    assert isinstance(decision, Declined) and reason in decision.reason, decision


def test_a_module_name_a_function_rebinds_through_global_is_declined():
    module = cst.parse_module(
        "import torch\nflag = False\n\n\ndef toggle():\n    global flag\n    flag = 0.5\n\n\n"
        "t = torch.tensor(flag, device='cuda')\n")
    call = module.body[-1].body[0].value  # type: ignore[attr-defined]
    decision = scalar_tensor.decide(call, ScopeIndex(module))
    assert isinstance(decision, Declined) and "global" in decision.reason, decision
