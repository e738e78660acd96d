"""Guards by their shape.

An interval test guards its body only when it is true one step in ``k`` (``step % k == 0``); ``step % k != 0``,
``step % k > 0`` and a bare ``step % k`` are true on the other steps, so their body runs nearly every step, and an
early exit under them leaves the rest of the loop to one step in ``k`` (``guards.is_mostly_true_interval``).
A memo runs once: a flag its body flips (``if not self.ready: ...; self.ready = True``), a cache it fills; but not a
parameter or local name tested outside any loop of the function (``if max_len is None: max_len = ...``), which
starts afresh at each call (``guards.memo_holder``, ``FrequencyMixin._memo_per_call``)."""
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


@pytest.mark.parametrize("test,flip,reported", [
    ("not self.initialized", "self.initialized = True", False),
    ("self.first", "self.first = False", False),
    ("not self.initialized", "self.initialized = False", True),
    ("not self.initialized", "other = True", True),
])
def test_a_flag_the_body_flips_runs_once(tmp_path, test: str, flip: str, reported: bool) -> None:
    program = """
        import torch

        class Observer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("absmax", torch.ones(()))
                self.initialized = False
                self.first = True

            def forward(self, x):
                cur = x.detach().abs().amax()
                if {test}:
                    self.absmax.fill_(cur.item())
                    {flip}
                self.absmax.mul_(0.9).add_(0.1 * cur)
                return x / self.absmax

        def train(model, loader, opt):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                loss.backward()
                opt.step()
    """.replace("{test}", test).replace("{flip}", flip)
    findings = lint_files(tmp_path, {"observer.py": program})
    assert (("observer.py", 14, "SFL101") in findings) is reported, findings


_MEMO = """
    import torch

    _CACHE = {}

    def decode(model, src, max_len=None):
        {body}
        return model(src)[:, :max_len]

    def evaluate(model, loader):
        model.eval()
        with torch.no_grad():
            for src, tgt in loader:
                decode(model, src.cuda())
"""


@pytest.mark.parametrize("body,reported", [
    # a parameter: every call starts with None
    ("if max_len is None:\n            max_len = int((src != 0).sum(1).max())", True),
    # a local name: the same
    ("limit = None\n        if limit is None:\n            limit = int((src != 0).sum(1).max())", True),
    # a module's cache: filled once per key
    ("if 'n' not in _CACHE:\n            _CACHE['n'] = int((src != 0).sum(1).max())", False),
])
def test_a_memo_on_a_name_that_starts_afresh_each_call(tmp_path, body: str, reported: bool) -> None:
    findings = lint_files(tmp_path, {"decode.py": _MEMO.replace("{body}", body)})
    assert any(f[2] == "SFL105" for f in findings) is reported, findings


@pytest.mark.parametrize("test,reported", [
    ("step == 0", False),  # once
    ("rank == 0", True),  # one process, every step
    ("args.local_rank == 0", True),
])
def test_an_equality_with_a_rank_is_no_once_test(tmp_path, test: str, reported: bool) -> None:
    program = """
        import torch

        def train(model, loader, opt, rank: int, args):
            for step, (x, y) in enumerate(loader):
                loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
                loss.backward()
                opt.step()
                if {test}:
                    print(loss.item())
    """.replace("{test}", test)
    findings = lint_files(tmp_path, {"train.py": program})
    assert (("train.py", 10, "SFL101") in findings) is reported, findings

