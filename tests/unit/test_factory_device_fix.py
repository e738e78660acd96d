"""SFL403's fix (fixes/factory_device.py): a factory moved as it is built is built on the device,
only where the device-built tensor is the same; each other shape is declined with its reason.
The fixed programs run in tests/integration/test_fix_programs.py (sfl403_*)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from syncfree_lint.config import Config  # noqa: E402
from syncfree_lint.engine import lint_text  # noqa: E402

HEADER = """\
import torch
import torch as th


def train(model, loader, optimizer, n):
    for x, y in loader:
        x = x.cuda()
        value = {expr}
        model(x, value).mean().backward()
        optimizer.step()
"""

OFFERED = {
    "torch.arange(x.shape[1]).to(x.device)": "torch.arange(x.shape[1], device=x.device)",
    "torch.arange(len(y)).cuda()": 'torch.arange(len(y), device="cuda")',
    "torch.zeros(x.size(0), 3).to(device=x.device, dtype=x.dtype)": "torch.zeros(x.size(0), 3, device=x.device, dtype=x.dtype)",
    "torch.ones(4, dtype=torch.float16).to(x.device)": "torch.ones(4, dtype=torch.float16, device=x.device)",
    "th.eye(3).to(torch.device('cuda', 0))": "th.eye(3, device=torch.device('cuda', 0))",
    "torch.zeros(2, 2).to('cuda:0', torch.float16)": "torch.zeros(2, 2, device='cuda:0', dtype=torch.float16)",
}
DECLINED = {
    "torch.arange(0, 1, 0.1).to(x.device)": "not proven integers",
    "torch.arange(n).to(x.device)": "not proven integers",
    "torch.arange(5).to(x.device, torch.float16)": "also casts",
    "torch.randn(3).to(x.device)": "device's generator",
    "torch.linspace(0, 1, 5).to(x.device)": "not proven to give the same values",
    "torch.tensor([1.0, 2.0]).to(x.device)": "copies host data",
    "torch.zeros(3, requires_grad=True).to(x.device)": "`requires_grad=`",
    "torch.zeros(3).to(y)": "not proven a device",
    "torch.zeros(3, dtype=torch.int64).to(x.device, torch.float32)": "also casts",
    "torch.zeros(3).cuda(1)": "with arguments",
}


def finding(expr: str):
    [found] = [d for d in lint_text("t.py", HEADER.format(expr=expr), Config()) if d.code == "SFL403"]
    return found


@pytest.mark.parametrize("expr", sorted(OFFERED))
def test_offered(expr):
    found = finding(expr)
    assert found.fix is not None and found.fix.applicability == "safe", found.fix_declined
    [edit] = found.fix.edits
    assert edit.content == OFFERED[expr]


@pytest.mark.parametrize("expr", sorted(DECLINED))
def test_declined(expr):
    found = finding(expr)
    assert found.fix is None and DECLINED[expr] in (found.fix_declined or ""), found.fix_declined


@pytest.mark.parametrize("expr", sorted(e for e in OFFERED if "cuda" not in e and "torch.device" not in e))
def test_the_device_built_tensor_is_the_same(expr):
    """On the CPU (the only device here) the host-built-and-moved and the built-there tensors are equal."""
    x, y = torch.randn(2, 3), torch.randn(2)
    before = eval(expr, {"torch": torch, "th": torch, "x": x, "y": y})
    after = eval(OFFERED[expr], {"torch": torch, "th": torch, "x": x, "y": y})
    assert before.dtype == after.dtype and before.device == after.device and torch.equal(before, after)
