"""A decorator that wraps a function runs its wrapper where the function is called (``analysis.decorators``): a
decorator of this file or of another, and a decorator factory (``@guard(5.0)``)."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_DECORATORS = """
    import functools
    import torch

    def timed(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            out = fn(*args, **kwargs)
            print(out.item())
            return out
        return wrapper

    def guard(limit):
        def decorate(fn):
            def wrapper(model, *args):
                total = torch.stack([p.grad.norm() for p in model.parameters()]).norm()
                if total > limit:
                    print("large gradient")
                return fn(model, *args)
            return wrapper
        return decorate

    def register(fn):
        return fn
"""

_TRAIN = """
    import torch
    {imports}

    @{decorator}
    def step(model, x):
        return model(x).sum()

    def train(model, loader):
        for x, y in loader:
            loss = step(model, x.cuda())
            loss.backward()
"""


@pytest.mark.parametrize("decorator,line,code", [
    ("timed", 9, "SFL101"),
    ("guard(5.0)", 17, "SFL106"),
])
def test_a_wrapper_runs_where_the_decorated_function_is_called(tmp_path, decorator: str, line: int, code: str) -> None:
    train = _TRAIN.replace("{imports}", "from decorators import timed, guard").replace("{decorator}", decorator)
    findings = lint_files(tmp_path, {"decorators.py": _DECORATORS, "train.py": train})
    assert ("decorators.py", line, code) in findings, findings
    one = _DECORATORS + _TRAIN.replace("{imports}", "").replace("{decorator}", decorator).replace("    import torch\n", "", 1)
    assert ("one.py", line, code) in _one_file(tmp_path, one)


def _one_file(tmp_path, source: str):
    folder = tmp_path / "one"
    folder.mkdir()
    return lint_files(folder, {"one.py": source})


def test_a_decorator_that_returns_the_function_adds_nothing(tmp_path) -> None:
    train = _TRAIN.replace("{imports}", "from decorators import register").replace("{decorator}", "register")
    findings = lint_files(tmp_path, {"decorators.py": _DECORATORS, "train.py": train})
    assert not any(f[0] == "decorators.py" for f in findings), findings


_NORM_GUARD = """
    import torch

    def norm_guard(limit):
        def decorate(fn):
            def wrapper(model, opt):
                total = torch.stack([p.grad.norm() for p in model.parameters()]).norm()
                fn(model, opt)
                return total
            return wrapper
        return decorate
"""

_GUARDED_STEP = """
    import torch
    {imports}

    @norm_guard(5.0)
    def opt_step(model, opt):
        opt.step()
        return 0.0

    def train(model, opt, loader):
        norms = []
        for x, y in loader:
            model(x.cuda()).sum().backward()
            norm = opt_step(model, opt)
            norms.append(float(norm))
"""


def test_a_call_returns_what_the_wrapper_returns(tmp_path) -> None:
    """``opt_step`` returns a Python float, its wrapper the device norm it checked: a call gives the norm."""
    train = _GUARDED_STEP.replace("{imports}", "from checks import norm_guard")
    findings = lint_files(tmp_path, {"checks.py": _NORM_GUARD, "train.py": train})
    assert ("train.py", 15, "SFL105") in findings, findings
    one = _NORM_GUARD + _GUARDED_STEP.replace("{imports}", "").replace("    import torch\n", "", 1)
    assert ("one.py", 25, "SFL105") in _one_file(tmp_path, one)


def test_a_wrapper_of_unknown_result_keeps_the_function_s_own(tmp_path) -> None:
    """``timed`` returns what the function returns (a kind it cannot know): the function's own float stays."""
    train = _GUARDED_STEP.replace("{imports}", "from decorators import timed").replace("norm_guard(5.0)", "timed")
    findings = lint_files(tmp_path, {"decorators.py": _DECORATORS, "train.py": train})
    assert not any(f[0] == "train.py" and f[2] == "SFL105" for f in findings), findings
