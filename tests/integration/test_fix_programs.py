"""Fixed programs run and do the same, with fewer host syncs: one runnable fixture per fix pattern
and per decline reason, in fixtures/fix_programs/.

Each fixture says on its second line what the fixer must do: ``# fix: fixed`` or ``# fix: declined
<reason>`` (the reason as ``--show-fixes`` prints it). It is copied, fixed with ``--fix
--unsafe-fixes`` (plus the opt-in codes of a ``# select:`` line), and both versions run in their own
process (fix_program_runner.py) on the sync guard's CPU stand-in accelerator: every printed line
and the returned value, with its types, dtypes, devices, shapes and ``requires_grad``, must be
identical; the host syncs recorded per step must go down for a fixed program and never go up.
"""
from __future__ import annotations

import json
from collections import Counter
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "fixtures" / "fix_programs").glob("*.py"))
RUNNER = Path(__file__).with_name("fix_program_runner.py")
_EXPECT = re.compile(r"^# fix: (fixed|declined (.+))$", re.M)
_SELECT = re.compile(r"^# select: ([A-Z0-9, ]+)$", re.M)


def expectation(text: str):
    match = _EXPECT.search(text)
    assert match, "a fix program says `# fix: fixed` or `# fix: declined <reason>`"
    return match.group(1) == "fixed", match.group(2)


def lint_args(text: str):
    select = _SELECT.search(text)
    return ["--extend-select", select.group(1).replace(" ", "")] if select else []


def run_program(path: Path) -> dict:
    proc = subprocess.run([sys.executable, str(RUNNER), str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_every_new_fix_has_programs():
    names = {p.stem for p in PROGRAMS}
    for prefix in ("sfl401_scalars", "sfl401_declined", "sfl402_pinned", "sfl402_declined", "sfl101_history",
                   "sfl101_history_declined", "sfl101_meter_declined", "sfl101_meter_local", "sfl101_meter_property", "sfl403_factories", "sfl403_declined"):
        assert any(name.startswith(prefix) for name in names), prefix


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_fixed_program_does_the_same_with_fewer_syncs(program: Path, tmp_path: Path):
    text = program.read_text(encoding="utf-8")
    fixed_expected, reason = expectation(text)
    original, fixed = tmp_path / "original" / program.name, tmp_path / "fixed" / program.name
    for copy in (original, fixed):
        copy.parent.mkdir()
        shutil.copyfile(program, copy)
    proc = subprocess.run(
        [sys.executable, "-m", "syncfree_lint", "--no-cache", "-j", "1", "--no-project", *lint_args(text),
         "--fix", "--unsafe-fixes", "--show-fixes", str(fixed)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    changed = fixed.read_text(encoding="utf-8") != text
    before = run_program(original)
    if not fixed_expected:
        assert not changed, "a declined program was changed"
        assert reason in proc.stdout, f"--show-fixes does not give the reason {reason!r}:\n{proc.stdout}"
        assert len(before["syncs"]) >= before["steps"], "the declined site should still sync every step"
        return
    assert changed, f"nothing was fixed:\n{proc.stdout}"
    after = run_program(fixed)
    assert after["printed"] == before["printed"]
    assert after["result"] == before["result"]
    steps = before["steps"]
    assert len(before["syncs"]) >= steps, f"the original should sync every step: {before['syncs']}"
    assert len(after["syncs"]) < len(before["syncs"]), (before["syncs"], after["syncs"])
    # a read the fix moved may sync at a log interval or after the loop, never once per step
    per_line = Counter(line for line, _ in after["syncs"])
    was = Counter(line for line, _ in before["syncs"])
    every_step = {line: count for line, count in per_line.items() if count >= steps and count > was[line]}
    assert not every_step, f"lines that now sync every step: {every_step}"
