"""A comprehension over a data loader is a loop over batches: its element runs once per batch
(``outputs = [task.evaluation_step(b) for b in loader]``), and what it calls is reached per step; a
comprehension over anything else is not a step loop."""
from __future__ import annotations

from project_lint import lint_files

_TASK = """
    import torch

    class Task:
        def __init__(self, model):
            self.model = model

        def evaluation_step(self, batch):
            x, y = batch
            correct = (self.model(x).argmax(1) == y).sum()
            return correct.item()
"""

_LOOP = """
    import torch
    from task import Task

    @torch.no_grad()
    def evaluate(task, {iterable}, device):
        outputs = [task.evaluation_step((x.to(device), y.to(device))) for x, y in {iterable}]
        return sum(outputs)

    def main(model, {iterable}):
        return evaluate(Task(model), {iterable}, "cuda")
"""


def test_a_list_comprehension_over_a_loader_runs_its_element_per_batch(tmp_path) -> None:
    found = lint_files(tmp_path, {"task.py": _TASK, "loop.py": _LOOP.format(iterable="val_loader")})
    assert found == [("task.py", 11, "SFL101")]


def test_a_comprehension_over_other_values_is_not_a_step_loop(tmp_path) -> None:
    found = lint_files(tmp_path, {"task.py": _TASK, "loop.py": _LOOP.format(iterable="pairs")})
    assert found == []


def test_a_generator_over_a_loader_in_a_call(tmp_path) -> None:
    source = """
        import torch

        def mean_loss(model, criterion, loader):
            with torch.no_grad():
                total = sum(criterion(model(x.cuda()), y.cuda()).item() for x, y in loader)
            return total / len(loader)
    """
    assert lint_files(tmp_path, {"evaluate.py": source}) == [("evaluate.py", 6, "SFL101")]
