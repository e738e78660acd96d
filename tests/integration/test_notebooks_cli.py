"""Jupyter notebooks on the command line: findings in cells, every output format, --fix written
back into the cells with everything else byte for byte, discovery, exclude, stdin, bad files."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from syncfree_lint.cli import main
from syncfree_lint.notebook_write import source_spans

NOTEBOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks"


@pytest.fixture
def book(tmp_path):
    """A copy of a fixture notebook in a project of its own."""
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")

    def copy(name):
        target = tmp_path / name
        shutil.copyfile(NOTEBOOKS / name, target)
        return target

    return copy


def lint(capsys, *args):
    code = main([*args, "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def without_sources(text):
    """The notebook's text with every cell's ``source`` value cut out."""
    spans = sorted(source_spans(text).values())
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        last = end
    return "<source>".join(out + [text[last:]])


def cell_source(text, number):
    source = json.loads(text)["cells"][number - 1]["source"]
    return "".join(source) if isinstance(source, list) else source


def test_text_output_names_the_cell_and_the_line_in_it(book, capsys):
    path = book("train.ipynb")
    code, out, _ = lint(capsys, str(path))
    assert code == 1
    lines = out.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [f"{path}:cell 5:9:19", f"{path}:cell 5:10:27"]
    assert all(" SFL101 " in line for line in lines)
    # the loop is in cell 5; the model and the loader come from earlier cells: one program
    assert cell_source(path.read_text(), 5).splitlines()[8].index("loss.item()") == 18


def test_show_source_and_reach_show_the_cell_line(book, capsys):
    path = book("train.ipynb")
    _, out, _ = lint(capsys, str(path), "--show-source", "--show-reach")
    assert "    losses.append(loss.item())\n                  ^\n" in out
    assert f"reached: {path}:cell 5:2 step loop" in out


def test_json_carries_the_cell_and_in_cell_lines(book, capsys):
    path = book("train.ipynb")
    _, out, _ = lint(capsys, str(path), "--output-format", "json")
    first = json.loads(out)[0]
    assert first["path"] == str(path) and first["cell"] == 5
    assert first["start"] == {"line": 9, "column": 19} and first["end"] == {"line": 9, "column": 30}
    [edit] = first["fix"]["edits"]
    assert edit["start"]["line"] == edit["end"]["line"] == 9
    assert first["reach"] == [{"where": f"{path}:cell 5:2", "what": "step loop (iterates a data loader)"}]
    assert first["explain"] == "syncfree-lint --explain SFL101"
    assert first["url"] == "docs/rules.md#sfl101-item-in-step"
    assert (Path(__file__).resolve().parents[2] / "docs" / "rules.md").is_file()


def test_json_of_a_python_file_has_a_null_cell(tmp_path, capsys):
    (tmp_path / "train.py").write_text("import torch\nfor x in loader:\n    print(x.cuda().sum().item())\n")
    _, out, _ = lint(capsys, str(tmp_path / "train.py"), "--output-format", "json")
    assert [item["cell"] for item in json.loads(out)] == [None]


def test_sarif_keeps_the_file_and_puts_the_cell_in_the_property_bag(book, capsys):
    path = book("train.ipynb")
    _, out, _ = lint(capsys, str(path), "--output-format", "sarif")
    run = json.loads(out)["runs"][0]
    result = run["results"][0]
    [location] = result["locations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == str(path)
    assert location["physicalLocation"]["region"]["startLine"] == 9
    assert location["properties"] == {"cell": 5}
    assert result["relatedLocations"][0]["properties"] == {"cell": 5}
    change = result["fixes"][0]["artifactChanges"][0]
    assert change["properties"] == {"cell": 5} and change["replacements"][0]["deletedRegion"]["startLine"] == 9
    # rule help travels in the log; no link to a repository nobody names
    driver = run["tool"]["driver"]
    assert "informationUri" not in driver
    assert all("helpUri" not in rule and "--explain" in rule["help"]["text"] for rule in driver["rules"])


def test_grouped_and_github_formats(book, capsys):
    path = book("train.ipynb")
    _, out, _ = lint(capsys, str(path), "--output-format", "grouped")
    assert "  cell 5:9:19 SFL101 " in out
    _, out, _ = lint(capsys, str(path), "--output-format", "github")
    assert ",line=9,col=19," in out and "::cell 5: SFL101 " in out


def test_fix_writes_the_cells_back_and_nothing_else(book, capsys):
    path = book("metrics.ipynb")
    before = path.read_text(encoding="utf-8")
    code, out, err = lint(capsys, str(path), "--fix")
    after = path.read_text(encoding="utf-8")
    assert after != before
    assert without_sources(after) == without_sources(before)  # outputs, metadata, layout: byte for byte
    changed = [n for n in range(1, 6) if cell_source(after, n) != cell_source(before, n)]
    assert changed == [1]
    assert "from syncfree import MeanMetric" in cell_source(after, 1)
    assert cell_source(after, 1).startswith("!nvidia-smi --query-gpu=name --format=csv\n")  # the shell line is back
    assert "    %time optimizer.step()\n" in cell_source(after, 4)
    # the file is still exactly what nbformat writes (indent=1, list of lines, non-ASCII as is)
    data = json.loads(after)
    assert after == json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    assert isinstance(data["cells"][0]["source"], list)
    assert "“before”" in after
    assert "SFL301" not in out and "SFL304" not in out
    assert path.read_bytes() == (NOTEBOOKS / "metrics.fixed.ipynb").read_bytes()  # the expected file, exactly


def test_diff_shows_cells_and_writes_nothing(book, capsys):
    path = book("metrics.ipynb")
    before = path.read_bytes()
    code, out, _ = lint(capsys, str(path), "--diff")
    assert code == 1
    assert out.startswith(f"--- a/{str(path).lstrip('/')}:cell 1\n+++ b/{str(path).lstrip('/')}:cell 1\n")
    assert "-from torchmetrics import MeanMetric\n+from syncfree import MeanMetric\n" in out
    assert path.read_bytes() == before


def test_unsafe_fix_on_a_percent_time_line_keeps_the_magic(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")
    cell = ("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nlosses = []\nfor x in loader:\n"
            "    loss = ((model(x) - x) ** 2).mean()\n    %time losses.append(loss.item())\n")
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": cell.splitlines(keepends=True)}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "timed.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    code, out, _ = lint(capsys, str(path))
    assert f"{path}:cell 1:6:25: SFL101" in out  # the column of `loss.item()` after `%time losses.append(`
    lint(capsys, str(path), "--fix", "--unsafe-fixes")
    fixed = cell_source(path.read_text(), 1)
    assert fixed.splitlines()[5] == "    %time losses.append(loss.detach())"
    assert ".item()" not in fixed


def test_add_noqa_writes_into_the_cells(book, capsys):
    path = book("train.ipynb")
    before = path.read_text(encoding="utf-8")
    lint(capsys, str(path), "--add-noqa")
    after = path.read_text(encoding="utf-8")
    assert without_sources(after) == without_sources(before)
    assert "    losses.append(loss.item())  # noqa: SFL101\n" in cell_source(after, 5)
    assert lint(capsys, str(path))[0] == 0


def test_bad_notebooks_are_sfl000_findings(book, capsys):
    paths = [book(name) for name in ("nbformat3.ipynb", "not_json.ipynb", "syntax_error.ipynb")]
    code, out, _ = lint(capsys, *map(str, paths))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"{paths[0]}:1:1: SFL000 notebook format 3 is not supported (only nbformat 4)"
    assert lines[1].startswith(f"{paths[1]}:20:4: SFL000 notebook is not valid JSON")
    assert lines[2].startswith(f"{paths[2]}:cell 3:2:14: SFL000 syntax error")


@pytest.mark.parametrize("key", ["exclude", "extend-exclude"])
def test_a_folder_picks_up_notebooks_and_exclude_applies(tmp_path, capsys, key):
    (tmp_path / "pyproject.toml").write_text(f'[tool.syncfree-lint]\n{key} = ["drafts"]\n')
    for folder in ("nb", "drafts", "nb/.ipynb_checkpoints"):
        (tmp_path / folder).mkdir()
        shutil.copyfile(NOTEBOOKS / "train.ipynb", tmp_path / folder / "train.ipynb")
    code, out, _ = lint(capsys, str(tmp_path))
    assert code == 1
    assert f"{tmp_path / 'nb' / 'train.ipynb'}:cell 5:9:19" in out
    assert "drafts" not in out and ".ipynb_checkpoints" not in out  # Jupyter's copies are skipped by default


def test_stdin_filename_notebook(tmp_path):
    data = (NOTEBOOKS / "train.ipynb").read_bytes()
    run = subprocess.run([sys.executable, "-m", "syncfree_lint", "--no-cache", "--stdin-filename", "nb/train.ipynb"],
                         input=data, capture_output=True, cwd=tmp_path)
    assert run.returncode == 1
    assert run.stdout.decode().splitlines()[0].startswith("nb/train.ipynb:cell 5:9:19: SFL101")
    bad = subprocess.run([sys.executable, "-m", "syncfree_lint", "--no-cache", "--stdin-filename", "x.ipynb"],
                         input=b"{not json", capture_output=True, cwd=tmp_path)
    assert bad.returncode == 1 and bad.stdout.decode().startswith("x.ipynb:1:2: SFL000 notebook is not valid JSON")
    fixed = subprocess.run([sys.executable, "-m", "syncfree_lint", "--no-cache", "--stdin-filename", "metrics.ipynb",
                            "--fix"], input=(NOTEBOOKS / "metrics.ipynb").read_bytes(), capture_output=True, cwd=tmp_path)
    text = fixed.stdout.decode("utf-8")
    assert "from syncfree import MeanMetric" in cell_source(text, 1)
    assert without_sources(text) == without_sources((NOTEBOOKS / "metrics.ipynb").read_text(encoding="utf-8"))


def test_a_named_file_is_always_linted_and_an_empty_run_says_so(tmp_path, capsys):
    script = tmp_path / "train.txt"
    script.write_text("import torch\nfor x in loader:\n    print(x.cuda().sum().item())\n")
    code, out, _ = lint(capsys, str(script))
    assert code == 1 and f"{script}:3:11: SFL101" in out
    (tmp_path / "empty").mkdir()
    code, out, err = lint(capsys, str(tmp_path / "empty"))
    assert code == 0 and out == ""
    assert "no Python files or notebooks to lint" in err
