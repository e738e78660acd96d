"""What a call returns is known also when the function is defined further down the file (a trainer's
``fit`` calling ``self.training_step`` written below it: the next walk starts from what the last one
learned), and when the called object is a function handed in as a value (``self.pair_loss`` kept from
an ``__init__`` parameter, ``step_fn`` a parameter): the run tells what the functions passed there return."""
from __future__ import annotations

from project_lint import lint_files

_TRAINER = """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def __init__(self, model, loader, opt):
            self.model, self.loader, self.opt = model, loader, opt

        def fit(self):
            for x, y in self.loader:
                out = self.training_step(x.cuda(), y.cuda())
                self.on_step_end(out)

        def training_step(self, x, y):
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            return {"loss": loss.detach(), "logits": logits.detach(), "y": y}

        def on_step_end(self, out):
            acc = (out["logits"].argmax(1) == out["y"]).float().mean()
            print(float(acc), out["y"].size(0))
"""


def test_a_method_defined_further_down_returns_what_it_returns(tmp_path) -> None:
    assert lint_files(tmp_path, {"trainer.py": _TRAINER}) == [("trainer.py", 24, "SFL105")]


_LOSSES = """
    import torch

    def pairwise_mse(est, ref):
        return (est.unsqueeze(1) - ref.unsqueeze(2)).pow(2).mean(-1)

    def describe(est, ref):
        return "pairwise"
"""

_WRAPPER = """
    import torch
    from torch import nn
    from losses import {loss}

    class PermutationLoss(nn.Module):
        def __init__(self, pair_loss, names):
            super().__init__()
            self.pair_loss = pair_loss
            self.names = names

        def forward(self, est, ref):
            pw = self.pair_loss(est, ref)
            best = pw.mean(-1).argmin(dim=1)
            return [self.names[best[b]] for b in range(est.size(0))]

    def train(model, loader, opt):
        criterion = PermutationLoss({loss}, ["a", "b"])
        for x, y in loader:
            est = model(x.cuda())
            names = criterion(est, y.cuda())
            loss = est.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_a_function_kept_from_a_parameter_returns_what_the_passed_function_returns(tmp_path) -> None:
    found = lint_files(tmp_path, {"losses.py": _LOSSES, "wrapper.py": _WRAPPER.replace("{loss}", "pairwise_mse")})
    assert found == [("wrapper.py", 15, "SFL112")]


def test_a_passed_function_returning_a_host_value_teaches_nothing(tmp_path) -> None:
    found = lint_files(tmp_path, {"losses.py": _LOSSES, "wrapper.py": _WRAPPER.replace("{loss}", "describe")})
    assert found == []


_ENGINE = """
    import math
    from types import SimpleNamespace

    import torch

    class Engine:
        def __init__(self, process_fn):
            self.process_fn = process_fn
            self.state = SimpleNamespace(iteration=0, output=None)

        def run(self, loader):
            for batch in loader:
                self.state.output = self.process_fn(self, batch)
                if not math.isfinite(self.state.output["loss"]):
                    raise RuntimeError("non-finite loss")

    def make_trainer(model, opt):
        def train_step(engine, batch):
            loss = torch.nn.functional.mse_loss(model(batch[0].cuda()), batch[1].cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
            return {{"loss": {returned}}}
        return Engine(train_step)
"""


def test_a_function_handed_to_a_class_of_the_same_file_tells_what_its_calls_return(tmp_path) -> None:
    # `self.state.output` holds what the step function passed to the constructor returns: device tensors
    found = lint_files(tmp_path, {"engine.py": _ENGINE.format(returned="loss.detach()")})
    assert ("engine.py", 15, "SFL105") in found
    assert lint_files(tmp_path, {"engine.py": _ENGINE.format(returned="loss.item()")}) == [("engine.py", 24, "SFL101")]
