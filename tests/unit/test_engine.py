"""The pipeline: bad input becomes SFL000, rule bugs SFL001, cross-file helpers, pre-filter."""
import os
import textwrap

import pytest

from syncfree_lint.config import Config
from syncfree_lint.engine import module_identity, run
from syncfree_lint.prefilter import could_hold_finding
from syncfree_lint.rules.host_reads.formatting import TensorFormatting

STEP = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Linear(2, 2).cuda()
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
    """
)


def codes(result):
    return [(os.path.basename(d.path), d.line, d.code) for d in result.diagnostics]


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_finding_in_step_loop(tmp_path):
    write(tmp_path, "train.py", STEP)
    assert codes(run([str(tmp_path)], Config())) == [("train.py", 6, "SFL101")]


def test_syntax_error_is_a_finding_and_run_goes_on(tmp_path):
    write(tmp_path, "a_broken.py", "import torch\ndef f(:\n    pass\n")
    write(tmp_path, "b_train.py", STEP)
    found = codes(run([str(tmp_path)], Config()))
    assert ("a_broken.py", 2, "SFL000") in found
    assert ("b_train.py", 6, "SFL101") in found


@pytest.mark.parametrize(
    "data, message",
    [
        (b"import torch\nx = '\xff'\n", "cannot decode"),
        (b"import torch\n\x00\n", "NUL"),
        (b"# coding: nope\nimport torch\n", "unknown encoding"),
    ],
)
def test_unreadable_bytes(tmp_path, data, message):
    write(tmp_path, "bad.py", data, mode="wb")
    result = run([str(tmp_path)], Config())
    assert [d.code for d in result.diagnostics] == ["SFL000"]
    assert message in result.diagnostics[0].message


def test_deep_nesting_is_sfl000_not_a_crash(tmp_path):
    text = "import torch\nx = " + "(" * 1200 + "1" + ")" * 1200 + "\n"
    write(tmp_path, "deep.py", text)
    result = run([str(tmp_path)], Config())
    assert [d.code for d in result.diagnostics] in (["SFL000"], [])


def test_vanished_file(tmp_path):
    result = run([str(tmp_path / "gone.py")], Config())
    assert [d.code for d in result.diagnostics] == ["SFL000"]
    assert "vanished" in result.diagnostics[0].message


def test_bug_in_one_rule_is_sfl001_and_others_run(tmp_path, monkeypatch):
    def broken(self, node, ctx):
        raise ValueError("boom")

    monkeypatch.setattr(TensorFormatting, "check", broken)
    write(tmp_path, "train.py", STEP)
    result = run([str(tmp_path)], Config())
    found = [d.code for d in result.diagnostics]
    assert "SFL001" in found and "SFL101" in found
    assert result.internal_errors == 1
    assert "SFL107" in next(d.message for d in result.diagnostics if d.code == "SFL001")


def test_helper_in_other_file_that_never_says_torch(tmp_path):
    write(tmp_path, "logutil.py", "def log_loss(value):\n    return value.item()\n")
    write(tmp_path, "train.py", "import torch\nfrom logutil import log_loss\n" + STEP.split("\n", 1)[1].replace("print(loss.item())", "log_loss(loss)"))
    found = codes(run([str(tmp_path)], Config()))
    assert ("logutil.py", 2, "SFL101") in found


def test_guarded_helper_call_is_not_reported(tmp_path):
    write(tmp_path, "logutil.py", "def log_loss(value):\n    return value.item()\n")
    body = STEP.split("\n", 1)[1].replace("print(loss.item())", "if step % 10 == 0:\n        log_loss(loss)")
    write(tmp_path, "train.py", "import torch\nfrom logutil import log_loss\n" + body)
    assert codes(run([str(tmp_path)], Config())) == []
    assert ("logutil.py", 2, "SFL101") in codes(run([str(tmp_path)], Config(report_guarded=True)))


def test_noqa_standalone(tmp_path):
    write(tmp_path, "train.py", STEP.replace("print(loss.item())", "print(loss.item())  # noqa: SFL1"))
    assert codes(run([str(tmp_path)], Config())) == []
    write(tmp_path, "train.py", STEP.replace("print(loss.item())", "print(loss.item())  # noqa: SFL2"))
    assert codes(run([str(tmp_path)], Config())) == [("train.py", 6, "SFL101")]


def test_per_file_ignores(tmp_path):
    write(tmp_path, "train.py", STEP)
    config = Config(per_file_ignores=(("train.py", ("SFL101",)),), root=str(tmp_path))
    assert codes(run([str(tmp_path)], config)) == []


def test_prefilter_skips_files_without_evidence_but_not_helpers(tmp_path):
    write(tmp_path, "plain.py", "def add(a, b):\n    return a + b\n")
    write(tmp_path, "helper.py", "def read(v):\n    return v.item()\n")
    result = run([str(tmp_path)], Config())
    assert result.files == 2 and result.skipped_by_filter == 1 and result.parsed == 1
    assert not could_hold_finding("x = 1\n", ())
    assert could_hold_finding("def my_step(b): pass", ("my_step",))


def test_module_identity(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/sub/__init__.py", "")
    path = write(tmp_path, "pkg/sub/mod.py", "")
    name, root, is_package = module_identity(str(path))
    assert name == "pkg.sub.mod" and root == str(tmp_path) and not is_package


def test_discovery_skips_virtualenvs_and_honours_exclude(tmp_path):
    write(tmp_path, ".venv/lib/bad.py", STEP)
    write(tmp_path, "build/bad.py", STEP)
    write(tmp_path, "legacy/bad.py", STEP)
    write(tmp_path, "train.py", STEP)
    result = run([str(tmp_path)], Config(exclude=("legacy",), root=str(tmp_path)))
    assert codes(result) == [("train.py", 6, "SFL101")]


def test_crlf_bom_and_tabs_keep_positions(tmp_path):
    text = STEP.replace("    ", "\t").replace("\n", "\r\n")
    write(tmp_path, "train.py", b"\xef\xbb\xbf" + text.encode(), mode="wb")
    [diagnostic] = run([str(tmp_path)], Config()).diagnostics
    assert (diagnostic.line, diagnostic.col, diagnostic.code) == (6, 8, "SFL101")


def _notebook(*sources):
    import json

    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
             for source in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebooks_cells_are_one_module_with_its_step_loop(tmp_path):
    # the model in one cell, the loop at the top level of another: the loop is a step loop
    write(tmp_path, "train.ipynb", _notebook("import torch\n%matplotlib inline\nmodel = torch.nn.Linear(2, 2).cuda()\n",
                                             "!nvidia-smi\nfor x, y in loader:\n    loss = model(x).sum()\n"
                                             "    loss.backward()\n    print(loss.item())\n"))
    result = run([str(tmp_path)], Config())
    [d] = result.diagnostics
    assert (d.code, d.line, d.cell, d.shown_line, d.col) == ("SFL101", 8, 2, 5, 11)
    assert d.reach[0] == (f"{tmp_path / 'train.ipynb'}:cell 2:2", "step loop (iterates a data loader)")
    assert result.files == 1
    assert module_identity(str(tmp_path / "train.ipynb"))[0] == "train-ipynb"  # never the module train.py


def test_a_bad_notebook_is_sfl000(tmp_path):
    write(tmp_path, "bad.ipynb", "{\"cells\": [")
    [d] = run([str(tmp_path)], Config()).diagnostics
    assert d.code == "SFL000" and "not valid JSON" in d.message and d.cell is None


def test_a_warm_run_over_unchanged_folders_is_served_whole_and_any_change_misses(tmp_path, monkeypatch):
    from syncfree_lint import engine
    from syncfree_lint.cache import Cache

    project = tmp_path / "project"
    write(project, "logutil.py", "def log_loss(value):\n    return value.item()\n")
    write(project, "train.py", "import torch\nfrom logutil import log_loss\n"
          + STEP.split("\n", 1)[1].replace("print(loss.item())", "log_loss(loss)"))
    cache = Cache(str(tmp_path / "cache"), "config")
    cold = codes(run([str(project)], Config(), cache=cache))
    assert ("logutil.py", 2, "SFL101") in cold

    real_lint_path = engine.lint_path
    linted = []
    monkeypatch.setattr(engine, "lint_path", lambda path, *a, **k: linted.append(path) or real_lint_path(path, *a, **k))
    assert codes(run([str(project)], Config(), cache=cache)) == cold
    assert linted == []  # the whole result came from the run's entry: no file was looked up or planned

    # the helper's caller changes (it no longer passes a tensor): the helper's own file is unchanged,
    # so only a key over the whole run can tell that its finding is gone
    write(project, "train.py", "from logutil import log_loss\nfor step in range(3):\n    log_loss(3.0)\n")
    assert ("logutil.py", 2, "SFL101") not in codes(run([str(project)], Config(), cache=cache))
    assert linted  # a miss lints (from the per-file entries where they still hold)
    linted.clear()
    write(project, "extra.py", "x = 1\n")  # a file added to the run misses too
    run([str(project)], Config(), cache=cache)
    assert linted
