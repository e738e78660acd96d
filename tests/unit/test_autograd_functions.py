"""A custom autograd function's ``apply`` runs its ``forward`` at the call and its ``backward`` in the step's backward
pass (``analysis.autograd_functions``): through ``Cls.apply(...)``, a name bound to ``Cls.apply`` in the same file
or in another, and an imported class. The caller's arguments fill the parameters after ``ctx``; the gradient
``backward`` receives takes the kind of the first argument."""
from __future__ import annotations

import pytest

from project_lint import lint_files
from syncfree_lint.knowledge.callables import AUTOGRAD_FUNCTION_BASES

_FUNCTIONS = """
    import torch
    from torch.autograd import Function

    class ClipGrad(Function):
        @staticmethod
        def forward(ctx, x, limit):
            ctx.limit = limit
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            if torch.isnan(grad).any():
                grad = torch.nan_to_num(grad)
            return grad.clamp(-ctx.limit, ctx.limit), None

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, scale):
            print(scale.item())
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    clip_grad = ClipGrad.apply
"""

_TRAIN = """
    import torch
    {imports}

    def train(model, loader, opt):
        for x, y in loader:
            h = model(x.cuda())
            h = {call}
            loss = torch.nn.functional.mse_loss(h, y.cuda())
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize("imports,call", [
    ("from functions import clip_grad", "clip_grad(h, 1.0)"),  # an alias defined in another file
    ("from functions import ClipGrad", "ClipGrad.apply(h, 1.0)"),  # an imported class
    ("import functions", "functions.ClipGrad.apply(h, 1.0)"),
])
def test_backward_runs_per_step_through_apply(tmp_path, imports: str, call: str) -> None:
    findings = lint_files(tmp_path, {"functions.py": _FUNCTIONS,
                                     "train.py": _TRAIN.replace("{imports}", imports).replace("{call}", call)})
    assert ("functions.py", 13, "SFL106") in findings, findings


def test_not_applied_not_reported(tmp_path) -> None:
    findings = lint_files(tmp_path, {"functions.py": _FUNCTIONS,
                                     "train.py": _TRAIN.replace("{imports}", "").replace("{call}", "h * 2")})
    assert not any(f[0] == "functions.py" for f in findings), findings


def test_the_arguments_fill_the_parameters_after_ctx(tmp_path) -> None:
    """`Scale.apply(h, s)`: `scale` is the device tensor `s`, so its `.item()` waits (`ctx` is not `h`)."""
    local = _FUNCTIONS + """
    def train(model, loader, opt):
        for x, y in loader:
            s = torch.ones((), device="cuda")
            h = Scale.apply(model(x.cuda()), s)
            loss = (h - y.cuda()).pow(2).mean()
            loss.backward()
            opt.step()
    """
    findings = lint_files(tmp_path, {"functions.py": local})
    assert ("functions.py", 20, "SFL101") in findings, findings
    # the same call with a Python number: no tensor, no finding
    host = local.replace('s = torch.ones((), device="cuda")', "s = 0.5")
    assert ("functions.py", 20, "SFL101") not in lint_files(tmp_path, {"functions.py": host})


def test_a_local_alias_runs_backward(tmp_path) -> None:
    local = _FUNCTIONS + """
    def train(model, loader, opt):
        for x, y in loader:
            h = clip_grad(model(x.cuda()), 1.0)
            loss = (h - y.cuda()).pow(2).mean()
            loss.backward()
            opt.step()
    """
    assert ("functions.py", 13, "SFL106") in lint_files(tmp_path, {"functions.py": local})


def test_autograd_bases_name_torch_classes() -> None:
    assert all(base.startswith("torch.autograd.") for base in AUTOGRAD_FUNCTION_BASES)
