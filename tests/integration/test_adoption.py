"""Adopting the linter on an existing repository: baselines, `--add-noqa`, stdin, and the small
habits of ruff (cache `.gitignore`, misspelt config section, `--show-source`, fixable counts).

Each test runs the real command line in a subprocess on a small project written here."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TRAIN = textwrap.dedent(
    """\
    import torch

    model = torch.nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = torch.nn.CrossEntropyLoss()


    def train(loader):
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item()
            print(loss.item())
        print(f"loss {total:.4f}")
    """
)


def lint(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "syncfree_lint", "--no-cache", *args], cwd=root, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "clean.py").write_text("import torch\n\nx = torch.zeros(3)\n")
    return tmp_path


def test_baseline_reports_only_new_findings_and_counts_stale_ones(project: Path) -> None:
    written = lint(project, "--write-baseline", "baseline.json", ".")
    assert written.returncode == 0, written.stderr
    entries = json.loads((project / "baseline.json").read_text())["entries"]
    assert {e["statement"] for e in entries} == {"total += loss.item()", "print(loss.item())"}
    assert all("line" not in e for e in entries)  # keyed by scope and text, not by line

    clean = lint(project, "--baseline", "baseline.json", ".")
    assert clean.returncode == 0 and clean.stdout == "", clean.stdout

    # lines inserted above move every finding; one new hazard is the only report
    moved = TRAIN.replace("def train(loader):\n", "# a comment\n\n\ndef train(loader):\n")
    moved = moved.replace("        print(loss.item())\n", "        print(loss.item())\n        seen = loss.cpu()\n")
    (project / "train.py").write_text(moved)
    new = lint(project, "--baseline", "baseline.json", ".")
    assert new.returncode == 1
    assert [line.split(": ")[1].split()[0] for line in new.stdout.splitlines()] == ["SFL102"], new.stdout

    # a recorded hazard that went away is stale: counted on stderr, an error only when strict
    (project / "train.py").write_text(TRAIN.replace("        print(loss.item())\n", ""))
    stale = lint(project, "--baseline", "baseline.json", ".")
    assert stale.returncode == 0 and "1 finding" in stale.stderr, stale.stderr
    strict = lint(project, "--baseline", "baseline.json", "--baseline-strict", ".")
    assert strict.returncode == 1


def test_sarif_carries_a_stable_fingerprint(project: Path) -> None:
    first = json.loads(lint(project, "--output-format", "sarif", ".").stdout)
    (project / "train.py").write_text("# moved down\n" + TRAIN)
    second = json.loads(lint(project, "--output-format", "sarif", ".").stdout)

    def prints(sarif):
        return sorted(json.dumps(r["partialFingerprints"], sort_keys=True) for r in sarif["runs"][0]["results"])

    assert prints(first) == prints(second) and len(prints(first)) == 2


def test_add_noqa_round_trip(project: Path) -> None:
    (project / "train.py").write_text(TRAIN.replace("total += loss.item()", "total += loss.item()  # noqa: E501"))
    clean_mtime = os.stat(project / "clean.py").st_mtime_ns
    added = lint(project, "--add-noqa", ".")
    assert added.returncode == 0, added.stderr
    text = (project / "train.py").read_text()
    assert "total += loss.item()  # noqa: E501, SFL101\n" in text
    assert "print(loss.item())  # noqa: SFL101\n" in text
    assert lint(project, ".").returncode == 0  # re-run clean
    again = lint(project, "--add-noqa", ".")
    assert again.returncode == 0 and (project / "train.py").read_text() == text  # second run changes nothing
    assert os.stat(project / "clean.py").st_mtime_ns == clean_mtime  # untouched


def test_stdin_dash_and_fix_to_stdout(project: Path) -> None:
    found = lint(project, "-", stdin=TRAIN)
    assert found.returncode == 1 and found.stdout.startswith("-:15:"), found.stdout
    named = lint(project, "--stdin-filename", "train.py", stdin=TRAIN)
    assert named.stdout.startswith("train.py:15:")
    fixed = lint(project, "--fix", "--unsafe-fixes", "--stdin-filename", "train.py", stdin=TRAIN)
    assert "total += loss.detach().double()" in fixed.stdout
    assert "SFL101" not in fixed.stdout  # only the source, for editors' fix-on-save
    assert (project / "train.py").read_text() == TRAIN  # nothing written


def test_cache_folder_ignores_itself(project: Path) -> None:
    subprocess.run([sys.executable, "-m", "syncfree_lint", "."], cwd=project, capture_output=True, timeout=120)
    assert (project / ".syncfree_cache" / ".gitignore").read_text().strip().endswith("*")


@pytest.mark.parametrize("section", ["syncfree_lint", "syncfree", "syncfreelint"])
def test_misspelt_section_names_the_right_one(project: Path, section: str) -> None:
    (project / "pyproject.toml").write_text(f"[tool.{section}]\nselect = ['SFL102']\n")
    result = lint(project, ".")
    assert "[tool.syncfree-lint]" in result.stderr and f"[tool.{section}]" in result.stderr


def test_show_source_and_fixable_statistics(project: Path) -> None:
    shown = lint(project, "--show-source", "train.py").stdout.splitlines()
    assert shown[1] == "        total += loss.item()" and shown[2] == " " * 17 + "^"
    stats = lint(project, "--statistics", "train.py").stdout
    assert "2" in stats and "SFL101" in stats and "fix" in stats
