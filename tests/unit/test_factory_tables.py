"""A factory that returns a dict of the closures it defines (``phases = make_phases(model, opt)``) makes
``phases[name](out)`` run one of them (a loop running a closure that steps the optimizer is a step loop); a parameter taken for a batch by its name but given as a size
(``torch.zeros(batch, d)``) is a batch size."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_PHASES = """
    import torch

    def make_phases(model, opt, state):
        def sample(out):
            x = torch.randn(64, 8, device="cuda")
            state["scale"] = x.abs().max().item()
            return {{"x": x, "y": model(x)}}

        def update(out):
            loss = out["y"].pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return {{}}

        return {returned}

    def run(model, opt, iterations):
        state = {{"it": 0}}
        phases = make_phases(model.cuda(), opt, state)
        while state["it"] < iterations:
            out = {{}}
            for name in ("sample", "update"):
                out.update(phases[name](out))
            state["it"] += 1
"""


@pytest.mark.parametrize("returned, expected", [('{"sample": sample, "update": update}', True),
                                                ("[sample, update]", True), ('{"sample": sample}', False)])
def test_a_dict_of_closures_from_a_factory_runs_each(tmp_path, returned, expected) -> None:
    found = lint_files(tmp_path, {"phases.py": _PHASES.format(returned=returned)})
    assert (("phases.py", 7, "SFL101") in found) is expected


def test_a_batch_named_parameter_given_as_a_size_is_a_number(tmp_path) -> None:
    found = lint_files(tmp_path, {"sampler.py": """
        import torch

        class Sampler(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = torch.nn.LSTMCell(4, 4)

            def sample(self, batch):
                h = torch.zeros(batch, 4, device="cuda")
                prev = torch.full((batch,), 3, dtype=torch.long, device="cuda")
                return self.cell(h)[0], prev

        def train(cfg):
            sampler = Sampler().cuda()
            opt = torch.optim.SGD(sampler.parameters(), lr=0.1)
            for _ in range(cfg["iterations"]):
                out, prev = sampler.sample(cfg["batch"])
                loss = out.pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """})
    assert not [f for f in found if f[2] == "SFL112"]
