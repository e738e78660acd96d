"""The flake8 plugin, run through the real flake8: it reports what `syncfree-lint FILE` reports."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("flake8")

ROOT = Path(__file__).resolve().parents[2]
RULE_FIXTURES = sorted(p for p in (ROOT / "fixtures" / "rules").glob("*.py") if not p.name.endswith(".fixed.py"))
LOOP_FIXTURES = sorted((ROOT / "fixtures" / "loops").glob("*.py"))
# flake8 runs no plugin on a file Python cannot parse; it reports E999 itself (tested below).
SYNTAX_ERROR = ROOT / "fixtures" / "rules" / "SFL000_syntax_error.py"
COMPARED = [p for p in RULE_FIXTURES + LOOP_FIXTURES if p != SYNTAX_ERROR]

STEP = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Linear(2, 2).cuda()
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
        print(loss.item())  # noqa: SFL101
        print(loss.item())  #noqa
        if step % 10 == 0:
            print(loss.item())
        x = x.to("cuda")
    """
)


def flake8(*args, cwd=ROOT):
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True, text=True,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def syncfree_lint(*args, cwd=ROOT):
    proc = subprocess.run(
        [sys.executable, "-m", "syncfree_lint", *_no_cache(), *args], cwd=cwd, capture_output=True, text=True,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return unmarked(proc.stdout)


def unmarked(stdout):
    """The command line's lines without ruff's `[*]` fix marker, which flake8 has no place for."""
    return [line.replace(" [*] ", " ", 1) for line in stdout.splitlines()]


_NO_CACHE = []


def _no_cache():
    if not _NO_CACHE:
        help_text = subprocess.run([sys.executable, "-m", "syncfree_lint", "--help"], capture_output=True, text=True).stdout
        _NO_CACHE.append(["--no-cache"] if "--no-cache" in help_text else [])
    return _NO_CACHE[0]


def rel(path):
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def flake8_on_fixtures():
    """One flake8 run over every compared fixture, grouped by file (flake8 lints files alone)."""
    by_file = {rel(p): [] for p in COMPARED}
    for line in flake8("--isolated", "--select", "SFL", *map(rel, COMPARED)):
        by_file[line.split(":", 1)[0]].append(line)
    return by_file


@pytest.fixture(scope="module")
def cli_on_fixtures(tmp_path_factory):
    """`syncfree-lint FILE` for each compared fixture alone, as flake8 hands files over.

    Each run reads the file's project (this repository) for context. They share one fresh cache
    folder: the first run builds the project's summary index, the others reuse it, two at a time
    (the findings do not depend on the cache; a cold index per process cost two minutes)."""
    cache = ["--cache-dir", str(tmp_path_factory.mktemp("cli-cache"))]

    def start(path):
        return subprocess.Popen([sys.executable, "-m", "syncfree_lint", *cache, rel(path)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(name, proc):
        stdout, stderr = proc.communicate()
        assert proc.returncode in (0, 1), stdout + stderr
        out[name] = unmarked(stdout)

    out = {}
    first, rest = COMPARED[0], COMPARED[1:]
    finish(rel(first), start(first))
    for pair in (rest[i:i + 2] for i in range(0, len(rest), 2)):
        for name, proc in [(rel(p), start(p)) for p in pair]:
            finish(name, proc)
    return out


@pytest.fixture
def train(tmp_path):
    (tmp_path / "train.py").write_text(STEP)
    return tmp_path


def test_plugin_is_registered():
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    assert "syncfree-lint" in proc.stdout, "run `pip install -e .` to register the flake8.extension entry point"


@pytest.mark.parametrize("path", COMPARED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_findings_as_the_command_line(path, flake8_on_fixtures, cli_on_fixtures):
    expected = cli_on_fixtures[rel(path)]
    assert sorted(flake8_on_fixtures[rel(path)]) == sorted(expected)
    if path.name.startswith("SFL") and "cpu_only" not in path.name and "SFL402" not in path.name:
        assert expected, f"{path.name} should have findings; the comparison would be empty"


def test_opt_in_rule_only_when_flake8_names_it():
    path = rel(ROOT / "fixtures" / "rules" / "SFL402_blocking_batch_transfer.py")
    opted_in = syncfree_lint("--extend-select", "SFL402", path)
    assert any(" SFL402 " in line for line in opted_in)
    assert sorted(flake8("--isolated", "--select", "SFL", "--extend-select", "SFL402", path)) == sorted(opted_in)
    assert sorted(flake8("--isolated", "--select", "SFL4", path)) == sorted(syncfree_lint("--select", "SFL4", path))
    # `--select SFL` turns the plugin on, as flake8 users write it: the default set, no opt-ins.
    assert sorted(flake8("--isolated", "--select", "SFL", path)) == sorted(syncfree_lint(path))
    assert not any(" SFL402 " in line for line in flake8("--isolated", "--select", "SFL", path))


def test_syntax_error_is_flake8s_e999():
    path = rel(SYNTAX_ERROR)
    [ours] = syncfree_lint(path)
    assert " SFL000 " in ours
    out = flake8("--isolated", "--select", "SFL,E999", path)
    assert len(out) == 1 and " E999 " in out[0]
    assert out[0].split(":")[1] == ours.split(":")[1]  # same line


def test_columns_are_not_shifted(train):
    # flake8 prints the column a plugin yields plus one; the plugin yields col - 1.
    assert flake8("--isolated", "--select", "SFL", "train.py", cwd=train)[0].startswith("train.py:6:11: SFL101 ")
    assert syncfree_lint("train.py", cwd=train)[0].startswith("train.py:6:11: SFL101 ")


def test_flake8_noqa_is_the_only_noqa(train):
    out = flake8("--isolated", "--select", "SFL", "train.py", cwd=train)
    lines = [int(line.split(":")[1]) for line in out]
    # a noqa comment naming SFL101 suppresses; without a space after the hash it is not one for flake8.
    assert lines == [6, 8]
    out = flake8("--isolated", "--select", "SFL", "--disable-noqa", "train.py", cwd=train)
    assert [int(line.split(":")[1]) for line in out] == [6, 7, 8]


def test_select_ignore_and_per_file_ignores(train):
    assert flake8("--isolated", "--select", "SFL", "--ignore", "SFL1", "train.py", cwd=train) == []
    assert flake8("--isolated", "--select", "SFL", "--per-file-ignores", "train.py:SFL101", "train.py", cwd=train) == []
    assert len(flake8("--isolated", "--select", "SFL", "--per-file-ignores", "other.py:SFL101", "train.py", cwd=train)) == 2
    assert flake8("--isolated", "--select", "SFL2", "train.py", cwd=train) == []
    # with the default selection (every installed plugin), SFL codes are on too
    assert any(" SFL101 " in line for line in flake8("--isolated", "train.py", cwd=train))


def test_plugin_options_on_the_command_line_and_in_flake8_config(train):
    (train / "step.py").write_text(textwrap.dedent(
        """\
        import torch
        model = torch.nn.Linear(2, 2).cuda()

        def my_update(model, batch):
            loss = model(batch).sum()
            return loss.item()
        """
    ))
    assert flake8("--isolated", "--select", "SFL", "step.py", cwd=train) == []
    out = flake8("--isolated", "--select", "SFL", "--sfl-step-functions", "my_update,other", "step.py", cwd=train)
    assert [line.split(": ", 1)[1].split()[0] for line in out] == ["SFL101"]
    assert len(flake8("--isolated", "--select", "SFL", "--sfl-report-guarded", "train.py", cwd=train)) == 3
    (train / ".flake8").write_text("[flake8]\nselect = SFL\nsfl-step-functions = my_update\nsfl-report-guarded = true\n")
    assert len(flake8("step.py", cwd=train)) == 1
    assert len(flake8("train.py", cwd=train)) == 3


def test_pyproject_configuration_is_read(train):
    (train / "pyproject.toml").write_text('[tool.syncfree-lint]\nignore = ["SFL101"]\nextend-select = ["SFL402"]\n')
    out = flake8("--isolated", "--select", "SFL", "train.py", cwd=train)
    assert [line.split(": ", 1)[1].split()[0] for line in out] == ["SFL402"]
    assert sorted(out) == sorted(syncfree_lint("train.py", cwd=train))


def test_loading_the_plugin_imports_neither_torch_nor_libcst():
    code = "import sys, syncfree_lint.flake8_plugin; print(sorted(m for m in ('torch', 'libcst') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_bad_pyproject_configuration_stops_flake8_with_the_message(train):
    (train / "pyproject.toml").write_text("[tool.syncfree-lint]\nbogus = 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "SFL", "train.py"], cwd=train, capture_output=True, text=True,
    )
    assert proc.returncode != 0
    assert "unknown key 'bogus'" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_stdin(train):
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "SFL", "--stdin-display-name", "train.py", "-"],
        cwd=train, input=STEP, capture_output=True, text=True,
    )
    assert sorted(proc.stdout.splitlines()) == sorted(flake8("--isolated", "--select", "SFL", "train.py", cwd=train))


def test_a_helper_called_from_another_files_step_is_found(tmp_path):
    """flake8 hands over one file; the plugin reads the rest of its project for the call graph."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (tmp_path / "helpers.py").write_text("def log_step(loss):\n    print(loss.item())\n")
    (tmp_path / "train.py").write_text(
        "from helpers import log_step\n\n\n"
        "def train(model, loader, optimizer):\n"
        "    for batch in loader:\n"
        "        loss = model(batch)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        log_step(loss)\n"
    )
    out = flake8("--isolated", "--select", "SFL", "helpers.py", cwd=tmp_path)
    assert [line.split(":")[:2] for line in out] == [["helpers.py", "2"]]
    assert "SFL101" in out[0]
