"""The pre-commit hooks, run through the real pre-commit in a throwaway git repository.

pre-commit installs a hook repository by cloning it at a commit and pip-installing it into a
virtualenv of its own. The project is copied (tracked and untracked-but-not-ignored files, as
they are now) into a temporary repository and committed there, so the test sees the working
tree on a developer's machine and the checkout on CI alike. The virtualenv is built once per
module (a shared PRE_COMMIT_HOME); `pre-commit try-repo` builds its own every time, so it is
run once.
"""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")
yaml = pytest.importorskip("yaml")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "ci.md"

HAZARD = textwrap.dedent(
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
        return total
    """
)

CLEAN = textwrap.dedent(
    """\
    import torch

    model = torch.nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = torch.nn.CrossEntropyLoss()


    def train(loader):
        total = torch.zeros((), device="cuda")
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += loss.detach()
        return total
    """
)


FIXABLE = textwrap.dedent(
    """\
    import torch
    from torchmetrics import MeanMetric

    device = "cuda"
    model = torch.nn.Linear(8, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = torch.nn.CrossEntropyLoss()
    train_loss = MeanMetric().to(device)
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        train_loss.update(loss)
    """
)


def git(*args, cwd, env=None):
    return subprocess.run(
        ["git", "-c", "user.name=syncfree test", "-c", "user.email=test@example.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, env=env, capture_output=True, text=True, check=True,
    ).stdout


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A shared pre-commit store; no user or system git configuration leaks in."""
    home = tmp_path_factory.mktemp("precommit-home")
    out = dict(os.environ)
    out.update(
        PRE_COMMIT_HOME=str(home / "store"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        GIT_AUTHOR_NAME="syncfree test", GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="syncfree test", GIT_COMMITTER_EMAIL="test@example.invalid",
        PRE_COMMIT_COLOR="never",
    )
    out.pop("PRE_COMMIT", None)
    (home / "gitconfig").write_text("[commit]\n\tgpgsign = false\n[init]\n\tdefaultBranch = main\n")
    return out


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory, env):
    """The project as it is now, committed in a repository of its own: (path, commit)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    assert (repo / ".pre-commit-hooks.yaml").is_file()
    git("init", "-q", cwd=repo, env=env)
    git("add", "-A", cwd=repo, env=env)
    git("commit", "-q", "--no-verify", "-m", "hooks under test", cwd=repo, env=env)
    return repo, git("rev-parse", "HEAD", cwd=repo, env=env).strip()


@pytest.fixture
def project(tmp_path, env, hook_repo):
    """A user's repository with the .pre-commit-config.yaml of docs/ci.md (pointing at the copy)."""
    repo, rev = hook_repo
    git("init", "-q", cwd=tmp_path, env=env)
    [snippet] = [b for b in re.findall(r"^```yaml\n(.*?)^```", DOCS.read_text(), flags=re.M | re.S) if "repos:" in b]
    config = yaml.safe_load(snippet)
    config["repos"][0].update(repo=str(repo), rev=rev)
    config = yaml.safe_dump(config, sort_keys=False)
    (tmp_path / ".pre-commit-config.yaml").write_text(config)
    git("add", ".pre-commit-config.yaml", cwd=tmp_path, env=env)
    git("commit", "-q", "--no-verify", "-m", "config", cwd=tmp_path, env=env)
    return tmp_path


def pre_commit(*args, cwd, env):
    proc = subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def test_manifest_declares_both_hooks():
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"syncfree-lint", "syncfree-lint-fix"}
    assert hooks["syncfree-lint"]["entry"] == "syncfree-lint"
    assert hooks["syncfree-lint-fix"]["entry"] == "syncfree-lint --fix"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["require_serial"] is False


def test_try_repo_fails_on_a_hazard(tmp_path, env, hook_repo):
    repo, _ = hook_repo
    git("init", "-q", cwd=tmp_path, env=env)
    (tmp_path / "train.py").write_text(HAZARD)
    git("add", "train.py", cwd=tmp_path, env=env)
    rc, out = pre_commit("try-repo", str(repo), "syncfree-lint", "--files", "train.py", cwd=tmp_path, env=env)
    assert rc == 1, out
    assert "train.py:15:18: SFL101 " in out, out


def test_hook_fails_on_a_hazard_then_passes_once_clean(project, env):
    (project / "train.py").write_text(HAZARD)
    git("add", "train.py", cwd=project, env=env)
    rc, out = pre_commit("run", "syncfree-lint", cwd=project, env=env)  # the staged files
    assert rc == 1, out
    assert "train.py:15:18: SFL101 " in out, out
    assert "Failed" in out

    (project / "train.py").write_text(CLEAN)
    git("add", "train.py", cwd=project, env=env)
    rc, out = pre_commit("run", "syncfree-lint", cwd=project, env=env)
    assert rc == 0, out
    assert "Passed" in out and "SFL" not in out


def test_hook_is_skipped_without_python_files(project, env):
    (project / "notes.md").write_text("# notes\n\n`loss.item()` in prose is not code.\n")
    git("add", "notes.md", cwd=project, env=env)
    rc, out = pre_commit("run", "syncfree-lint", cwd=project, env=env)
    assert rc == 0, out
    assert "(no files to check)" in out and "Skipped" in out
    assert "SFL" not in out


def test_fix_hook_fails_while_findings_remain_and_passes_when_clean(project, env):
    (project / "train.py").write_text(HAZARD)
    git("add", "train.py", cwd=project, env=env)
    rc, out = pre_commit("run", "--hook-stage", "manual", "syncfree-lint-fix", "--files", "train.py", cwd=project, env=env)
    assert rc == 1, out  # `.item()` has no safe fix: the finding remains
    assert "train.py:15:18: SFL101 " in out, out
    assert (project / "train.py").read_text() == HAZARD

    (project / "clean.py").write_text(CLEAN)
    rc, out = pre_commit("run", "--hook-stage", "manual", "syncfree-lint-fix", "--files", "clean.py", cwd=project, env=env)
    assert rc == 0, out
    assert (project / "clean.py").read_text() == CLEAN


def test_fix_hook_rewrites_a_fixable_file(project, env, tmp_path_factory):
    probe = tmp_path_factory.mktemp("probe") / "train.py"
    probe.write_text(FIXABLE)
    diff = subprocess.run([sys.executable, "-m", "syncfree_lint", "--diff", str(probe)], capture_output=True, text=True)
    if not diff.stdout.strip():
        pytest.skip("no safe fix fires on this example with this version of the rules")
    (project / "train.py").write_text(FIXABLE)
    git("add", "train.py", cwd=project, env=env)
    rc, out = pre_commit("run", "--hook-stage", "manual", "syncfree-lint-fix", "--files", "train.py", cwd=project, env=env)
    assert rc == 1, out  # it changed the file: review and stage it
    assert "files were modified by this hook" in out, out
    fixed = (project / "train.py").read_text()
    assert fixed != FIXABLE
    compile(fixed, "train.py", "exec")


def _notebook(source: str) -> str:
    import json

    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_hook_lints_a_staged_notebook(project, env):
    (project / "train.ipynb").write_text(_notebook("%matplotlib inline\n" + HAZARD))
    git("add", "train.ipynb", cwd=project, env=env)
    rc, out = pre_commit("run", "syncfree-lint", cwd=project, env=env)
    assert rc == 1, out
    assert "train.ipynb:cell 1:16:18: SFL101 " in out, out  # one line below: the magic keeps its line


def test_fix_hook_rewrites_a_staged_notebook(project, env):
    text = _notebook("!nvidia-smi\n" + FIXABLE)
    (project / "train.ipynb").write_text(text)
    git("add", "train.ipynb", cwd=project, env=env)
    rc, out = pre_commit("run", "--hook-stage", "manual", "syncfree-lint-fix", "--files", "train.ipynb",
                         cwd=project, env=env)
    fixed = (project / "train.ipynb").read_text()
    assert rc == 1, out
    assert fixed != text and "!nvidia-smi" in fixed and "from syncfree import MeanMetric" in fixed


def test_hook_follows_a_helper_whose_caller_is_not_staged(project, env):
    caller = HAZARD.replace("import torch\n", "import torch\n\nfrom helpers import log_step\n", 1)
    caller = caller.replace("        total += loss.item()\n", "        log_step(loss)\n")
    (project / "pyproject.toml").write_text("[tool.syncfree-lint]\n")
    (project / "train.py").write_text(caller)
    git("add", "pyproject.toml", "train.py", cwd=project, env=env)
    git("commit", "-q", "--no-verify", "-m", "the loop", cwd=project, env=env)
    (project / "helpers.py").write_text("def log_step(loss):\n    print(loss.item())\n")
    git("add", "helpers.py", cwd=project, env=env)  # only the helper is staged
    rc, out = pre_commit("run", "syncfree-lint", cwd=project, env=env)
    assert rc == 1, out
    assert "helpers.py:2:11: SFL101 " in out, out
