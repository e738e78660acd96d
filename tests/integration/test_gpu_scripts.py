"""The GPU run's scripts work before a GPU is lent: benchmarks/gpu/ runs there once per lent session,
with no chance to debug, so their plumbing is checked here on the CPU.

* ``sync_debug_run.py --device cpu`` runs a fix program (``main(device)``) and a script (``__main__``)
  in their own processes and reports steps, printed lines and the result (nothing warns on the CPU);
* ``sync_debug_table.py`` joins a GPU report with the linter's findings: a line that syncs every step
  with a finding is "both", without one "MISSED", a line that synced only after the loop is "not per
  step", a torchmetrics ``update`` is covered by the finding at the metric's constructor, and a fixed
  program that prints the same with fewer syncs is "fewer syncs, same output".
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "benchmarks" / "gpu"


def test_sync_debug_run_on_the_cpu_reports_steps_output_and_result(tmp_path: Path):
    out = tmp_path / "syncs.json"
    programs = [ROOT / "fixtures" / "fix_programs" / "sfl101_count_int32.py", ROOT / "fixtures" / "trace" / "train_tiny.py"]
    done = subprocess.run([sys.executable, str(GPU / "sync_debug_run.py"), "--device", "cpu", "--jobs", "2",
                           "--out", str(out), *map(str, programs)], capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT / "runtime"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    rows = {Path(row["program"]).name: row for row in json.loads(out.read_text(encoding="utf-8"))}
    program = rows["sfl101_count_int32.py"]
    assert program["error"] is None and program["steps"] == 4
    assert program["printed"] == ["tokens 4294967296"] and program["result"] == {"int": "4294967296"}
    script = rows["train_tiny.py"]
    assert script["error"] is None and script["steps"] > 0 and script["printed"][-1].startswith("mean loss")
    assert program["syncs"] == {} and script["syncs"] == {}  # the CPU has no sync debug mode


def _row(path: Path, steps: int, syncs: dict, first: dict, printed=("x",), result=None) -> dict:
    return {"program": str(path), "steps": steps, "error": None, "printed": list(printed), "result": result,
            "syncs": {f"{path}:{line}": n for line, n in syncs.items()},
            "first_step": {f"{path}:{line}": s for line, s in first.items()}}


def test_sync_debug_table_verdicts(tmp_path: Path):
    loops = ROOT / "fixtures" / "loops"
    plain = loops / "plain_running_loss.py"
    classic = loops / "torchmetrics_classic.py"
    lines = plain.read_text(encoding="utf-8").splitlines()
    item = next(i for i, t in enumerate(lines, 1) if "running_loss += loss.item()" in t)
    classic_lines = classic.read_text(encoding="utf-8").splitlines()
    update = next(i for i, t in enumerate(classic_lines, 1) if "accuracy.update(" in t)
    unflagged = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("model.train()"))
    rows = [
        _row(plain, 24, {item: 24, unflagged: 24, 3: 24}, {item: 0, unflagged: 0, 3: 24}),
        _row(classic, 30, {update: 60}, {update: 0}),
    ]
    report = tmp_path / "sync_debug.json"
    report.write_text(json.dumps(rows), encoding="utf-8")
    done = subprocess.run([sys.executable, str(GPU / "sync_debug_table.py"), str(report)], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    table = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ") and ":" in line}
    assert "both" in table[f"plain_running_loss.py:{item}"]
    assert "MISSED" in table[f"plain_running_loss.py:{unflagged}"]
    assert "not per step" in table["plain_running_loss.py:3"]  # synced only after the last step
    assert "SFL305" in table[f"torchmetrics_classic.py:{update}"] and "both" in table[f"torchmetrics_classic.py:{update}"]
    assert "@init" not in table[f"torchmetrics_classic.py:{update}"]  # reported at the update itself


def test_fix_program_verdicts():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sync_debug_table", GPU / "sync_debug_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    name = "sfl101_count_int32.py"
    original, fixed = ROOT / ".gpuwork" / "original" / name, ROOT / ".gpuwork" / "fixed" / name
    before = _row(original, 4, {17: 8, 22: 4}, {17: 0, 22: 0}, printed=("tokens 4294967296",))
    good = _row(fixed, 4, {17: 8, 23: 1}, {17: 0, 23: 4}, printed=("tokens 4294967296",))
    wrong = _row(fixed, 4, {17: 8, 23: 1}, {17: 0, 23: 4}, printed=("tokens 0",))
    line = next(row for row in table.fixes([before, good]) if row.startswith(name))
    assert line.split()[1:] == ["yes", "12", "9", "2", "1", "fewer", "syncs,", "same", "output"]
    assert "WRONG" in next(row for row in table.fixes([before, wrong]) if row.startswith(name))
