"""python -m syncfree.trace on CUDA (the CUDA back end and --timing): the same tiny script as
tests/runtime/test_trace.py, this time on the GPU."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "fixtures" / "trace" / "train_tiny.py"
LINES = SCRIPT.read_text(encoding="utf-8").splitlines()


def line_of(tag: str) -> int:
    return next(i for i, text in enumerate(LINES, start=1) if text.rstrip().endswith(f"# trace: {tag}"))


def test_trace_on_cuda_with_timing(tmp_path):
    pytest.importorskip("torchmetrics")
    out = tmp_path / "sites.json"
    cmd = [sys.executable, "-m", "syncfree.trace", "--steps", "10", "--warmup", "2", "--timing", "--json", str(out),
           str(SCRIPT), "--steps", "40"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["mode"] == "cuda" and data["steps"] == 10
    per_line: dict = {}
    for site in data["sites"]:
        assert site["wait_ms"] is not None and site["wait_ms"] >= 0
        if site["file"] == str(SCRIPT):
            per_line[site["line"]] = per_line.get(site["line"], 0) + site["per_step"]
    for synced in ("item", "metric", "equal"):
        assert per_line.get(line_of(synced)) == pytest.approx(1.0), (synced, per_line)
    for clean in ("clean-forward", "clean-backward", "clean-step", "never"):
        assert line_of(clean) not in per_line, clean
