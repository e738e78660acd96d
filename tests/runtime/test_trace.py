"""python -m syncfree.trace on fixtures/trace/train_tiny.py, a GPU script run on the CPU stand-in:
per-step counts, the JSON schema, --steps/--warmup, and the --lint join."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from syncfree.guard import SyncEvent  # noqa: E402
from syncfree.trace.steps import StepCounter, StopTrace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "fixtures" / "trace" / "train_tiny.py"
LINES = SCRIPT.read_text(encoding="utf-8").splitlines()


def line_of(tag: str) -> int:
    found = [i for i, text in enumerate(LINES, start=1) if text.rstrip().endswith(f"# trace: {tag}")]
    assert len(found) == 1, tag
    return found[0]


def trace(tmp_path, *args, script_args=()):
    cmd = [sys.executable, "-m", "syncfree.trace", *args, str(SCRIPT), *script_args]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # the stand-in mode, also on a GPU machine
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    return done


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("trace") / "sites.json"
    done = trace(
        None, "--steps", "10", "--warmup", "2", "--json", str(out), "--lint", "--timing",
        script_args=["--steps", "40", "--log-every", "5"],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


def rates(data):
    return {(s["line"], s["kind"]): s["per_step"] for s in data["sites"] if s["file"] == str(SCRIPT)}


def test_json_schema_and_mode(traced):
    _, data = traced
    assert set(data) == {"mode", "steps", "sites"}
    assert data["mode"] == "stand-in" and data["steps"] == 10
    for site in data["sites"]:
        assert set(site) == {"file", "line", "kind", "count", "per_step", "wait_ms", "in_steps"}
        assert site["wait_ms"] is None  # nothing is measured on the stand-in
        assert site["per_step"] == pytest.approx(site["count"] / 10)


def test_per_step_counts(traced):
    _, data = traced
    r = rates(data)
    assert r[(line_of("item"), "item")] == pytest.approx(1.0)
    # torchmetrics' MeanMetric.update reads its NaN check on the host: one sync per update
    assert r[(line_of("metric"), "item")] == pytest.approx(1.0)
    assert r[(line_of("equal"), "item")] == pytest.approx(1.0)
    assert r[(line_of("interval"), "d2h")] == pytest.approx(1 / 5)
    lines = {line for line, _ in r}
    for clean in ("clean-forward", "clean-backward", "clean-step", "never"):
        assert line_of(clean) not in lines, clean
    # set-up (the model moved to the device) happens before the first step: not counted
    assert min(lines) >= line_of("item")


def test_report_table_sorted_with_total(traced):
    stdout, _ = traced
    assert "note: --timing measures the host wait on CUDA only" in stdout
    assert "mode stand-in" in stdout and "10 optimizer steps counted (stopped after --steps)" in stdout
    rows = [line for line in stdout.splitlines() if line.startswith("fixtures/trace/train_tiny.py:")]
    per_step = [float(row.split()[-2]) for row in rows]
    assert per_step == sorted(per_step, reverse=True) and per_step[-1] == pytest.approx(0.2)
    assert "total: 3.20 host syncs per step" in stdout


def test_steps_stops_the_script(traced):
    stdout, _ = traced
    # 1 set-up step + 2 warm-up + 10 counted: the script stops in its 13th iteration (index 12)
    printed = [int(m) for m in re.findall(r"^step (\d+) loss", stdout, flags=re.M)]
    assert printed == [0, 5, 10]
    assert "mean loss" not in stdout  # the code after the loop never ran


def test_lint_join_classifies_each_site(traced):
    stdout, _ = traced
    section = None
    found = {}
    for line in stdout.split("lint join:")[1].splitlines():
        if not line.startswith("  "):
            section = line.split(" (")[0]
            continue
        m = re.match(r"\s+fixtures/trace/train_tiny.py:(\d+): (\S+)", line)
        if m:
            found.setdefault(section, set()).add((int(m.group(1)), m.group(2)))
    assert found["confirmed"] == {(line_of("item"), "SFL101"), (line_of("metric"), "SFL301")}
    # rows of data prepared once are batches (SFL402's domain, off by default), not SFL403
    assert found["not seen"] == {(line_of("never"), "SFL101")}
    assert found["missed by lint"] == {(line_of("equal"), "item")}
    assert found["not per step"] == {(line_of("interval"), "d2h")}


def test_runs_to_the_end_without_steps(tmp_path):
    out = tmp_path / "sites.json"
    done = trace(tmp_path, "--json", str(out), script_args=["--steps", "6", "--log-every", "100"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran to the end" in done.stdout and "mean loss" in done.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["steps"] == 5  # six optimizer steps; the first one closes the set-up
    assert rates(data)[(line_of("item"), "item")] == pytest.approx(1.0)


def test_missing_script_is_a_usage_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "syncfree.trace", str(tmp_path / "nope.py")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "no such script" in done.stderr


class _Events:
    """What StepCounter reads of a guard: its events, cleared at each step."""

    def __init__(self):
        self.events = []

    def clear(self):
        self.events.clear()


def _sync(line):
    return SyncEvent("item", "Tensor.item", "train.py", line)


def test_step_counter_skips_set_up_and_warmup_and_stops():
    guard = _Events()
    counter = StepCounter(guard, warmup=2, steps=3)
    opt = object()
    for step in range(1, 6):
        guard.events.append(_sync(step))  # line = the optimizer step it precedes
        counter._on_step(opt, (), {})
    guard.events.append(_sync(6))
    with pytest.raises(StopTrace):
        counter._on_step(opt, (), {})
    assert counter.counted == 3 and counter.stopped
    assert sorted(line for _, line, _ in counter.counts) == [4, 5, 6]


def test_step_counter_rejects_bad_arguments():
    with pytest.raises(ValueError, match="--warmup"):
        StepCounter(_Events(), warmup=-1)
    with pytest.raises(ValueError, match="--steps"):
        StepCounter(_Events(), steps=0)


def test_cuda_answers_go_to_the_script_not_to_torch():
    from syncfree.trace.cuda_map import CudaOnStandIn

    library = {}
    # a function whose code claims to live inside torch: library code, as torch's own callers are
    exec(compile("def ask():\n    return torch.cuda.is_available()", torch.__file__, "exec"), {"torch": torch}, library)
    truth = torch.cuda.is_available()
    synced = []
    with CudaOnStandIn(lambda: synced.append(1)):
        assert torch.cuda.is_available() is True
        assert library["ask"]() is truth
        x = torch.zeros(2, device="cuda")
        torch.cuda.synchronize()
    assert x.device == torch.device("cpu") and synced == [1]
    assert torch.cuda.is_available() is truth  # restored


def test_the_runtime_never_imports_the_linter():
    code = "import sys, syncfree.trace.cli; assert not {'libcst', 'syncfree_lint'} & set(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


CUDA_CALLS = """
import torch

assert torch.cuda.is_available()
model = torch.nn.Linear(3, 1).cuda()
opt = torch.optim.Adam(model.parameters())
for step in range(8):
    x = torch.randn(2, 3).cuda(non_blocking=True)
    model(x).sum().backward()
    opt.step()
    torch.cuda.synchronize()  # SYNCHRONIZE
    mask = torch.ones(2, dtype=torch.bool, device=torch.device("cuda"))
    x[mask].sum()  # MASK
    if step == 5:
        raise RuntimeError("the script's own error")
"""


def test_cuda_calls_run_on_the_stand_in_and_a_failure_keeps_the_counts(tmp_path):
    script = tmp_path / "cuda_calls.py"
    script.write_text(CUDA_CALLS, encoding="utf-8")
    out = tmp_path / "sites.json"
    done = subprocess.run(
        [sys.executable, "-m", "syncfree.trace", "--json", str(out), str(script)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
    )
    assert done.returncode == 1 and "the script's own error" in done.stderr
    assert "the script failed; counts cover the steps before the error" in done.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    lines = CUDA_CALLS.splitlines()
    by_kind = {s["kind"]: s for s in data["sites"]}
    assert by_kind["synchronize"]["line"] == next(i for i, t in enumerate(lines, 1) if t.endswith("# SYNCHRONIZE"))
    assert by_kind["dynamic-shape"]["line"] == next(i for i, t in enumerate(lines, 1) if t.endswith("# MASK"))
    # six steps ran; the first closes the set-up; the sixth iteration's syncs come after its step
    assert data["steps"] == 5
    assert by_kind["synchronize"]["per_step"] == pytest.approx(1.0)
    assert set(by_kind) == {"synchronize", "dynamic-shape"}  # .cuda(non_blocking=True) is no sync


def test_a_script_without_optimizer_steps_says_so(tmp_path):
    script = tmp_path / "no_steps.py"
    script.write_text("import torch\nprint(torch.ones(2, device='cuda').sum().item())\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "syncfree.trace", str(script)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "never called optimizer.step()" in done.stdout and "0 optimizer steps counted" in done.stdout


def test_join_matches_by_statement_and_sets_construction_rules_aside(tmp_path):
    from syncfree.trace.lint_join import Finding, join
    from syncfree.trace.report import Site

    src = tmp_path / "train.py"
    src.write_text(
        "import torch\n"
        "for step in range(3):\n"
        "    total = (\n"
        "        loss.item()\n"
        "    )\n"
        "    seen = metric.update(loss)\n"
        "    rare = x.cpu()\n",
        encoding="utf-8",
    )
    f = str(src)
    findings = [
        Finding("SFL101", f, 3, "item"),  # the linter points at the statement's first line
        Finding("SFL304", f, 6, "built with NaN checks"),
        Finding("SFL102", f, 7, "cpu"),
    ]
    sites = (
        Site(f, 4, "item", 10, 1.0, None),  # the trace sees the call's own line
        Site(f, 6, "item", 10, 1.0, None),
        Site(f, 7, "d2h", 1, 0.1, None),
    )
    result = join(findings, sites)
    assert [(x.line, r) for x, r in result.confirmed] == [(3, 1.0)]
    assert [(x.line, r) for x, r in result.not_seen] == [(7, 0.1)]
    assert [x.code for x in result.elsewhere] == ["SFL304"]
    assert [(line, kind) for _, line, kind, _ in result.missed] == [(6, "item")]
