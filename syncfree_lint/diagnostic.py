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
    """A rewrite attached to a diagnostic; ``applicability`` is "safe" or "unsafe"."""

    title: str
    applicability: str = "safe"
    edits: Tuple[Edit, ...] = ()


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

    def format(self, marked: bool = False) -> str:
        """flake8's shape; ``marked`` adds ruff's ``[*]`` after the code (a fix would apply)."""
        mark = " [*]" if marked else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code}{mark} {self.message}"
