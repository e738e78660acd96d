"""Output formats, --jobs and the cache: the same findings whatever the shape or the speed."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from syncfree_lint.cli import main
from syncfree_lint.diagnostic import Diagnostic, Edit, Fix
from syncfree_lint.output.formats import FORMATS, format_github, format_json, format_sarif

ROOT = Path(__file__).resolve().parents[2]
LOOPS = ROOT / "fixtures" / "loops"


@pytest.fixture
def tree(tmp_path):
    target = tmp_path / "loops"
    shutil.copytree(LOOPS, target)
    return target


def run_cli(args, capsys):
    code = main(args)
    return code, capsys.readouterr().out


def test_every_format_carries_the_same_findings(tree, capsys):
    code, text = run_cli([str(tree), "--no-cache"], capsys)
    assert code == 1
    lines = text.splitlines()
    _, raw = run_cli([str(tree), "--no-cache", "--output-format", "json"], capsys)
    items = json.loads(raw)
    # text marks with `[*]` exactly the findings whose JSON fix is safe (no --unsafe-fixes here)
    mark = lambda i: " [*]" if i["fix"] and i["fix"]["edits"] and i["fix"]["applicability"] == "safe" else ""  # noqa: E731
    assert [f"{i['path']}:{i['start']['line']}:{i['start']['column']}: {i['code']}{mark(i)} {i['message']}" for i in items] == lines
    assert any(mark(i) for i in items) and not all(mark(i) for i in items)
    for item in items:
        assert set(item) == {"code", "message", "path", "cell", "start", "end", "fix", "url", "explain", "reach"}
        assert item["end"]["line"] >= item["start"]["line"]
        assert item["url"].startswith("docs/rules.md#") and item["code"].lower() in item["url"]
        assert item["explain"] == f"syncfree-lint --explain {item['code']}"
    _, gh = run_cli([str(tree), "--no-cache", "--output-format", "github"], capsys)
    assert len(gh.splitlines()) == len(lines)
    _, grouped = run_cli([str(tree), "--no-cache", "--output-format", "grouped"], capsys)
    assert sum(1 for line in grouped.splitlines() if line.startswith("  ")) == len(lines)
    _, sarif = run_cli([str(tree), "--no-cache", "--output-format", "sarif"], capsys)
    run = json.loads(sarif)["runs"][0]
    assert len(run["results"]) == len(lines)


def test_sarif_is_valid_2_1_0_shape():
    diagnostic = Diagnostic("pkg/train.py", 3, 5, "SFL303", "msg", Fix("wrap", "safe", (Edit((3, 4), (3, 9), "torch.as_tensor(x)"),)), 3, 10)
    sarif = json.loads(format_sarif([diagnostic]))
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    driver = sarif["runs"][0]["tool"]["driver"]
    ids = [rule["id"] for rule in driver["rules"]]
    assert len(ids) == len(set(ids)) and "SFL101" in ids
    assert all(rule["help"]["text"] and "helpUri" not in rule for rule in driver["rules"])
    [result] = sarif["runs"][0]["results"]
    assert driver["rules"][result["ruleIndex"]]["id"] == "SFL303"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 10}
    replacement = result["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["deletedRegion"]["startColumn"] == 5 and replacement["insertedContent"]["text"] == "torch.as_tensor(x)"


def test_json_fix_edits_and_github_escaping():
    diagnostic = Diagnostic("a,b:c.py", 1, 1, "SFL101", "50% of\nit", Fix("t", "unsafe", (Edit((1, 0), (1, 2), "x"),)))
    [item] = json.loads(format_json([diagnostic]))
    assert item["fix"] == {"title": "t", "applicability": "unsafe",
                           "edits": [{"content": "x", "start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 3}}]}
    line = format_github([diagnostic]).strip()
    assert line.startswith("::warning file=a%2Cb%3Ac.py,line=1,col=1,")
    assert line.endswith("::SFL101 50%25 of%0Ait")
    assert set(FORMATS) == {"text", "json", "sarif", "github", "grouped"}


def test_output_identical_whatever_the_jobs(tmp_path, capsys):
    # enough files that the process pool is really used (4 files per job at least)
    for index in range(24):
        target = tmp_path / f"copy{index}"
        shutil.copytree(LOOPS, target)
    outputs = set()
    for jobs in ("1", "2", "3"):
        _, out = run_cli([str(tmp_path), "--no-cache", "--jobs", jobs], capsys)
        outputs.add(out)
    assert len(outputs) == 1 and outputs.pop().count("\n") >= 24 * 5


def test_cache_hits_and_invalidation(tree, tmp_path, capsys):
    cache = tmp_path / "cache"
    _, cold = run_cli([str(tree), "--cache-dir", str(cache)], capsys)
    entries = list(cache.rglob("*.pickle"))
    assert entries and (cache / "CACHEDIR.TAG").exists()
    _, warm = run_cli([str(tree), "--cache-dir", str(cache)], capsys)
    assert warm == cold
    assert len(list(cache.rglob("*.pickle"))) == len(entries)  # nothing new: all hits
    # a change in content misses for that file only (one new entry for it, one for the whole run)
    target = tree / "plain_running_loss.py"
    target.write_text(target.read_text() + "\n# a comment changes the key\n")
    _, after_edit = run_cli([str(tree), "--cache-dir", str(cache)], capsys)
    assert after_edit == cold
    assert len(list(cache.rglob("*.pickle"))) == len(entries) + 2
    # a change in configuration misses
    _, ignored = run_cli([str(tree), "--cache-dir", str(cache), "--ignore", "SFL101"], capsys)
    assert "SFL101" not in ignored
    _, nocache = run_cli([str(tree), "--no-cache"], capsys)
    assert nocache == cold


def test_cache_survives_corruption_and_concurrent_runs(tree, tmp_path):
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "syncfree_lint", str(tree), "--cache-dir", str(cache)]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert len({out for out, _ in outs}) == 1 and len({err for _, err in outs}) == 1
    assert outs[0][1].decode().startswith("Found ") and outs[0][1].count(b"\n") == 1  # only the summary line
    assert not list(cache.rglob("*.tmp"))
    for entry in cache.rglob("*.pickle"):
        entry.write_bytes(b"garbage")
    proc = subprocess.run(command, capture_output=True)
    assert proc.stdout == outs[0][0] and proc.returncode == 1


def test_progress_only_on_a_terminal(tree):
    proc = subprocess.run([sys.executable, "-m", "syncfree_lint", str(tree), "--no-cache"], capture_output=True, text=True)
    # stderr is not a terminal here: no progress, only the summary line
    assert proc.stderr.startswith("Found ") and proc.stderr.count("\n") == 1 and "\r" not in proc.stderr
