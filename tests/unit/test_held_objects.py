"""An object kept on another object is called through it: ``self.model.users(x, hist)`` where the model's
class keeps ``self.users = UserTower(...)`` runs ``UserTower.forward`` with those arguments, in the same file
or across files, whether the model was built inline (``Trainer(TwoTower().to(dev))``) or in a variable. A
method of that name on the outer class wins over the attribute; host arguments stay host values."""
from __future__ import annotations

from project_lint import lint_files

_TOWERS = """
    import torch
    from torch import nn

    class UserTower(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, ids, hist):
            if (hist < 0).any():
                raise ValueError("negative id")
            return self.lin(ids)

    class Scorer:
        def __call__(self, u, hist):
            return int(hist.max())

    class TwoTower(nn.Module):
        def __init__(self):
            super().__init__()
            self.users = UserTower()
            self.score = Scorer()

        def forward(self, ids, hist):
            return self.users(ids, hist)

        def rank(self, u, hist):
            return hist.sum()
"""

_TRAIN = """
    import torch
    from towers import TwoTower

    class Trainer:
        def __init__(self, model, device):
            self.model, self.device = model, device

        def train_step(self, batch):
            batch = {k: v.to(self.device) for k, v in batch.items()}
            u = self.model.users(batch["ids"], batch["hist"])
            top = self.model.score(u, batch["hist"])
            return u.sum() + top

    def main(loader):
        device = torch.device("cuda")
        trainer = Trainer(TwoTower().to(device), device)
        for batch in loader:
            trainer.train_step(batch)
"""


def test_an_object_kept_on_a_model_runs_with_the_arguments_given_through_it(tmp_path) -> None:
    found = lint_files(tmp_path, {"towers.py": _TOWERS, "train.py": _TRAIN})
    assert ("towers.py", 11, "SFL106") in found  # UserTower.forward: `hist` is the batch's device tensor
    assert ("towers.py", 17, "SFL105") in found  # Scorer.__call__ reached as `self.model.score(...)`


_ONE_FILE = """
    import torch
    from torch import nn

    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, ids, hist):
            if (hist < 0).any():
                raise ValueError("negative id")
            return self.lin(ids)

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.users = Tower()
            self.items = Tower()

        def items(self, ids, hist):
            return ids

    def train(loader):
        device = torch.device("cuda")
        model = Pair().to(device)
        for ids, hist in loader:
            ids, hist = ids.to(device), hist.to(device)
            model.users(ids, hist).sum().backward()
            model.items(ids, hist)
"""


def test_in_one_file_and_a_method_of_the_same_name_wins(tmp_path) -> None:
    found = lint_files(tmp_path, {"train.py": _ONE_FILE})
    assert found == [("train.py", 11, "SFL106")]


def test_host_arguments_given_through_the_holder_stay_host_values(tmp_path) -> None:
    text = _ONE_FILE.replace("ids, hist = ids.to(device), hist.to(device)", "hist = torch.zeros(8, dtype=torch.long)")
    assert lint_files(tmp_path, {"train.py": text}) == []


_KEYED = """
    import torch

    class Throughput:
        def update(self, n):
            self.tokens = int(n)

    class Ema:
        def update(self, value):
            self.value = value.detach()

    class Trainer:
        def __init__(self, model):
            self.model = model
            self.meters = {"tput": Throughput(), "loss": Ema()}

        def fit(self, loader):
            local = {"tput": Throughput(), "loss": Ema()}
            for x, mask in loader:
                x, mask = x.cuda(), mask.cuda()
                loss = self.model(x).mean()
                loss.backward()
                self.meters["loss"].update(loss)
                self.meters["tput"].update(mask.sum())
                local["tput"].update(mask.sum())
"""


def test_a_dict_of_objects_built_with_constant_keys_runs_each_key_s_class(tmp_path) -> None:
    """``meters["tput"].update(n)`` of ``{"tput": Throughput(), "loss": Ema()}``: Throughput's update, with the
    device count (the dict's classes differ, so no one class stands for all its values)."""
    assert lint_files(tmp_path, {"train.py": _KEYED}) == [("train.py", 6, "SFL105")]
    only_loss = _KEYED.replace('self.meters["tput"].update(mask.sum())', "pass").replace(
        'local["tput"].update(mask.sum())', "pass")
    assert lint_files(tmp_path, {"train.py": only_loss}) == []
