"""A function that calls, on each callback of a list, the method a parameter names
(``def _fire(self, hook, *args): for cb in self.callbacks: getattr(cb, hook)(self, *args)``) runs that
hook of every callback when a step calls it with the hook's name (``self._fire("on_batch_end", logs)``),
with the arguments it forwards; a name that is not a hook's, or not a string, runs nothing known."""
from __future__ import annotations

from project_lint import lint_files

_CALLBACKS = """
    class Callback:
        def on_batch_end(self, trainer, logs):
            pass

    class History(Callback):
        def __init__(self):
            self.losses = []

        def on_batch_end(self, trainer, logs):
            self.losses.append(float(logs["loss"]))
"""

_TRAINER = """
    import torch
    from callbacks import History

    class Fitter:
        def fit(self, loader):
            for x, y in loader:
                logs = self.train_batch(x.cuda(), y.cuda())
                self._fire({name}, logs)

        def train_batch(self, x, y):
            loss = self.model(x).sub(y).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            return {{"loss": loss.detach()}}

        def _fire(self, hook, *args):
            for cb in self.callbacks:
                getattr(cb, hook)(self, *args)

        def __init__(self, model, opt, callbacks):
            self.model, self.opt, self.callbacks = model, opt, callbacks

    def main(model, opt, loader):
        Fitter(model, opt, [History()]).fit(loader)
"""


def test_a_hook_named_by_a_string_runs_on_each_callback(tmp_path) -> None:
    found = lint_files(tmp_path, {"callbacks.py": _CALLBACKS, "trainer.py": _TRAINER.format(name='"on_batch_end"')})
    assert found == [("callbacks.py", 11, "SFL105")]


def test_a_name_that_is_no_hook_or_no_string_runs_nothing_known(tmp_path) -> None:
    assert lint_files(tmp_path, {"callbacks.py": _CALLBACKS, "trainer.py": _TRAINER.format(name='"batch_end"')}) == []
    assert lint_files(tmp_path, {"callbacks.py": _CALLBACKS, "trainer.py": _TRAINER.format(name="self.event")}) == []


def test_a_method_looked_up_with_a_default_and_kept_in_a_name_runs_too(tmp_path) -> None:
    lookup = _TRAINER.format(name='"on_batch_end"').replace(
        "                getattr(cb, hook)(self, *args)",
        "                fn = getattr(cb, hook, None)\n"
        "                if fn is not None:\n"
        "                    fn(self, *args)")
    assert "fn = getattr(cb, hook, None)" in lookup
    found = lint_files(tmp_path, {"callbacks.py": _CALLBACKS, "trainer.py": lookup})
    assert found == [("callbacks.py", 11, "SFL105")]
    other = lookup.replace("fn = getattr(cb, hook, None)", "fn = getattr(cb, 'name', None)")
    assert lint_files(tmp_path, {"callbacks.py": _CALLBACKS, "trainer.py": other}) == []
