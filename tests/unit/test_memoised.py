"""A memoised function (``@functools.lru_cache``, ``@cache``) runs its body once per distinct arguments: a table it
builds and moves to the device, called from every step with the same length, is built once. Without the decorator the
same helper builds the table every step."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_PROGRAM = """
    import functools
    from functools import lru_cache
    import math
    import torch

    {decorator}
    def discounts(length, device):
        return torch.tensor([1.0 / math.log2(i + 2.0) for i in range(length)]).to(device)

    def train(model, loader, opt, device):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            scores = model(x)
            loss = (scores * discounts(scores.shape[1], scores.device)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize("decorator,reported", [
    ("@functools.lru_cache(maxsize=8)", False), ("@lru_cache", False), ("@functools.cache", False),
    ("", True), ("@functools.wraps(print)", True),
])
def test_a_memoised_helper_runs_once_per_arguments(tmp_path, decorator: str, reported: bool) -> None:
    found = lint_files(tmp_path, {"train.py": _PROGRAM.format(decorator=decorator)})
    assert [code for _, _, code in found] == (["SFL403"] if reported else [])


def test_a_memoised_helper_keyed_by_a_tensor_runs_every_call(tmp_path) -> None:
    keyed = _PROGRAM.format(decorator="@lru_cache(maxsize=8)").replace(
        "def discounts(length, device):", "def discounts(length, like):").replace(
        ".to(device)\n", ".to(like.device)\n").replace("discounts(scores.shape[1], scores.device)",
                                                         "discounts(scores.shape[1], scores)")
    assert "to(like.device)" in keyed
    assert [code for _, _, code in lint_files(tmp_path, {"train.py": keyed})] == ["SFL403"]
