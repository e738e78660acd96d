"""Notebooks as one program (``syncfree_lint.notebook``) and cells written back
(``syncfree_lint.notebook_write``): line-for-line placeholders, the source map, the file's style."""
import json

import pytest

from syncfree_lint.notebook import NotebookError, is_ipython_line, python_lines, read_notebook, source_lines
from syncfree_lint.notebook_write import source_spans, write_cells


def notebook(*sources, indent=1, ensure_ascii=False, as_string=False, markdown_first=False):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]}] if markdown_first else []
    for source in sources:
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                      "source": source if as_string else source_lines(source)})
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if indent is not None else "")


@pytest.mark.parametrize("line", [
    "%matplotlib inline\n", "!pip install x\n", "  %time\n", "files = !ls\n", "x, y = %sx ls\n",
    "model?\n", "model??\n", "?model\n", "%%bash\n",
])
def test_ipython_lines(line):
    assert is_ipython_line(line)


@pytest.mark.parametrize("line", [
    "x = 1\n", "a != b\n", "x %= 3\n", "y = x % 2\n", "print('what?')\n", "z = 1  # why?\n", "\n",
])
def test_python_lines_are_left_alone(line):
    assert not is_ipython_line(line)


def test_placeholders_keep_every_line_and_indentation():
    lines = source_lines("%load_ext autoreload\nfor i in range(2):\n    !echo $i \\\n        more\n    x = i\nmodel?")
    out = python_lines(lines)
    assert out == ["pass\n", "for i in range(2):\n", "    pass\n", "    pass\n", "    x = i\n", "pass\n"]
    compile("".join(out), "cell", "exec")


def test_percent_time_keeps_the_statement_at_its_columns():
    [line] = python_lines(["    %timeit y = f(x)\n"])
    assert line == "    pass;   y = f(x)\n"
    assert line.index("f(x)") == "    %timeit y = f(x)\n".index("f(x)")


def test_percent_time_of_a_compound_statement_is_a_plain_placeholder():
    assert python_lines(["%time for x in y: f(x)\n"]) == ["pass\n"]


def test_inside_a_string_or_brackets_nothing_is_replaced():
    text = 's = """\n%not a magic\n!nor this\n"""\nvalues = [\n    1,\n]\n'
    assert "".join(python_lines(source_lines(text))) == text


def test_cell_magics():
    assert python_lines(["%%bash\n", "echo hi\n", "ls"]) == ["\n", "\n", "\n"]
    assert python_lines(["%%time\n", "y = f(x)\n"]) == ["\n", "y = f(x)\n"]


def test_cells_join_in_order_and_map_back():
    book = read_notebook(notebook("import torch\n", "x = 1\ny = 2", "z = 3\n", markdown_first=True))
    assert book.python == "import torch\nx = 1\ny = 2\nz = 3\n"
    assert [book.locate(line) for line in (1, 2, 3, 4)] == [(2, 1), (3, 1), (3, 2), (4, 1)]
    assert book.locate(9) == (4, 6)  # past the end: the last cell


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON"),
    ("[]", "not a Jupyter notebook"),
    (json.dumps({"nbformat": 3, "worksheets": []}), "format 3 is not supported"),
    (json.dumps({"nbformat": 4}), "no 'cells'"),
    (json.dumps({"nbformat": 4, "cells": [], "metadata": {"language_info": {"name": "R"}}}), "not a Python notebook"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": 3}]}), "cell 1: 'source'"),
])
def test_what_cannot_be_linted_says_why(text, message):
    with pytest.raises(NotebookError, match=message):
        read_notebook(text)


def test_unchanged_program_writes_the_same_text():
    text = notebook("%pylab\nimport torch\n", "x = 1")
    book = read_notebook(text)
    assert write_cells(book, book.python).text == text


def test_a_changed_line_goes_back_in_its_cell_in_the_file_style():
    text = notebook("!nvidia-smi\nimport torch  # café\n", "x = torch.ones(1)\ny = x.item()", ensure_ascii=True)
    book = read_notebook(text)
    new = write_cells(book, book.python.replace("x.item()", "x.détach()"))
    assert new.changed == [(2, "x = torch.ones(1)\ny = x.item()", "x = torch.ones(1)\ny = x.détach()")]
    assert '"y = x.d\\u00e9tach()"' in new.text  # the file escapes non-ASCII: so does the new source
    assert json.loads(new.text)["cells"][0]["source"] == ["!nvidia-smi\n", "import torch  # café\n"]
    assert new.text == json.dumps(json.loads(new.text), indent=1) + "\n"
    plain = read_notebook(notebook("y = 1\n"))  # nothing tells: as nbformat, non-ASCII as is
    assert '"y = \u00e9"' not in write_cells(plain, "y = é\n").text


def test_string_sources_and_compact_files_keep_their_form():
    text = notebook("x = 1\n", indent=None, as_string=True)
    book = read_notebook(text)
    new = write_cells(book, "x = 2\n").text
    assert new == text.replace('"x = 1\\n"', '"x = 2\\n"')


def test_inserted_lines_join_the_cell_before_them():
    text = notebook("import torch\n", "x = 1\n")
    book = read_notebook(text)
    new = write_cells(book, "import torch\nimport syncfree\nx = 1\n")
    assert [cell["source"] for cell in json.loads(new.text)["cells"]] == [["import torch\n", "import syncfree\n"], ["x = 1\n"]]


def test_a_fix_that_changes_a_magic_is_refused():
    book = read_notebook(notebook("%matplotlib inline\nx = 1\n"))
    with pytest.raises(NotebookError, match="IPython line"):
        write_cells(book, "x = 1\n")


def test_crlf_files_and_empty_sources():
    text = notebook("", "x = 1\n").replace("\n", "\r\n")
    book = read_notebook(text)
    new = write_cells(book, "y = 0\nx = 1\n").text  # the insertion goes to the first cell, empty before
    assert json.loads(new)["cells"][0]["source"] == ["y = 0\n"]
    assert "\n" not in new.replace("\r\n", "")
    assert set(source_spans(new)) == {0, 1}


def test_an_empty_list_source_takes_the_file_layout():
    for indent in (1, None):
        text = notebook("", "x = 1\n", indent=indent)
        new = write_cells(read_notebook(text), "y = 0\nx = 1\n").text
        assert json.loads(new)["cells"][0]["source"] == ["y = 0\n"]
        assert new == json.dumps(json.loads(new), indent=indent) + ("\n" if indent is not None else "")


def test_random_notebooks_round_trip():
    """Seeded random cells: placeholders keep every line, an unchanged program writes the same
    bytes, a changed line reads back and every other key of every cell stays as it was."""
    import random

    rng = random.Random(1)
    pieces = ["x = 1", "%time y = 2", "!ls", "for i in range(3):", "    z = i", "    %env A=1", "s = '''",
              "%in string", "'''", "", "model?", "%%bash", "# comment", "q = (1,", " 2)", "w = 'é'"]
    for _ in range(300):
        cells = []
        for _ in range(rng.randint(0, 4)):
            source = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) + rng.choice(["", "\n"])
            kind = rng.choice(["code", "code", "markdown", "raw"])
            cell = {"cell_type": kind, "metadata": {}, "source": source_lines(source) if rng.random() < 0.8 else source}
            if kind == "code":
                cell.update(outputs=[{"output_type": "stream", "name": "stdout", "text": ["é\n"]}], execution_count=3)
            cells.append(cell)
        data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        text = json.dumps(data, indent=rng.choice([1, 2, None]), ensure_ascii=rng.random() < 0.5)
        book = read_notebook(text)
        assert [len(c.python) for c in book.cells] == [len(c.lines) for c in book.cells]
        assert write_cells(book, book.python).text == text
        lines = book.python.split("\n")
        targets = [i for i, line in enumerate(lines) if line == "x = 1"]
        if not targets:
            continue
        lines[rng.choice(targets)] = "x = 2  # noqa"
        new = write_cells(book, "\n".join(lines)).text
        assert read_notebook(new).python == "\n".join(lines)
        for before, after in zip(data["cells"], json.loads(new)["cells"]):
            assert {k: v for k, v in before.items() if k != "source"} == {k: v for k, v in after.items() if k != "source"}
