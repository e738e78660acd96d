"""Writing a fixed program back into its notebook's cells, touching nothing else.

A fix edits the joined program (``syncfree_lint.notebook``). Its new lines are matched to the old
ones (``difflib``): an unchanged line is written back as it was in its cell (so a ``%magic``
comes back from its ``pass``), a changed or inserted line goes to the cell of the old line it
replaces or follows. A fix that would change or drop an IPython line is refused.

Only the ``source`` value of a changed cell is replaced in the file's text: outputs, metadata,
key order, indentation and escapes stay byte for byte. The new value is written in the old
one's style: a string stays a string; a list of lines keeps its indentation (nbformat writes
``indent=1``), its line breaks and, when the file escapes non-ASCII characters, its escapes.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Dict, List, Tuple

from syncfree_lint.notebook import Cell, Notebook, NotebookError, source_lines

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass
class Rewritten:
    """The notebook's new text and, per changed cell, (cell number, old source, new source)."""

    text: str
    changed: List[Tuple[int, str, str]] = field(default_factory=list)

    def diff(self, path: str) -> str:
        """A unified diff per changed cell, headed ``a/PATH:cell N``."""
        out: List[str] = []
        name = path.lstrip("/")
        for number, old, new in self.changed:
            out.extend(difflib.unified_diff(
                _ended(old).splitlines(keepends=True), _ended(new).splitlines(keepends=True),
                fromfile=f"a/{name}:cell {number}", tofile=f"b/{name}:cell {number}"))
        return "".join(out)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def write_cells(notebook: Notebook, python: str) -> Rewritten:
    """``notebook`` with its code cells holding the fixed ``python``; raises NotebookError when a
    fix would change an IPython line (nothing is written then)."""
    owners: List[Tuple[Cell, int]] = [(cell, i) for cell in notebook.cells for i in range(len(cell.python))]
    old = [cell.python[i] for cell, i in owners]
    new = source_lines(python)
    per_cell: Dict[int, List[str]] = {cell.index: [] for cell in notebook.cells}
    first = notebook.cells[0] if notebook.cells else None
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                cell, line = owners[i1 + k]
                per_cell[cell.index].append(_line(cell, line))
            continue
        for k in range(i1 + (j2 - j1), i2):  # old lines dropped
            _refuse_ipython(*owners[k])
        for k in range(j2 - j1):
            if tag == "replace" and i1 + k < i2:
                cell, line = owners[i1 + k]
                per_cell[cell.index].append(_restore(cell, line, new[j1 + k]))
                continue
            if i1 > 0:
                cell = owners[min(i1, len(owners)) - 1][0]
            elif first is not None:
                cell = first
            else:
                raise NotebookError("the notebook has no code cell to write the fix into")
            per_cell[cell.index].append(new[j1 + k])
    rewritten = Rewritten(notebook.text)
    spans = source_spans(notebook.text)
    for cell in sorted(notebook.cells, key=lambda c: c.index, reverse=True):
        old_source = "".join(cell.lines)
        new_source = "".join(_ended(line) for line in per_cell[cell.index])
        if old_source and not old_source.endswith("\n") and new_source.endswith("\n"):
            new_source = new_source[:-1]
        if new_source == old_source:
            continue
        start, end = spans[cell.index]
        value = _serialize(new_source, notebook.text, start, end)
        rewritten.text = rewritten.text[:start] + value + rewritten.text[end:]
        rewritten.changed.insert(0, (cell.number, old_source, new_source))
    return rewritten


def _line(cell: Cell, line: int) -> str:
    """The line as written in the cell (a magic, not its ``pass``)."""
    return cell.lines[line] if line < len(cell.lines) else cell.python[line]


def _is_replaced(cell: Cell, line: int) -> bool:
    return line < len(cell.lines) and _ended(cell.lines[line]) != cell.python[line]


def _refuse_ipython(cell: Cell, line: int) -> None:
    if _is_replaced(cell, line):
        raise NotebookError(f"a fix would change an IPython line in cell {cell.number} "
                            f"(line {line + 1}: {cell.lines[line].strip()!r}); not fixed")


def _restore(cell: Cell, line: int, new: str) -> str:
    """A changed line; a ``%time``-like prefix kept as ``pass;`` comes back as it was written."""
    if not _is_replaced(cell, line):
        return new
    placeholder, written = cell.python[line], cell.lines[line]
    prefix = placeholder[: len(placeholder) - len(placeholder.lstrip(" \t"))] + "pass;"
    if placeholder.startswith(prefix) and len(placeholder.strip()) > len("pass;"):
        body = len(prefix) + len(placeholder[len(prefix):]) - len(placeholder[len(prefix):].lstrip(" "))
        if new.startswith(placeholder[:body]):
            return written[:body] + new[body:]
    _refuse_ipython(cell, line)
    return new


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _members(text: str, i: int) -> Tuple[List[Tuple[str, int, int]], int]:
    """The (key, value start, value end) of the JSON object at ``text[i] == '{'``, and its end."""
    members: List[Tuple[str, int, int]] = []
    i = _skip(text, i + 1)
    if text[i] == "}":
        return members, i + 1
    while True:
        key, i = scanstring(text, i + 1)
        i = _skip(text, _skip(text, i) + 1)  # past ':'
        _, end = _DECODER.raw_decode(text, i)
        members.append((key, i, end))
        i = _skip(text, end)
        if text[i] == "}":
            return members, i + 1
        i = _skip(text, i + 1)  # past ','


def _elements(text: str, i: int) -> List[Tuple[int, int]]:
    """The (start, end) of each element of the JSON array at ``text[i] == '['``."""
    out: List[Tuple[int, int]] = []
    i = _skip(text, i + 1)
    if text[i] == "]":
        return out
    while True:
        _, end = _DECODER.raw_decode(text, i)
        out.append((i, end))
        i = _skip(text, end)
        if text[i] == "]":
            return out
        i = _skip(text, i + 1)


def source_spans(text: str) -> Dict[int, Tuple[int, int]]:
    """Cell index -> (start, end) of its ``source`` value in the notebook's text."""
    top, _ = _members(text, _skip(text, 0))
    cells = [(start, end) for key, start, end in top if key == "cells"][-1]
    spans: Dict[int, Tuple[int, int]] = {}
    for index, (start, _end) in enumerate(_elements(text, cells[0])):
        if text[start] == "{":
            found = [(s, e) for key, s, e in _members(text, start)[0] if key == "source"]
            if found:
                spans[index] = found[-1]
    return spans


def _serialize(source: str, text: str, start: int, end: int) -> str:
    """``source`` as a JSON value in the style of the old value ``text[start:end]``."""
    old = text[start:end]
    ascii_only = "\\u" in text and all(ord(ch) < 128 for ch in text)
    if old.startswith('"'):
        return json.dumps(source, ensure_ascii=ascii_only)
    lines = source_lines(source)
    if not lines:
        return "[]"
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in lines]
    newline = "\r\n" if "\r\n" in text else "\n"
    layout = re.match(r"\[\r?\n([ \t]*)", old)
    compact = "\n" not in text.rstrip("\r\n")  # the whole notebook on one line
    if layout is None and not compact and old.strip("[] \t") == "":  # an empty list: indent from the key's line
        layout_indent = _indent_unit(text)
        key_line = text.rfind("\n", 0, start) + 1
        key_indent = text[key_line: key_line + len(text[key_line:]) - len(text[key_line:].lstrip(" \t"))]
        return "[" + newline + ("," + newline).join(key_indent + layout_indent + item for item in items) \
               + newline + key_indent + "]"
    if layout is None:  # written on one line
        separator = ", " if re.search(r",\s", old) or len(_DECODER.decode(old)) < 2 else ","
        return "[" + separator.join(items) + "]"
    closing = re.search(r"\n([ \t]*)\]$", old)
    close_indent = closing.group(1) if closing else ""
    return "[" + newline + ("," + newline).join(layout.group(1) + item for item in items) + newline + close_indent + "]"


def _indent_unit(text: str) -> str:
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else " "

