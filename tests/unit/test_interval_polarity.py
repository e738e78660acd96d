"""An interval test guards its body only when it is true one step in ``k`` (``step % k == 0``); ``step % k != 0``,
``step % k > 0`` and a bare ``step % k`` are true on the other steps, so their body runs nearly every step, and an
early exit under them leaves the rest of the loop to one step in ``k`` (``guards.is_mostly_true_interval``)."""
from __future__ import annotations

import libcst as cst
import pytest

from project_lint import lint_files
from syncfree_lint.analysis.guards import is_mostly_true_interval

_LOOP = """
    import torch

    def train(model, loader, opt, log_every=10):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            loss.backward()
            opt.step()
            opt.zero_grad()
            if {test}:
                print(loss.item())
"""


@pytest.mark.parametrize("test,reported", [
    ("step % log_every == 0", False),
    ("not step % log_every", False),
    ("step % log_every != 0", True),
    ("(step % log_every) > 0", True),
    ("step % log_every", True),
])
def test_the_body_of_an_interval_test(tmp_path, test: str, reported: bool) -> None:
    findings = lint_files(tmp_path, {"train.py": _LOOP.replace("{test}", test)})
    assert (("train.py", 11, "SFL101") in findings) is reported, findings


def test_an_exit_under_a_mostly_true_interval_leaves_the_rest_to_one_step_in_k(tmp_path) -> None:
    program = """
        import torch

        def train(model, loader, opt, log_every=10):
            for step, (x, y) in enumerate(loader):
                loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                loss.backward()
                opt.step()
                opt.zero_grad()
                if step % log_every != 0:
                    continue
                print(loss.item())
    """
    assert lint_files(tmp_path, {"train.py": program}) == []


@pytest.mark.parametrize("test,expected", [
    ("i % k != 0", True), ("i % k > 0", True), ("i % k", True), ("(i % k)", True),
    ("i % k == 0", False), ("i % k != 1", False), ("i % k < 1", False), ("'%d' % k", False), ("not i % k", False),
])
def test_is_mostly_true_interval(test: str, expected: bool) -> None:
    assert is_mostly_true_interval(cst.parse_expression(test)) is expected
