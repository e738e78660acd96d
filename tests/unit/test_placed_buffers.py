"""Buffers a module places itself, and attributes a class inherits from a base of the same file.

``register_buffer("steps", torch.tensor(0, device=device))`` with ``device=None`` by default keeps the counter where
its owner puts it, the CPU unless a caller says (an averaged copy of a model is often never moved); a buffer of
``torch.tensor(0)`` moves with the module, to the device. A subclass reads what its base's ``__init__`` kept."""
from __future__ import annotations

import textwrap

import pytest

from project_lint import lint_files

_AVERAGED = """
    import torch
    from torch import nn

    class Averaged(nn.Module):
        def __init__(self, model, device=None):
            super().__init__()
            self.module = model{place}
            self.register_buffer("steps", {buffer})

        def update(self, model):
            for p_avg, p in zip(self.module.parameters(), model.parameters()):
                self.average(p_avg.data, p.data)
            self.steps += 1

        def average(self, avg, new):
            avg.copy_(new)

    class Annealed(Averaged):
        def average(self, avg, new):
            momentum = 1.0 / (1.0 + self.steps.item())
            avg.lerp_(new, momentum)

    def train(model, opt, loader):
        model.cuda()
        ema = Annealed(model)
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            ema.update(model)
"""


_PLACE = "\n            if device is not None:\n                self.module = self.module.to(device)"


@pytest.mark.parametrize("buffer,place,found", [
    ("torch.tensor(0, dtype=torch.long, device=device)", _PLACE, False),
    ("torch.tensor(0, dtype=torch.long)", _PLACE, True),
    ("torch.tensor(0, dtype=torch.long, device=device)", "", True),  # factory keywords passed on: moves with the model
])
def test_a_buffer_placed_by_an_optional_device_stays_on_the_host(tmp_path, buffer, place, found):
    source = _AVERAGED.format(buffer=buffer, place=place)
    line = next(i for i, text in enumerate(textwrap.dedent(source).splitlines(), 1) if "self.steps.item()" in text)
    result = lint_files(tmp_path, {"ema.py": source})
    assert (("ema.py", line, "SFL101") in result) is found  # the subclass reads the base's buffer
