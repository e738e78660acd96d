"""`--fix` on the classic torchmetrics loop keeps its results and removes its host syncs.

fixtures/loops/torchmetrics_classic.py is copied and fixed (torchmetrics -> syncfree, the
Python-float step time wrapped in `torch.as_tensor`). Both versions are imported and run:

1. on CPU, the returned metric values agree (rtol 1e-5);
2. on the CPU stand-in accelerator, under `syncfree.guard.no_host_sync(mode="record")`, the
   original records host syncs at each metric update line once per step (NaN check, label
   counting/validation, host-to-device copy of the float), the fixed version records none there.

torchmetrics and lightning_utilities are treated as library code for the guard in this test, so
that a sync inside `metric.update` is reported at the user's update line, not inside torchmetrics.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
import shutil
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
torchmetrics = pytest.importorskip("torchmetrics")

from syncfree import guard  # noqa: E402
from syncfree_lint import cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "fixtures" / "loops" / "torchmetrics_classic.py"

# The update call of each metric and the codes whose sync that line pays for.
UPDATES = {
    "train_loss.update(": ("SFL301", "SFL304"),
    "accuracy.update(": ("SFL305",),
    "precision.update(": ("SFL305",),
    "recall.update(": ("SFL305",),
    "f1.update(": ("SFL305",),
    "step_time.update(": ("SFL301", "SFL303", "SFL304"),
}


def fake_time() -> types.SimpleNamespace:
    """A deterministic `time` module for the script: perf_counter() returns 0.001 * n**2."""
    calls = {"n": 0}

    def perf_counter() -> float:
        calls["n"] += 1
        return 0.001 * calls["n"] ** 2

    return types.SimpleNamespace(perf_counter=perf_counter)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.time = fake_time()
    return module


def update_lines(path: Path) -> dict:
    """{line number: update call text} for the metric updates of `path`."""
    found = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for call in UPDATES:
            if line.strip().startswith(call):
                found[number] = call
    assert sorted(found.values()) == sorted(UPDATES), found
    return found


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("classic")
    original = folder / "classic_original.py"
    fixed = folder / "classic_fixed.py"
    shutil.copyfile(SCRIPT, original)
    shutil.copyfile(SCRIPT, fixed)
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["--no-cache", "--jobs", "1", "--fix", str(fixed)])
    text = fixed.read_text(encoding="utf-8")
    assert "from syncfree import MeanMetric" in text
    assert "torch.as_tensor(time.perf_counter() - t0)" in text
    return load(original, "classic_original"), load(fixed, "classic_fixed"), original, fixed


@pytest.fixture
def torchmetrics_is_library(monkeypatch):
    import lightning_utilities

    extra = tuple(os.path.dirname(m.__file__) + os.sep for m in (torchmetrics, lightning_utilities))
    monkeypatch.setattr(guard, "_LIBS", guard._LIBS + extra)
    guard._is_library.cache_clear()
    yield
    guard._is_library.cache_clear()


def run(module, device, guard_ctx=None) -> dict:
    module.time = fake_time()
    with contextlib.redirect_stdout(io.StringIO()):
        return module.main(device, guard=guard_ctx)


def assert_close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert math.isclose(a[key], b[key], rel_tol=1e-5, abs_tol=1e-7), (key, a[key], b[key])


def test_fixed_script_computes_the_same_values_on_cpu(scripts) -> None:
    original, fixed, _, _ = scripts
    before = run(original, "cpu")
    after = run(fixed, "cpu")
    assert_close(before, after)
    assert before["step_time"] > 0 and 0 < before["accuracy"] < 1


def test_fixed_script_has_no_host_sync_at_metric_updates(scripts, torchmetrics_is_library, monkeypatch) -> None:
    if torch.cuda.is_available():
        monkeypatch.setattr(guard, "accelerator_device", lambda: guard.STAND_IN)
    original, fixed, original_path, fixed_path = scripts
    steps = original.STEPS
    results, events = {}, {}
    for label, module in (("original", original), ("fixed", fixed)):
        with guard.stand_in():
            dev = guard.accelerator_device()
            recorder = guard.no_host_sync(mode="record")
            results[label] = run(module, dev, recorder)
        events[label] = recorder.events
    assert_close(results["original"], results["fixed"])
    assert_close(results["original"], run(original, "cpu"))

    lines = {"original": update_lines(original_path), "fixed": update_lines(fixed_path)}
    per_line = {label: Counter(e.lineno for e in events[label] if Path(e.filename).name == path.name)
                for label, path in (("original", original_path), ("fixed", fixed_path))}
    report = {label: {lines[label][n]: per_line[label][n] for n in lines[label]} for label in lines}
    sys.stderr.write(f"update-line syncs over {steps} steps: {report}\n")

    proven = set()
    for number, call in lines["original"].items():
        assert per_line["original"][number] >= steps, f"original: no sync recorded per step at {call}: {report}"
        proven.update(UPDATES[call])
    for number, call in lines["fixed"].items():
        assert per_line["fixed"][number] == 0, f"fixed: host sync at {call}:\n" + "\n".join(
            str(e) for e in events["fixed"] if e.lineno == number)
    assert proven == {"SFL301", "SFL303", "SFL304", "SFL305"}

    # Nothing new anywhere else: outside the updates the fixed run syncs only where the original
    # does (the batch copy, the guarded log line; the original's accuracy.compute() also syncs).
    outside = lambda label: Counter(  # noqa: E731
        (e.lineno, e.kind) for e in events[label] if e.lineno not in lines[label])
    assert outside("fixed") <= outside("original"), (outside("fixed"), outside("original"))
    assert all(Path(e.filename).name == fixed_path.name for e in events["fixed"]), guard_report(events["fixed"])


def guard_report(events) -> str:
    return "\n".join(str(e) for e in events)
