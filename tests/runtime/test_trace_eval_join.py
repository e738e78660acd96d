"""The trace's --lint join on evaluation loops and batch copies: findings in eval loops are "per
eval step" (the run's steps are optimizer steps), and a missed host-to-device copy names the
opt-in SFL402 (fixtures/trace/train_eval.py, run on the CPU stand-in; and the join's units)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from syncfree.trace.eval_loops import eval_loop_lines  # noqa: E402
from syncfree.trace.lint_join import H2D_NOTE, Finding, join, render_join  # noqa: E402
from syncfree.trace.report import Site  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "fixtures" / "trace" / "train_eval.py"
LINES = SCRIPT.read_text(encoding="utf-8").splitlines()


def line_of(tag: str) -> int:
    found = [i for i, text in enumerate(LINES, start=1) if text.rstrip().endswith(f"# trace: {tag}")]
    assert len(found) == 1, tag
    return found[0]


def sections(stdout: str) -> dict:
    """section title -> the rows under it, as (line, code or kind, rest of the row)."""
    found: dict = {}
    section = None
    for line in stdout.split("lint join:")[1].splitlines()[1:]:
        if not line.startswith("  "):
            section = line.split(" (")[0]
            found.setdefault(section, [])
            continue
        m = re.match(r"\s+fixtures/trace/train_eval.py:(\d+): (\S+)(.*)", line)
        assert m, line
        found[section].append((int(m.group(1)), m.group(2), m.group(3)))
    return found


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("trace") / "sites.json"
    done = subprocess.run(
        [sys.executable, "-m", "syncfree.trace", "--steps", "8", "--lint", "--json", str(out), str(SCRIPT)],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""), timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


def test_eval_loop_findings_are_per_eval_step_not_unseen(traced):
    stdout, _ = traced
    found = sections(stdout)
    # evaluate() ran twice in the 8 counted steps (3 batches each); final_test() never ran
    assert {(line, code) for line, code, _ in found["per eval step"]} == {
        (line_of("eval-item"), "SFL101"), (line_of("test-item"), "SFL101")
    }
    assert found["confirmed"] == [] and found["not seen"] == []
    assert "0 confirmed, 2 per eval step, 0 not seen, 2 missed by lint" in stdout


def test_missed_batch_copies_name_the_opt_in_rule(traced):
    stdout, _ = traced
    missed = sections(stdout)["missed by lint"]
    assert [(line, kind) for line, kind, _ in missed] == [(line_of("copy-x"), "h2d"), (line_of("copy-y"), "h2d")]
    assert all(rest.endswith(H2D_NOTE) for _, _, rest in missed)
    assert H2D_NOTE == "covered by SFL402, off by default: --extend-select SFL402"


def test_json_counts_the_steps_a_site_synced_in(traced):
    _, data = traced
    item = [s for s in data["sites"] if s["line"] == line_of("eval-item") and s["kind"] == "item"]
    assert len(item) == 1 and (item[0]["count"], item[0]["in_steps"]) == (6, 2)
    copy = [s for s in data["sites"] if s["line"] == line_of("copy-x")]
    assert (copy[0]["count"], copy[0]["in_steps"]) == (8, 8)


EVAL_SOURCE = """\
import torch


def evaluate(model, loader):
    for x in loader:  # eval: by its function's name
        model(x).sum().item()


@torch.no_grad()
def score(model, loader):
    for x in loader:  # eval: decorated
        model(x)


def main(model, opt, loader, val):
    for x in loader:  # train
        model(x).sum().backward()
        opt.step()
    model.eval()
    for x in val:  # not read as eval: main() trains too
        model(x)
    with torch.no_grad():
        for x in val:  # eval: no_grad
            model(x)
        while True:  # steps inside no_grad: not eval
            opt.step()
"""


def test_eval_loops_read_from_the_source(tmp_path):
    path = tmp_path / "loops.py"
    path.write_text(EVAL_SOURCE, encoding="utf-8")
    lines = EVAL_SOURCE.splitlines()
    expected = {i for i, t in enumerate(lines, 1) if t.rstrip().endswith(("# eval: by its function's name",
                                                                           "# eval: decorated", "# eval: no_grad"))}
    assert len(expected) == 3
    assert eval_loop_lines(str(path)) == expected
    assert eval_loop_lines(str(tmp_path / "missing.py")) == frozenset()


def test_join_tells_bursts_from_per_step_inner_loops(tmp_path):
    src = tmp_path / "train.py"
    src.write_text("a.item()\nb.item()\nc.item()\nx.cuda()\ny.item()\n", encoding="utf-8")
    f = str(src)
    findings = [Finding("SFL101", f, 1, "eval"), Finding("SFL101", f, 2, "micro-batches"), Finding("SFL101", f, 3, "rare")]
    sites = (
        Site(f, 1, "item", 9, 0.9, None, 3),  # 3 syncs in each of 3 of 10 steps: an eval loop
        Site(f, 2, "item", 40, 4.0, None, 10),  # 4 micro-batches in every step: per step
        Site(f, 3, "item", 1, 0.1, None, 1),  # once: guarded or rare
        Site(f, 4, "h2d", 10, 1.0, None, 10),
        Site(f, 5, "item", 10, 1.0, None, 10),
    )
    result = join(findings, sites)
    assert [x.line for x, _ in result.per_eval_step] == [1]
    assert [x.line for x, _ in result.confirmed] == [2]
    assert [x.line for x, _ in result.not_seen] == [3]
    text = render_join(result)
    rows = {int(m.group(1)): m.group(0) for m in re.finditer(r"train\.py:(\d+): .*", text)}
    assert rows[4].endswith(H2D_NOTE) and H2D_NOTE not in rows[5]  # only copies are SFL402's


def test_a_finding_whose_reach_starts_at_an_eval_loop_is_per_eval_step_unrun(tmp_path):
    src = tmp_path / "train.py"
    src.write_text(EVAL_SOURCE, encoding="utf-8")
    f = str(src)
    item_line = EVAL_SOURCE.splitlines().index("        model(x).sum().item()") + 1
    in_eval = Finding("SFL101", f, item_line, "item", loop=(f, item_line - 1))
    in_train = Finding("SFL101", f, item_line, "item", loop=(f, 16))
    assert [x for x, _ in join([in_eval], ()).per_eval_step] == [in_eval]
    assert [x for x, _ in join([in_train], ()).not_seen] == [in_train]
