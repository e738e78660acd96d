"""Three shapes of code that runs once per step without a direct call naming it:

- a class body's tuple of functions (``PHASES = (forward, check)``) handed on as ``self.PHASES`` or looped over
  directly: each function runs where the tuple's elements are called;
- a base class in one file whose loop calls ``self.on_step_end(out)``: a subclass in another file overrides it, and
  the override runs per step;
- an evaluation loop over ``range(n)`` that draws each batch with ``next(batches)`` and runs the model: one
  iteration per batch, as a loop over a loader (a range loop that builds its own inputs is still not one).
"""
from __future__ import annotations

from project_lint import lint_files

_PHASES = """
    import torch

    def phase_forward(trainer, st):
        st["x"] = trainer.model(st["b"])

    def phase_check(trainer, st):
        if torch.isnan(st["x"]).any():
            raise FloatingPointError("nan")

    def phase_report(trainer, st):
        trainer.seen += 1

    class Trainer:
        TRAIN = (phase_forward, phase_check)
        REPORT = (phase_report,)

        def __init__(self, model):
            self.model, self.seen = model, 0

        def run(self, phases, batch):
            st = {"b": batch.cuda()}
            for phase in phases:
                phase(self, st)

        def fit(self, loader):
            for batch in loader:
                self.run(self.TRAIN, batch)
"""


def test_a_class_body_tuple_of_functions_handed_on_as_self_attribute(tmp_path) -> None:
    assert lint_files(tmp_path, {"train.py": _PHASES}) == [("train.py", 8, "SFL106")]


def test_a_class_body_tuple_of_functions_looped_over_directly(tmp_path) -> None:
    text = _PHASES.replace("self.run(self.TRAIN, batch)", "st = {'b': batch.cuda()}\n"
                           "                for phase in self.TRAIN:\n"
                           "                    phase(self, st)")
    assert lint_files(tmp_path, {"train.py": text}) == [("train.py", 8, "SFL106")]


def test_a_tuple_the_loop_never_runs_adds_nothing(tmp_path) -> None:
    text = _PHASES.replace("self.run(self.TRAIN, batch)", "self.run(self.REPORT, batch)")
    assert lint_files(tmp_path, {"train.py": text}) == []


_BASE = """
    import torch

    class BaseTrainer:
        def __init__(self, model, optimizer):
            self.model, self.optimizer = model, optimizer

        def train_step(self, batch):
            raise NotImplementedError

        def on_step_end(self, outputs):
            pass

        def fit(self, loader):
            for batch in loader:
                outputs = self.train_step(batch)
                self.on_step_end(outputs)
"""

_SUB = """
    import torch
    from base import BaseTrainer

    class Trainer(BaseTrainer):
        def train_step(self, batch):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.model(x.cuda()), y.cuda())
            loss.backward()
            self.optimizer.step()
            return {"loss": loss.detach()}

        def on_step_end(self, outputs):
            self.history.append(outputs["loss"].item())

        def on_epoch_end(self, outputs):
            print(outputs["loss"].item())
"""


def test_an_override_in_another_file_runs_where_the_base_calls_it(tmp_path) -> None:
    assert lint_files(tmp_path, {"base.py": _BASE, "train.py": _SUB}) == [("train.py", 14, "SFL101")]


_EVAL = """
    import torch

    class Evaluator:
        def __init__(self, model):
            self.model = model

        @torch.no_grad()
        def evaluate(self, batches, n_batches):
            losses = []
            for _ in range(n_batches):
                batch = next(batches)
                logits = self.model(batch["x"])
                losses.append(logits.mean().cpu())
            return losses

        @torch.no_grad()
        def per_scale(self, x, scales):
            for s in range(scales):
                dtype = next(iter(self.model.parameters())).dtype
                self.model(x.to(dtype)).cpu()

        @torch.no_grad()
        def warm_up(self, n):
            for _ in range(n):
                x = torch.randn(8, 4, device="cuda")
                self.model(x).cpu()
"""


def test_a_range_loop_that_draws_each_batch_with_next_is_an_evaluation_loop(tmp_path) -> None:
    assert lint_files(tmp_path, {"evaluate.py": _EVAL}) == [("evaluate.py", 14, "SFL102")]
