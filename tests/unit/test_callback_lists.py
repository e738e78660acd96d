"""Hooks called on each object of a list handed in (``for cb in callbacks: cb.on_step_end(state, out)``):
the list is the protocol, so every method of that name in the project runs there, with the arguments'
kinds, whether or not a base class declares it; a hook on a lone object of unknown class still needs
the declaration (``analysis.hooks``)."""
from __future__ import annotations

from project_lint import lint_files

_CALLBACKS = """
    class MarginStats:
        def __init__(self):
            self.margins = []

        def on_step_end(self, state, out):
            self.margins.extend(out["margin"].cpu().tolist())

    class Alarm:
        def on_step_end(self, state, out):
            if out["margin"].mean() < 0:
                print("negative margin")
"""

_LOOP = """
    import torch

    def fit(model, opt, loader, callbacks=(), monitor=None):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            margin = model(x) - y
            loss = margin.pow(2).mean()
            loss.backward()
            opt.step()
            {call}

    def main(model, opt, loader):
        from callbacks import MarginStats, Alarm
        fit(model, opt, loader, callbacks=[MarginStats(), Alarm()], monitor=Alarm())
"""


def test_each_callback_of_a_list_runs_its_hook_per_step(tmp_path) -> None:
    call = 'for cb in callbacks:\n                cb.on_step_end(None, {"margin": margin.detach()})'
    found = lint_files(tmp_path, {"callbacks.py": _CALLBACKS, "loop.py": _LOOP.format(call=call)})
    assert found == [("callbacks.py", 7, "SFL102"), ("callbacks.py", 11, "SFL106")]


def test_a_hook_on_a_lone_object_of_unknown_class_needs_a_declaration(tmp_path) -> None:
    call = 'monitor.on_step_end(None, {"margin": margin.detach()})'
    found = lint_files(tmp_path, {"callbacks.py": _CALLBACKS, "loop.py": _LOOP.format(call=call)})
    assert found == []
