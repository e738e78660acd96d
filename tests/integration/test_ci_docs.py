"""docs/ci.md ("Use it in CI"): its snippets parse, and its command lines run on the fixtures.

The pre-commit snippet is run through the real pre-commit in test_precommit.py.
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "ci.md"
FIXTURES = "fixtures/rules"


def blocks(language):
    return re.findall(r"^```" + language + r"\n(.*?)^```", PAGE.read_text(), flags=re.M | re.S)


def workflow():
    [text] = [b for b in blocks("yaml") if "jobs:" in b]
    return yaml.safe_load(text)


def run_on_fixtures(command):
    """A documented command line, with its target `.` replaced by the rule fixtures."""
    argv = shlex.split(command)
    assert argv[-1] == ".", command
    argv[-1] = FIXTURES
    if argv[0] == "syncfree-lint":
        argv[:1] = [sys.executable, "-m", "syncfree_lint"]
    elif argv[0] == "flake8":
        argv[:1] = [sys.executable, "-m", "flake8", "--isolated"]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)


def test_every_yaml_snippet_parses():
    texts = blocks("yaml")
    assert len(texts) == 2
    for text in texts:
        assert isinstance(yaml.safe_load(text), dict)


def test_github_actions_workflow_shape():
    data = workflow()
    triggers = data["on"] if "on" in data else data[True]  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers
    [job] = data["jobs"].values()
    steps = job["steps"]
    uses = [step.get("uses", "") for step in steps]
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert any(u.startswith("actions/setup-python@") for u in uses)
    runs = [step["run"] for step in steps if "run" in step]
    assert runs[0].startswith("pip install ") and "syncfree-lint" in runs[0]
    assert runs[-1] == "syncfree-lint --output-format github ."


def has_output_format():
    proc = subprocess.run([sys.executable, "-m", "syncfree_lint", "--help"], capture_output=True, text=True)
    return "--output-format" in proc.stdout and "github" in proc.stdout


@pytest.mark.skipif(not has_output_format(), reason="--output-format lands with the output formats")
def test_workflow_lint_command_runs_and_annotates():
    [command] = [step["run"] for step in workflow()["jobs"]["syncfree-lint"]["steps"] if step.get("run", "").startswith("syncfree-lint")]
    proc = run_on_fixtures(command)
    assert proc.returncode == 1, proc.stderr  # the fixtures have findings: the job fails
    lines = proc.stdout.splitlines()
    assert lines and all(re.match(r"::(error|warning|notice) file=fixtures/rules/[^,]+\.py,line=\d+", line) for line in lines), lines[:3]
    assert any("SFL101" in line for line in lines)


def test_flake8_command_runs():
    [command] = [line for b in blocks("bash") for line in b.splitlines() if line.startswith("flake8")]
    assert command == "flake8 --select SFL ."
    proc = run_on_fixtures(command)
    assert proc.returncode == 1, proc.stderr
    assert any(": SFL101 " in line for line in proc.stdout.splitlines())


def test_flake8_config_snippet_is_what_the_plugin_reads(tmp_path):
    [ini] = blocks("ini")
    (tmp_path / "setup.cfg").write_text(ini)
    (tmp_path / "step.py").write_text(
        "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n\n\ndef run_batch(batch):\n"
        "    x = batch.to('cuda')\n    return model(x).sum().item()\n"
    )
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "SFL", "step.py"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    codes = sorted(line.split(": ", 1)[1].split()[0] for line in proc.stdout.splitlines())
    assert codes == ["SFL101", "SFL402"], proc.stdout


def test_pre_commit_snippet_uses_both_hooks():
    [text] = [b for b in blocks("yaml") if "repos:" in b]
    [repo] = yaml.safe_load(text)["repos"]
    manifest = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [hook["id"] for hook in repo["hooks"]] == [hook["id"] for hook in manifest]
