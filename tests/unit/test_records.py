"""A list of dicts of device tensors (detection ``targets``: ``[{k: v.to(device) ...} for t in targets]``,
or annotated ``List[Dict[str, Tensor]]``) is a sequence of records: each element is a dict of
device tensors, so ``for t in targets: t["boxes"]`` and ``targets[0]["labels"]`` are device tensors,
also in the function of another file the list is handed to; the list's truth value and length are
host values, and a list of dicts of host values is not one."""
from __future__ import annotations

from project_lint import lint_files

_MODEL = """
    from typing import Dict, List

    import torch
    from torch import nn

    class Detector(nn.Module):
        def forward(self, images, targets):
            if not targets:
                raise ValueError("no targets")
            for t in targets:
                degenerate = t["boxes"][:, 2:] <= t["boxes"][:, :2]
                if degenerate.any():
                    raise ValueError("degenerate box")
            first = targets[0]["labels"]
            return images.mean() + len(targets) + first.float().sum()

    def count_labels(records: List[Dict[str, torch.Tensor]]) -> int:
        return sum(int(r["labels"].numel()) + int(r["labels"].max()) for r in records)
"""

_TRAIN = """
    import torch
    from model import Detector, count_labels

    def train(loader, device):
        model = Detector().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for images, targets in loader:
            images = images.to(device)
            targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
            loss = model(images, targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
            names = [{"name": str(i)} for i in range(3)]
            for n in names:
                if n["name"]:
                    print(n["name"])
"""


def test_each_record_of_a_list_of_device_dicts_holds_device_tensors(tmp_path) -> None:
    found = lint_files(tmp_path, {"model.py": _MODEL, "train.py": _TRAIN})
    assert found == [("model.py", 13, "SFL106")]


def test_an_annotated_list_of_tensor_dicts_is_records(tmp_path) -> None:
    caller = _TRAIN.replace("loss = model(images, targets)", "loss = model(images, targets) + count_labels(targets)")
    found = lint_files(tmp_path, {"model.py": _MODEL, "train.py": caller})
    assert ("model.py", 19, "SFL105") in found and ("model.py", 13, "SFL106") in found
    assert not [f for f in found if f[1] in (9, 16)]  # `if not targets`, `len(targets)`: host values
