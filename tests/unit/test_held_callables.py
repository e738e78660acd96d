"""Return kinds through a function held as a value: ``build = make_pinned if pin else make`` and
``step = torch.compile(train_step)`` return what the function they hold returns (both
alternatives must agree), in one file and across files."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from syncfree_lint import engine
from syncfree_lint.config import Config

MAKERS = """
import torch

def make(rows, device):
    x = torch.stack(rows).to(device)
    return x, x.sum(dim=1)

def make_pinned(rows, device):
    x = torch.stack(rows).pin_memory().to(device, non_blocking=True)
    return x, x.sum(dim=1)

def make_host(rows, device):
    return rows, [len(r) for r in rows]
"""

LOOP = """
def train(model, batches, optimizer, device, pin):
    build = {build}
    for rows in batches:
        x, widths = build(rows, device)
        x = x[:, :widths.max()]
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
"""


def _codes(source: str) -> List[Tuple[int, str]]:
    return sorted((d.line, d.code) for d in engine.lint_text("train.py", source, Config()) if d.code.startswith("SFL1"))


SLICE_LINE = MAKERS.count("\n") + 6  # `x = x[:, :widths.max()]`


@pytest.mark.parametrize("build", [
    "make_pinned if pin else make",
    "make",
    "torch.compile(make)",
])
def test_the_held_function_returns_a_device_tensor(build: str) -> None:
    found = _codes(MAKERS + textwrap.dedent(LOOP.format(build=build)))
    assert (SLICE_LINE, "SFL112") in found


def test_alternatives_that_disagree_give_no_kind() -> None:
    """``make_host`` returns a list: ``widths.max()`` may be a Python call, so nothing is said."""
    found = _codes(MAKERS + textwrap.dedent(LOOP.format(build="make_host if pin else make")))
    assert all(line != SLICE_LINE for line, _ in found)


def test_imported_alternatives_across_files(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '0'\n")
    (tmp_path / "batching.py").write_text(MAKERS)
    loop = "import torch\nfrom batching import make, make_pinned\n" + textwrap.dedent(
        LOOP.format(build="make_pinned if pin else make"))
    (tmp_path / "train.py").write_text(loop)
    slice_line = loop.splitlines().index("        x = x[:, :widths.max()]") + 1
    whole = engine.run([str(tmp_path)], Config())
    alone = engine.run([str(tmp_path / "train.py")], Config(), project=True)
    for result in (whole, alone):
        assert ("train.py", slice_line, "SFL112") in [(Path(d.path).name, d.line, d.code) for d in result.diagnostics]
