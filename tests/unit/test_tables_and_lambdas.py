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


_CRITERION = """
    import torch

    class Criterion:
        def count_error(self, logits, targets):
            lengths = torch.as_tensor([len(t) for t in targets], device=logits.device)
            return (logits.argmax(-1).sum(1) - lengths).abs().float().mean()

        def ce(self, logits, targets):
            return logits.logsumexp(-1).mean()

        def get_loss(self, name, logits, targets):
            {lookup}

        def __call__(self, logits, targets):
            return sum(self.get_loss(name, logits, targets) for name in ("ce", "count"))

    def train(model, loader, opt):
        criterion = Criterion()
        for x, targets in loader:
            loss = criterion(model(x.cuda()), targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_a_dict_of_bound_methods_indexed_and_called_runs_each(tmp_path) -> None:
    """``loss_map[name](...)`` of ``loss_map = {"count": self.count_error, ...}``, or the display indexed in place,
    may run any method it holds: the count's host list copied to the device runs every step."""
    named = 'loss_map = {"ce": self.ce, "count": self.count_error}\n            return loss_map[name](logits, targets)'
    inline = 'return {"ce": self.ce, "count": self.count_error}[name](logits, targets)'
    for lookup in (named, inline):
        found = lint_files(tmp_path, {"train.py": _CRITERION.format(lookup=lookup)})
        assert found == [("train.py", 6, "SFL401")], lookup
    direct = 'return self.ce(logits, targets)'
    assert lint_files(tmp_path, {"train.py": _CRITERION.format(lookup=direct)}) == []


_REGISTRY = """
    import torch

    METRICS = {{}}

    def metric(name):
        def register(fn):
            METRICS[name] = fn
            return fn
        return register

    {decorator}
    def coverage(pred, target):
        return pred.argmin(-1).unique().numel() / pred.shape[1]

    def train(model, loader, opt):
        for x, y in loader:
            pred = model(x.cuda())
            loss = (pred - y.cuda()).pow(2).mean()
            loss.backward()
            opt.step()
            with torch.no_grad():
                stats = {{name: fn(pred, y) for name, fn in METRICS.items()}}
"""


def test_a_registry_filled_by_a_decorator_runs_each_registered_function(tmp_path) -> None:
    """``@metric("coverage")`` stores the function in ``METRICS``; the step's loop over ``METRICS.items()`` runs it."""
    found = lint_files(tmp_path, {"train.py": _REGISTRY.format(decorator='@metric("coverage")')})
    assert [(line, code) for _, line, code in found] == [(14, "SFL203")]
    assert lint_files(tmp_path, {"train.py": _REGISTRY.format(decorator="")}) == []
