"""Notebook documents in the editor server (LSP 3.17 ``notebookDocument/*``).

The client syncs a notebook as its cells' text documents (pygls keeps them in the workspace).
The Python code cells are joined in order into one notebook text and linted under the
notebook's path, exactly as the command line lints the saved file
(``syncfree_lint.notebook``); each finding is published on the URI of the cell it is in, at
its line in that cell. Every Python cell gets a publish (an empty one clears old findings), and
a cell that left the notebook is cleared too.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from syncfree_lint.diagnostic import Diagnostic, Edit
from syncfree_lint.lsp.session import Action, fix_action, noqa_action, overlaps
from syncfree_lint.noqa_edit import split_lines
from syncfree_lint.notebook import notebook_text

#: the notebooks the server asks to be synced: Jupyter files, their Python cells
NOTEBOOK_PATTERN = "**/*.ipynb"
CODE_CELL = 2  # NotebookCellKind.Code


def sync_options(types: Any) -> Any:
    """``notebookDocumentSync`` for the server's capabilities."""
    return types.NotebookDocumentSyncOptions(
        notebook_selector=[types.NotebookDocumentFilterWithNotebook(
            notebook=types.NotebookDocumentFilterPattern(pattern=NOTEBOOK_PATTERN),
            cells=[types.NotebookCellLanguage(language="python")],
        )],
        save=True,
    )


def python_cells(workspace: Any, notebook: Any) -> List[Tuple[str, str]]:
    """(cell URI, text) of the notebook's Python code cells, in order."""
    out = []
    for cell in notebook.cells or []:
        if int(getattr(cell.kind, "value", cell.kind)) != CODE_CELL:
            continue
        document = workspace.get_text_document(cell.document)
        language = getattr(document, "language_id", None) or "python"
        if language == "python":
            out.append((cell.document, document.source))
    return out


def in_cell(d: Diagnostic) -> Diagnostic:
    """A notebook finding in its cell's lines, its fix's edits too (the cell is ``d.cell``)."""
    from dataclasses import replace

    shift = d.cell_start
    fix = d.fix
    if fix is not None:
        edits = tuple(Edit((e.start[0] - shift, e.start[1]), (e.end[0] - shift, e.end[1]), e.content) for e in fix.edits)
        fix = replace(fix, edits=edits)
    return replace(d, line=d.line - shift, end_line=None if d.end_line is None else d.end_line - shift,
                   cell=None, cell_start=0, fix=fix)


def cell_actions(found: List[Diagnostic], cells: List[Tuple[str, str]], cell_uri: str, first_line: int,
                 last_line: int) -> List[Action]:
    """Quick fixes for the findings of one cell on lines [first_line, last_line] (1-based, in the
    cell): a fix whose edits all stay in the cell, and a ``# noqa`` comment."""
    uris = [uri for uri, _ in cells]
    if cell_uri not in uris:
        return []
    number, text = uris.index(cell_uri) + 1, dict(cells)[cell_uri]
    height = len(split_lines(text))
    out: List[Action] = []
    for d in found:
        if d.cell != number or d.code in ("SFL000", "SFL001"):
            continue
        moved = in_cell(d)
        if not overlaps(moved, first_line, last_line):
            continue
        fix = fix_action(moved)
        if fix is not None and all(1 <= e.start[0] <= e.end[0] <= height for e in fix.edits):
            out.append(fix)
        noqa = noqa_action(moved, text)
        if noqa is not None:
            out.append(noqa)
    return out


def by_cell(found: List[Diagnostic], cells: List[Tuple[str, str]]) -> Dict[str, List[Diagnostic]]:
    """The findings of the joined notebook per cell URI (every cell present, maybe empty); a
    finding's ``line`` becomes its line in the cell (its fix's edits too, ``in_cell``); its reach
    keeps ``path:cell N:line`` links (N counts these cells). Findings with no cell (a bad notebook: it
    cannot be, the server built it) go to the first cell."""
    out: Dict[str, List[Diagnostic]] = {uri: [] for uri, _ in cells}
    if not cells:
        return out
    for d in found:
        index = (d.cell or 1) - 1
        out[cells[min(max(index, 0), len(cells) - 1)][0]].append(in_cell(d))
    return out


class NotebookSync:
    """What the server remembers per notebook: the cell URIs it last published to."""

    def __init__(self, lint: Callable[[str, str, str], List[Diagnostic]],
                 publish: Callable[[str, List[Diagnostic], str, Sequence[str]], None]) -> None:
        self._lint = lint  # (key, path, text) -> findings
        self._publish = publish  # (cell uri, findings, cell text, the notebook's Python cell URIs)
        self.cells: Dict[str, List[str]] = {}
        self.found: Dict[str, Tuple[List[Tuple[str, str]], List[Diagnostic]]] = {}  # last lint, per notebook

    def refresh(self, workspace: Any, notebook_uri: str, path: Optional[str]) -> None:
        """Lint the notebook as it is in the editor and publish per cell."""
        notebook = workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook is None:
            return
        cells = python_cells(workspace, notebook)
        name = path or os.path.abspath("untitled.ipynb")
        found = self._lint(notebook_uri, name, notebook_text([text for _, text in cells]))
        self.found[notebook_uri] = (cells, found)
        texts = dict(cells)
        uris = [uri for uri, _ in cells]
        for uri, diagnostics in by_cell(found, cells).items():
            self._publish(uri, diagnostics, texts[uri], uris)
        for gone in sorted(set(self.cells.get(notebook_uri, [])) - set(texts)):
            self._publish(gone, [], "", uris)
        self.cells[notebook_uri] = uris

    def actions(self, workspace: Any, cell_uri: str, first_line: int, last_line: int) -> List[Action]:
        """Quick fixes for a cell, from the last lint of its notebook when the cells are unchanged."""
        notebook = workspace.get_notebook_document(cell_uri=cell_uri)
        if notebook is None or notebook.uri not in self.found:
            return []
        cells, found = self.found[notebook.uri]
        if cells != python_cells(workspace, notebook):  # edited since: wait for the next lint
            return []
        return cell_actions(found, cells, cell_uri, first_line, last_line)

    def close(self, notebook_uri: str) -> None:
        self.found.pop(notebook_uri, None)
        for uri in self.cells.pop(notebook_uri, []):
            self._publish(uri, [], "", [])
