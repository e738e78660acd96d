"""Jupyter notebooks (nbformat 4) read as one Python program, and findings placed back in cells.

The code cells are joined in order into one module, so a training loop spread over cells is
one step loop, as it is when the kernel runs them top to bottom. Every cell keeps its line
count: an IPython line that is not Python (``%magic``, ``!shell``, ``x = !cmd``, ``obj?``) is
replaced by ``pass`` at its indentation, and a cell magic (``%%bash``) blanks its cell, except
``%%time``-like magics whose body is Python (only their first line is blanked), and
``%time stmt`` becomes ``pass; stmt`` with ``stmt`` at its own columns. A finding at
line L of the program is therefore in the cell whose lines hold L, at the same column, and
``Notebook.locate`` turns L into (cell number, line in the cell).

Cell numbers count every cell of the file (markdown too), from 1: the N-th cell a viewer shows.
Only the ``json`` module reads the file; nothing here depends on nbformat.
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from syncfree_lint.diagnostic import Diagnostic

SUFFIX = ".ipynb"
#: cell magics whose body is Python run by the kernel; their first line alone is not Python
PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_ASSIGN_MAGIC = re.compile(r"^[ \t]*[A-Za-z_][\w.,\[\] \t]*=[ \t]*[!%]")
#: a line magic whose argument is a statement: ``%time loss = step(x)``
_TIMED = re.compile(r"^[ \t]*%(?:time|timeit|prun)[ \t]+(?=[^-\s])")
#: statements that cannot follow ``pass;`` on one line
_COMPOUND = frozenset({"for", "while", "if", "with", "def", "class", "try", "async", "match"})
_CELL_WHERE = re.compile(r"^(?P<path>.*):cell (?P<cell>\d+):(?P<line>\d+)$")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


class NotebookError(Exception):
    """Not a notebook we can lint: invalid JSON, not nbformat 4, not Python. 1-based position."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


@dataclass(frozen=True)
class Cell:
    """One code cell: ``index`` in the file's ``cells`` (0-based), ``start``: lines of the
    program before it; ``lines``: its source as written; ``python``: the lines as linted."""

    index: int
    start: int
    lines: Tuple[str, ...]
    python: Tuple[str, ...]

    @property
    def number(self) -> int:
        return self.index + 1


@dataclass(frozen=True)
class Notebook:
    text: str
    cells: Tuple[Cell, ...]

    @property
    def python(self) -> str:
        return "".join(line for cell in self.cells for line in cell.python)

    def cell_at(self, line: int) -> Optional[Cell]:
        """The cell holding 1-based program line ``line`` (the last cell past the end)."""
        if not self.cells:
            return None
        starts = [cell.start for cell in self.cells]
        return self.cells[max(0, bisect.bisect_right(starts, line - 1) - 1)]

    def locate(self, line: int) -> Optional[Tuple[int, int]]:
        """(cell number, 1-based line in the cell) of program line ``line``."""
        cell = self.cell_at(line)
        return None if cell is None else (cell.number, line - cell.start)


def source_lines(source: str) -> List[str]:
    """``source`` split after each ``\\n`` (only ``\\n``: the notebook's own line breaks)."""
    lines = source.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    return out + ([lines[-1]] if lines[-1] else [])


def read_notebook(text: str) -> Notebook:
    """The notebook in ``text``; raises NotebookError when it cannot be linted as Python."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"notebook is not valid JSON: {exc.msg}", exc.lineno, exc.colno)
    except RecursionError:
        raise NotebookError("notebook is not valid JSON: nested too deeply")
    if not isinstance(data, dict) or "nbformat" not in data:
        raise NotebookError("not a Jupyter notebook (no 'nbformat' at the top level)")
    if data["nbformat"] != 4:
        raise NotebookError(f"notebook format {data['nbformat']!r} is not supported (only nbformat 4)")
    if "cells" not in data:
        raise NotebookError("not an nbformat 4 notebook (no 'cells')")
    language = _language(data.get("metadata"))
    if language not in (None, "python"):
        raise NotebookError(f"not a Python notebook (language: {language}); not linted")
    if not isinstance(data["cells"], list):
        raise NotebookError("notebook 'cells' is not a list")
    cells: List[Cell] = []
    start = 0
    for index, raw in enumerate(data["cells"]):
        if not isinstance(raw, dict) or raw.get("cell_type") != "code":
            continue
        source = raw.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"cell {index + 1}: 'source' is neither a string nor a list of strings")
        lines = tuple(source_lines(source))
        python = tuple(python_lines(lines))
        cells.append(Cell(index, start, lines, python))
        start += len(python)
    return Notebook(text, tuple(cells))


def _language(metadata: object) -> Optional[str]:
    if not isinstance(metadata, dict):
        return None
    for key in ("language_info", "kernelspec"):
        info = metadata.get(key)
        if isinstance(info, dict) and isinstance(info.get("name" if key == "language_info" else "language"), str):
            return str(info["name" if key == "language_info" else "language"]).lower()
    return None


def python_lines(lines: Sequence[str]) -> List[str]:
    """A cell's lines as Python: IPython-only lines replaced, one line for one, each ending in \\n."""
    out = [line if line.endswith("\n") else line + "\n" for line in lines]
    first = next((i for i, line in enumerate(out) if line.strip()), None)
    if first is not None and out[first].lstrip().startswith("%%"):
        name = out[first].lstrip()[2:].split(None, 1)[0] if out[first].strip() != "%%" else ""
        blank = range(first, first + 1) if name in PYTHON_BODY_MAGICS else range(first, len(out))
        for i in blank:
            out[i] = "\n"
        return out
    state = _State()
    continued_magic: Optional[str] = None  # the indentation of a magic whose line ends in a backslash
    for i, line in enumerate(out):
        if continued_magic is not None:
            out[i] = continued_magic + "pass\n"
            continued_magic = continued_magic if line.rstrip("\r\n").endswith("\\") else None
            continue
        if state.fresh() and is_ipython_line(line):
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            timed = _TIMED.match(line)
            if timed and line[timed.end():].split(None, 1)[0].rstrip(":") not in _COMPOUND:
                # ``%time <statement>``: the statement is linted, at its own columns
                out[i] = indent + "pass;" + " " * (timed.end() - len(indent) - 5) + line[timed.end():]
                state.feed(out[i])
                continue
            out[i] = indent + "pass\n"
            continued_magic = indent if line.rstrip("\r\n").endswith("\\") else None
            continue
        state.feed(line)
    return out


def is_ipython_line(line: str) -> bool:
    """A line the kernel runs that is not Python: magic, shell escape, help, or an assignment of one."""
    stripped = line.strip()
    if not stripped:
        return False
    if stripped[0] in "%!?":
        return True
    if stripped.endswith("?") and not any(ch in stripped for ch in "#'\""):
        return True
    return bool(_ASSIGN_MAGIC.match(line))


class _State:
    """Just enough of Python's lexer to know whether a line starts a new statement: open
    brackets, an open triple-quoted string, a backslash continuation."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: Optional[str] = None
        self.backslash = False

    def fresh(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.backslash

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        self.backslash = False
        while i < n:
            if self.quote is not None:
                if line[i] == "\\":
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                if len(self.quote) == 1 and line[i] == "\n":
                    self.quote = None  # an unclosed one-line string: Python reports it
                i += 1
                continue
            ch = line[i]
            if ch == "#":
                break
            if ch in "'\"":
                self.quote = ch * 3 if line.startswith(ch * 3, i) else ch
                i += len(self.quote)
                continue
            if ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth = max(0, self.depth - 1)
            elif ch == "\\" and line[i + 1:].strip() == "":
                self.backslash = True
            i += 1


def notebook_text(sources: Sequence[str]) -> str:
    """An nbformat 4 notebook of these code cells: how cells that are not a file (an editor's,
    or a program being fixed) are linted under their notebook's name."""
    cells: List[Dict[str, object]] = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
        for source in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def one_cell_notebook(python: str) -> str:
    """A notebook holding an already joined program as its one cell (re-linted while fixing)."""
    return notebook_text([python])


def place_in_cells(diagnostics: Iterable[Diagnostic], read: Callable[[str], Optional[str]]) -> List[Diagnostic]:
    """``diagnostics`` with those in notebooks given their cell (``Diagnostic.cell``); ``read``
    returns a notebook's text (None when it cannot be read: left as they are)."""
    notebooks: Dict[str, Optional[Notebook]] = {}

    def notebook(path: str) -> Optional[Notebook]:
        if path not in notebooks:
            text = read(path)
            try:
                notebooks[path] = read_notebook(text) if text is not None else None
            except NotebookError:
                notebooks[path] = None
        return notebooks[path]

    out = []
    for d in diagnostics:
        book = notebook(d.path) if is_notebook(d.path) and d.cell is None else None
        cell = book.cell_at(d.line) if book is not None else None
        if cell is not None:
            reach = tuple((_where(where, notebook), what) for where, what in d.reach)
            d = dataclasses.replace(d, cell=cell.number, cell_start=cell.start, reach=reach)
        out.append(d)
    return out


def _where(where: str, notebook: Callable[[str], Optional[Notebook]]) -> str:
    """A reach link ``path:line`` in a notebook as ``path:cell N:line``."""
    path, _, line = where.rpartition(":")
    book = notebook(path) if is_notebook(path) and line.isdigit() else None
    place = book.locate(int(line)) if book is not None else None
    return f"{path}:cell {place[0]}:{place[1]}" if place is not None else where


def split_where(where: str) -> Tuple[str, Optional[int], int]:
    """(path, cell or None, line) of a reach link, ``path:line`` or ``path:cell N:line``."""
    match = _CELL_WHERE.match(where)
    if match:
        return match["path"], int(match["cell"]), int(match["line"])
    path, _, line = where.rpartition(":")
    return path, None, int(line) if line.isdigit() else 1


def read_file_text(path: str) -> Optional[str]:
    """A notebook's text (UTF-8, as nbformat writes it), or None."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
