"""A ``while`` loop that draws its batch from a local generator yielding device data (``x, y = next(batches)``
of ``yield X[keep], Y[keep]``) runs once per batch, whatever the generator is called; one drawing numbers (a
schedule) does not."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_LOOP = """
    import torch

    def batches(X, Y, rate):
        while True:
            keep = torch.rand(X.shape[0], device=X.device) < rate
            yield {yielded}

    def train(model, X, Y, steps, log):
        X, Y = X.cuda(), Y.cuda()
        draws = batches(X, Y, 0.1)
        step = 0
        while step < steps:
            x, y = next(draws)
            log.append(model(x).sum().item())
            step += 1
"""


@pytest.mark.parametrize("yielded,found", [("X[keep], Y[keep]", True), ("0.1, 0.2", False)])
def test_a_while_loop_drawing_from_a_generator_of_device_data_is_a_step_loop(tmp_path, yielded, found):
    result = lint_files(tmp_path, {"loop.py": _LOOP.format(yielded=yielded)})
    assert (("loop.py", 15, "SFL101") in result) is found
