"""The data that flows from rules to reporters: small frozen dataclasses."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple


@dataclass(frozen=True)
class Edit:
    """Replace the text between two (line, col) positions (1-based line, 0-based col)."""

    start: Tuple[int, int]
    end: Tuple[int, int]
    content: str


@dataclass(frozen=True)
class Fix:
    """A rewrite attached to a diagnostic; ``applicability`` is "safe", "unsafe" or "display"
    (ruff's display-only level: a suggestion that changes what the program shows, never applied)."""

    title: str
    applicability: str = "safe"
    edits: Tuple[Edit, ...] = ()

    def applies(self, unsafe_fixes: bool, suggestions: bool = False) -> bool:
        """Would ``--fix`` (``--unsafe-fixes``) apply it; ``suggestions``: ``--diff --suggestions``."""
        if self.applicability == "display":
            return suggestions
        return self.applicability == "safe" or unsafe_fixes


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding. ``line`` is 1-based, ``col`` is 1-based (flake8's shape)."""

    path: str
    line: int
    col: int
    code: str
    message: str
    fix: Optional[Fix] = field(default=None, compare=False)
    end_line: Optional[int] = field(default=None, compare=False)
    end_col: Optional[int] = field(default=None, compare=False)
    guarded: bool = field(default=False, compare=False)
    reach: Tuple[Tuple[str, str], ...] = field(default=(), compare=False)  # (where, what) links: why it runs per step, outermost first
    fix_declined: Optional[str] = field(default=None, compare=False)  # why a rule's fix was not offered here
    # in a notebook (``syncfree_lint.notebook``): ``line`` stays the line of the joined program
    # (fixes and noqa use it); ``cell`` is the 1-based cell and ``cell_start`` the lines before it
    cell: Optional[int] = field(default=None, compare=False)
    cell_start: int = field(default=0, compare=False)

    @property
    def shown_line(self) -> int:
        """The line a reader looks for: in its cell for a notebook, else ``line``."""
        return self.line - self.cell_start

    @property
    def shown_end_line(self) -> int:
        return (self.end_line or self.line) - self.cell_start

    @property
    def where(self) -> str:
        """``path:line:col``, or ``path:cell N:line:col`` in a notebook."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.shown_line}:{self.col}"

    def format(self, marked: bool = False) -> str:
        """flake8's shape; ``marked`` adds ruff's ``[*]`` after the code (a fix would apply)."""
        mark = " [*]" if marked else ""
        return f"{self.where}: {self.code}{mark} {self.message}"
