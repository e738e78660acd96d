"""Callables kept as values: a dispatch table iterated (``for name, fn in METRICS.items(): fn(...)``) runs each of
its functions, a ``partial`` of one included; a lambda bound to a name is a function of that name, so a call of
the name runs its body where the call runs."""
from __future__ import annotations

from project_lint import lint_files

_METRICS = """
    from functools import partial

    def accuracy(logits, labels, ignore=-1):
        return (logits.argmax(-1) == labels).float().mean().item()

    def positive_ratio(logits, labels):
        return (logits > 0).float().mean().item()

    METRICS = {{"acc": {acc}, "pos": positive_ratio}}
"""

_TRAIN = """
    import torch
    from metrics import METRICS

    def train(model, loader, opt):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            logits = model(x)
            loss = logits.sum()
            loss.backward()
            opt.step()
            {use}
"""


def _lint(tmp_path, acc: str, use: str):
    return lint_files(tmp_path, {"metrics.py": _METRICS.format(acc=acc), "train.py": _TRAIN.format(use=use)})


def test_a_table_iterated_by_items_runs_each_function(tmp_path) -> None:
    found = _lint(tmp_path, "accuracy", "stats = {name: fn(logits, y) for name, fn in METRICS.items()}")
    assert found == [("metrics.py", 5, "SFL101"), ("metrics.py", 8, "SFL101")]


def test_a_partial_in_a_table_runs_its_function(tmp_path) -> None:
    found = _lint(tmp_path, "partial(accuracy, ignore=-100)",
                  "stats = [fn(logits, y) for fn in METRICS.values()]")
    assert found == [("metrics.py", 5, "SFL101"), ("metrics.py", 8, "SFL101")]


def test_a_table_not_iterated_nor_called_runs_nothing(tmp_path) -> None:
    assert _lint(tmp_path, "accuracy", "for name in METRICS:\n                print(name)") == []


def test_a_lambda_bound_to_a_name_runs_where_it_is_called(tmp_path) -> None:
    source = """
        import torch

        to_np = lambda x: x.detach().cpu().numpy()
        also = lambda x: x.detach().cpu().numpy()

        def train(model, loader, opt):
            for x, y in loader:
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                history = to_np(loss)
            return also(loss)
    """
    assert lint_files(tmp_path, {"train.py": source}) == [("train.py", 4, "SFL102")]
