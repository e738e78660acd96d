"""A closure calling a parameter of the function around it (``def build_step(sampler): def step(x):
sampler(...)``) runs what is passed there; a loop over a tuple of device tensors (``for t in (seqs,
*aligned)``) or over a module (``for head in self.heads``) gives device tensors or modules, and
``tuple(...)`` of a generator of device tensors holds device tensors; ``.any(dim)``/``.all(dim)`` of a
tensor is a mask."""
from __future__ import annotations

from project_lint import lint_files

_SAMPLER = """
    import torch

    def make_sampler(n_steps, trace):
        def run(energy, x):
            for _ in range(n_steps):
                x = x - 0.1 * torch.autograd.grad(energy(x).sum(), [x])[0]
                trace.append(x.norm().item())
            return x
        return run
"""

_TRAIN = """
    import torch
    from sampler import make_sampler

    def build_step(model, opt, sampler):
        def step(x):
            neg = sampler(model, x.clone().requires_grad_(True))
            loss = model(x).mean() - model(neg.detach()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return step

    def main(model, opt, loader):
        step = build_step(model, opt, make_sampler(5, []))
        for x in loader:
            step(x.cuda())
"""


def test_a_closure_runs_the_function_passed_to_its_outer_function(tmp_path) -> None:
    assert lint_files(tmp_path, {"sampler.py": _SAMPLER, "train.py": _TRAIN}) == [("sampler.py", 8, "SFL101")]


def test_a_closure_name_of_its_own_hides_the_outer_parameter(tmp_path) -> None:
    own = _TRAIN.replace("neg = sampler(model,", "sampler = lambda m, x: x\n            neg = sampler(model,")
    assert lint_files(tmp_path, {"sampler.py": _SAMPLER, "train.py": own}) == []


_MODEL = """
    import torch
    from torch import nn

    def trim(seqs, *aligned):
        longest = int(seqs.shape[1] // 2)
        return tuple(t[:, -longest:] for t in (seqs, *aligned))

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

        def forward(self, x, y):
            x, y = trim(x, y)
            for head in self.heads:
                x = head(x)
            return x, y
"""

_LOOP = """
    import torch
    from model import Tagger

    def train(loader, opt):
        model = Tagger().cuda()
        for x, y in loader:
            out, kept = model(x.cuda(), y.cuda())
            valid = (kept != 0).any(dim=-1)
            loss = out[valid].mean()
            confident = (out.abs() < 1).all(dim=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(out[confident].shape)
"""


def test_loops_over_tuples_and_modules_and_reduced_masks(tmp_path) -> None:
    found = lint_files(tmp_path, {"model.py": _MODEL, "loop.py": _LOOP})
    assert found == [("loop.py", 10, "SFL202"), ("loop.py", 15, "SFL202")]
