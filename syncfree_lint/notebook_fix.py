"""Fixing a notebook: fix its joined program as any file, then write the cells back.

The program is re-linted after each pass as a one-cell notebook under the notebook's name, so
it is judged exactly as the notebook was (same module name, same project); the edits are in
program lines, and ``notebook_write`` puts the result back into the cells.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, List, Tuple

from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.fixes.apply import FileFix, fix_text
from syncfree_lint.notebook import one_cell_notebook, place_in_cells, read_notebook
from syncfree_lint.notebook_write import Rewritten, write_cells

Lint = Callable[[str, str], List[Diagnostic]]


def fix_notebook(path: str, text: str, lint: Lint, applicable: Callable[[Diagnostic], bool]) -> Tuple[FileFix, Rewritten]:
    """(the program's fix, the notebook rewritten); raises NotebookError when the file is not a
    notebook that can be linted, or a fix would change an IPython line."""
    notebook = read_notebook(text)
    fixed = fix_text(path, notebook.python, lambda p, program: lint(p, one_cell_notebook(program)), applicable)
    rewritten = write_cells(notebook, fixed.fixed) if fixed.changed else Rewritten(text)
    unplaced = [dataclasses.replace(d, cell=None, cell_start=0) for d in fixed.applied]
    fixed.applied = place_in_cells(unplaced, lambda _: text)
    return fixed, rewritten
