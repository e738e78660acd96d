"""Reading a property runs its getter: ``self.model.attention_entropy`` in a step runs a ``.item()`` at the end of
``VQAModel.attention_entropy`` once per step, in this file or another; a plain attribute of the same name, or a
property read only at set-up, runs nothing per step."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_MODEL = """
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self._last = None

        def forward(self, x):
            out = self.fc(x)
            self._last = out.detach()
            return out

        {decorator}
        def spread(self):
            return self._last.std().item()
"""

_TRAIN = """
    import torch
    from model import Net

    class Trainer:
        def __init__(self, opt):
            self.model = Net().cuda()
            self.opt = opt
            self.history = []

        def train_step(self, x):
            loss = self.model(x.cuda()).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.history.append({read})

    def fit(trainer, loader):
        for x in loader:
            trainer.train_step(x)
"""


@pytest.mark.parametrize("decorator, read, expected", [
    ("@property", "self.model.spread", True),
    ("@functools.cached_property", "self.model.spread", True),
    ("", "self.model.spread", False),  # a bound method kept, not called here
    ("@property", "len(self.history)", False),
])
def test_a_property_read_in_a_step_runs_its_getter(tmp_path, decorator, read, expected) -> None:
    model = _MODEL.format(decorator=decorator)
    if "functools" in decorator:
        model = model.replace("import torch", "import functools\n    import torch", 1)
    found = lint_files(tmp_path, {"model.py": model, "train.py": _TRAIN.format(read=read)})
    at_getter = [f for f in found if f[0] == "model.py" and f[2] == "SFL101"]
    assert bool(at_getter) == expected


def test_a_property_of_the_class_itself(tmp_path) -> None:
    found = lint_files(tmp_path, {"loop.py": """
        import torch

        class Loop:
            def __init__(self, model, opt):
                self.model, self.opt, self.losses = model.cuda(), opt, []

            @property
            def last_loss(self):
                return self.losses[-1].item()

            def run(self, loader):
                for x in loader:
                    loss = self.model(x.cuda()).mean()
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
                    self.losses.append(loss.detach())
                    print(self.last_loss)
    """})
    assert ("loop.py", 10, "SFL101") in found


_LAYERS = """
    import torch
    from torch import nn

    class Clusters(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.register_buffer("usage", torch.zeros(k, dtype=torch.long))

        @property
        def n_active(self):
            return int((self.usage > 0).sum())

    class Model(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.cluster = Clusters(k)
"""

_LOOP = """
    import torch
    from layers import Model

    def train(loader, k):
        model = Model(k).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            stats = {"active": model.cluster.n_active}
"""


@pytest.mark.parametrize("same_file", [False, True])
def test_a_property_of_an_object_an_instance_keeps(tmp_path, same_file) -> None:
    """`model.cluster.n_active`: the getter of the class `model` keeps as `cluster`, in another file or this one."""
    if same_file:
        found = lint_files(tmp_path, {"train.py": _LAYERS + _LOOP.replace("from layers import Model", "")})
        assert ("train.py", 12, "SFL105") in found
    else:
        found = lint_files(tmp_path, {"layers.py": _LAYERS, "train.py": _LOOP})
        assert ("layers.py", 12, "SFL105") in found
