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

from syncfree_lint.diagnostic import Diagnostic
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


def by_cell(found: List[Diagnostic], cells: List[Tuple[str, str]]) -> Dict[str, List[Diagnostic]]:
    """The findings of the joined notebook per cell URI (every cell present, maybe empty); a
    finding's ``line`` becomes its line in the cell; its fix is left out (edits are in program
    lines); its reach keeps ``path:cell N:line`` links (N counts these cells). Findings with no cell (a bad notebook: it
    cannot be, the server built it) go to the first cell."""
    out: Dict[str, List[Diagnostic]] = {uri: [] for uri, _ in cells}
    if not cells:
        return out
    from dataclasses import replace

    for d in found:
        index = (d.cell or 1) - 1
        uri = cells[min(max(index, 0), len(cells) - 1)][0]
        shift = d.cell_start
        moved = replace(d, line=d.line - shift, end_line=None if d.end_line is None else d.end_line - shift,
                        cell=None, cell_start=0, fix=None)
        out[uri].append(moved)
    return out


class NotebookSync:
    """What the server remembers per notebook: the cell URIs it last published to."""

    def __init__(self, lint: Callable[[str, str, str], List[Diagnostic]],
                 publish: Callable[[str, List[Diagnostic], str, Sequence[str]], None]) -> None:
        self._lint = lint  # (key, path, text) -> findings
        self._publish = publish  # (cell uri, findings, cell text, the notebook's Python cell URIs)
        self.cells: Dict[str, List[str]] = {}

    def refresh(self, workspace: Any, notebook_uri: str, path: Optional[str]) -> None:
        """Lint the notebook as it is in the editor and publish per cell."""
        notebook = workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook is None:
            return
        cells = python_cells(workspace, notebook)
        name = path or os.path.abspath("untitled.ipynb")
        found = self._lint(notebook_uri, name, notebook_text([text for _, text in cells]))
        texts = dict(cells)
        uris = [uri for uri, _ in cells]
        for uri, diagnostics in by_cell(found, cells).items():
            self._publish(uri, diagnostics, texts[uri], uris)
        for gone in sorted(set(self.cells.get(notebook_uri, [])) - set(texts)):
            self._publish(gone, [], "", uris)
        self.cells[notebook_uri] = uris

    def close(self, notebook_uri: str) -> None:
        for uri in self.cells.pop(notebook_uri, []):
            self._publish(uri, [], "", [])
