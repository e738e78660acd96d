"""Fields a class declares with a tensor annotation (``loss: torch.Tensor`` on a dataclass) are what
its instances hold: a function handed such an instance (here a hook from a list kept by a trainer,
in another file) reads a device tensor in ``out.loss``; a field annotated with a host type is not one."""
from __future__ import annotations

from project_lint import lint_files

_HOOKS = """
    import torch

    def log_loss(trainer, out):
        if out.loss > 10:
            trainer.spikes += 1

    def count_tokens(trainer, out):
        trainer.tokens += int(out.ntokens)

    def count_steps(trainer, out):
        trainer.steps += int(out.step)
"""

_TRAIN = """
    from dataclasses import dataclass
    from typing import Optional

    import torch
    from hooks import count_steps, count_tokens, log_loss

    @dataclass
    class StepOutput:
        loss: torch.Tensor
        ntokens: Optional[torch.Tensor]
        step: int

    class Trainer:
        def __init__(self, model, loader, hooks):
            self.model, self.loader, self.hooks = model, loader, hooks
            self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
            self.tokens = self.spikes = self.steps = 0

        def step(self, batch, i):
            x, y = batch
            x, y = x.cuda(), y.cuda()
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            return StepOutput(loss=loss.detach(), ntokens=(y != 0).sum(), step=i)

        def fit(self):
            for i, batch in enumerate(self.loader):
                out = self.step(batch, i)
                for hook in self.hooks:
                    hook(self, out)

    def main(model, loader):
        Trainer(model, loader, [log_loss, count_tokens, count_steps]).fit()
"""


def test_a_hook_reads_the_tensor_fields_of_a_dataclass_it_is_handed(tmp_path) -> None:
    found = lint_files(tmp_path, {"hooks.py": _HOOKS, "train.py": _TRAIN})
    assert found == [("hooks.py", 5, "SFL106"), ("hooks.py", 9, "SFL105")]
