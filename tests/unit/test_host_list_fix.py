"""SFL101's history-list fix (fixes/host_list.py): offered only for a local `name = []` whose reads use
its contents at once, off the step; every other shape is declined with its reason.

The fixed programs themselves are run in tests/integration/test_fix_programs.py.
"""
from __future__ import annotations

import pytest

from syncfree_lint.config import Config
from syncfree_lint.engine import lint_text

HEADER = """\
import json
import torch

device = "cuda"
model = torch.nn.Linear(3, 2).to(device)
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader, keep):
    history = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
"""

OFFERED = {
    "json after the loop": "    json.dumps(history)\n",
    "last item under a guard": "        if len(history) % 10 == 0:\n            print(history[-1])\n",
    "returned with another value": "    return history, len(history)\n",
}

DECLINED = {
    "a method of the list": ("    history.clear()\n", "a method of the list is called (`.clear`)"),
    "handed to another function": ("    keep(history)\n", "may be kept or changed"),
    "an item assigned": ("    history[0] = 0.0\n", "an item of the list is assigned"),
    "another binding": ("    history = [0.0]\n", "has another binding"),
    "truth value": ("    if history:\n        print('trained')\n", "may be kept or changed"),
    "read every step": ("        print(sum(history))\n", "a read stays at step frequency"),
}


def finding(tail: str):
    [found] = [d for d in lint_text("train.py", HEADER + tail, Config(select=("SFL101",))) if d.line == 17]
    return found


@pytest.mark.parametrize("name", sorted(OFFERED))
def test_offered(name):
    found = finding(OFFERED[name])
    assert found.fix is not None and found.fix.applicability == "unsafe", found.fix_declined
    texts = [edit.content for edit in found.fix.edits]
    assert texts[0] == "detach"
    assert all(t.startswith(("(torch.stack(history).flatten().tolist() if history else [])", "history[-1].item()"))
               for t in texts[1:]), texts


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_declined(name):
    tail, reason = DECLINED[name]
    found = finding(tail)
    assert found.fix is None and found.fix_declined is not None and reason in found.fix_declined, found.fix_declined


def test_torch_imported_under_another_name():
    """`import torch as th`: the reads are rebuilt with the name the module has in the file."""
    text = HEADER.replace("import torch\n", "import torch as th\n").replace("torch.nn", "th.nn").replace("torch.optim", "th.optim")
    [found] = [d for d in lint_text("train.py", text + "    json.dumps(history)\n", Config(select=("SFL101",)))
               if d.line == 17]
    assert found.fix is not None, found.fix_declined
    assert [edit.content for edit in found.fix.edits][1] == "(th.stack(history).flatten().tolist() if history else [])"
