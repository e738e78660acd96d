"""Objects a class is built with in another file, and hooks a class runs on itself by name.

``CriticPhase(G, D, opt, stats)`` in the entry script hands ``CriticPhase.__init__`` a ``StatsCollector``: the phase's
``self.stats.add(name, value)`` runs that class's ``add`` (``run_kinds`` maps a constructor call of another file to its
``__init__``, with ``self``). ``self("after_pred")`` inside a learner whose ``__call__`` does ``getattr(cb, event)()``
for each callback runs every callback's ``after_pred`` (``dispatchers``)."""
from __future__ import annotations

import pytest

from syncfree_lint.knowledge.torch_api import looks_like_module

from project_lint import lint_files

_PHASES = """
    import torch

    class StatsCollector:
        def __init__(self):
            self.values = {}

        def add(self, name, value):
            self.values.setdefault(name, []).append(value.item() if torch.is_tensor(value) else value)

    class CriticPhase:
        def __init__(self, critic, opt, stats):
            self.critic, self.opt, self.stats = critic, opt, stats

        def __call__(self, real):
            loss = self.critic(real).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.stats.add("critic", loss.detach())
"""

_ENTRY = """
    import torch
    from phases import CriticPhase, StatsCollector

    def main(critic, loader):
        stats = {stats}
        phase = CriticPhase(critic.cuda(), torch.optim.SGD(critic.parameters(), lr=0.1), stats)
        for real in loader:
            phase(real.cuda())
"""


@pytest.mark.parametrize("stats,found", [("StatsCollector()", True), ("{}", False)])
def test_an_object_handed_to_a_constructor_in_another_file_runs_its_methods(tmp_path, stats, found):
    result = lint_files(tmp_path, {"phases.py": _PHASES, "train.py": _ENTRY.format(stats=stats)})
    assert (("phases.py", 9, "SFL101") in result) is found


_LEARNER = """
    import torch

    class Callback:
        learn = None

    class Learner:
        def __init__(self, model, opt, cbs):
            self.model, self.opt, self.cbs = model, opt, cbs

        def __call__(self, event):
            for cb in self.cbs:
                getattr(cb, event, None)()

        def one_batch(self, x, y):
            self.pred = self.model(x)
            self("after_pred")
            loss = (self.pred - y).pow(2).mean()
            loss.backward()
            self.opt.step()

        def fit(self, loader):
            for x, y in loader:
                self.one_batch(x.cuda(), y.cuda())

    class RankCheck(Callback):
        def __init__(self):
            self.bad = 0

        def after_pred(self):
            p = torch.sigmoid(self.learn.pred.detach())
            if not (p[:, :-1] >= p[:, 1:]).all():
                self.bad += 1

        def after_fit(self):
            p = torch.sigmoid(self.learn.pred.detach())
            if not (p >= 0).all():
                self.bad += 1
"""


def test_a_hook_the_class_fires_on_itself_by_name_runs_each_callbacks_method(tmp_path):
    result = lint_files(tmp_path, {"learner.py": _LEARNER})
    assert ("learner.py", 32, "SFL106") in result  # after_pred: fired per batch
    assert not [r for r in result if r[1] == 37]  # after_fit: never fired


@pytest.mark.parametrize("name,expected", [("args.n_critic", False), ("num_decoder", False), ("self.critic", True),
                                           ("ema_model", True)])
def test_counts_are_not_named_like_models(name, expected):
    assert looks_like_module(name) is expected


_METERS = """
    import torch

    class Smoothed:
        def __init__(self):
            self.values = []

        def update(self, value):
            if isinstance(value, torch.Tensor):
                value = value.item()
            self.values.append(value)

    class Plain:
        def update(self, value):
            pass

    class Trainer:
        def __init__(self, model, opt):
            self.model, self.opt = model, opt
            self.meters = {{"cls": Smoothed(), "dom": {second}()}}

        def step(self, x, y):
            out = {{"cls": self.model(x).mean(), "dom": (self.model(x) - y).abs().mean()}}
            (out["cls"] + out["dom"]).backward()
            self.opt.step()
            for name in ("cls", "dom"):
                self.meters[name].update(out[name])

    def fit(trainer, loader):
        for x, y in loader:
            trainer.step(x.cuda(), y.cuda())
"""


@pytest.mark.parametrize("second,found", [("Smoothed", True), ("Plain", False)])
def test_an_item_of_a_dict_whose_items_are_one_class(tmp_path, second, found):
    """`self.meters[name].update(v)`: any key of a dict kept on `self` whose items are all `Smoothed` is one."""
    result = lint_files(tmp_path, {"meters.py": _METERS.format(second=second)})
    assert (("meters.py", 10, "SFL101") in result) is found
