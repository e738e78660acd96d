"""A file walked again with what other files teach it starts from where its analysis settled
(``arguments.analyse``'s ``start``): the same findings as a walk from nothing, in fewer walks."""
from __future__ import annotations

from typing import List

import pytest

from project_lint import lint_files
from syncfree_lint import engine
from syncfree_lint.analysis.arguments import analyse
from test_held_objects import _TOWERS, _TRAIN

# the loop's file seeds `show` itself (two walks alone), then learns what `accuracy` returns (walked again)
_HELPERS = """
    import torch

    def accuracy(model, x, y):
        return (model(x).argmax(1) == y).float().mean()
"""

_LOOP = """
    import torch
    from helpers import accuracy

    def show(v):
        if v > 0:
            print("positive")

    def fit(model, loader, opt):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss = model(x).sum()
            loss.backward()
            opt.step()
            show(loss.detach())
            acc = accuracy(model, x, y)
            print(float(acc))
"""

PROGRAMS = [{"towers.py": _TOWERS, "train.py": _TRAIN}, {"helpers.py": _HELPERS, "train.py": _LOOP}]


def _walks(monkeypatch, tmp_path, files, from_scratch: bool):
    counts: List[int] = []

    def counting(walk, start=None):
        counts.append(0)

        def counted(*args):
            counts[-1] += 1
            return walk(*args)
        return analyse(counted, None if from_scratch else start)

    tmp_path.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(engine, "analyse", counting)
    return lint_files(tmp_path, files), sum(counts)


@pytest.mark.parametrize("files", PROGRAMS, ids=["held-objects", "taught-returns"])
def test_same_findings_from_where_it_settled_as_from_nothing(monkeypatch, tmp_path, files):
    scratch, scratch_walks = _walks(monkeypatch, tmp_path / "scratch", files, from_scratch=True)
    settled, settled_walks = _walks(monkeypatch, tmp_path / "settled", files, from_scratch=False)
    assert settled == scratch and scratch  # each program reports something across files
    assert settled_walks <= scratch_walks


def test_a_file_taught_a_return_is_walked_again_in_fewer_walks(monkeypatch, tmp_path):
    found, walks = _walks(monkeypatch, tmp_path / "a", PROGRAMS[1], from_scratch=False)
    _, scratch_walks = _walks(monkeypatch, tmp_path / "b", PROGRAMS[1], from_scratch=True)
    assert ("train.py", 6, "SFL106") in found and ("train.py", 17, "SFL105") in found
    assert walks < scratch_walks
