"""A fix as the rules describe it: libcst nodes to replace and statements to add after.

Neutral data shared by the layers: rules and ``fixes`` build plans, ``analysis.summarize`` turns
them into text edits (``diagnostic.Edit``); it imports nothing of the package.

Rules build replacement code with libcst (``cst.Module([]).code_for_node(new_node)``); the
engine turns a plan into text edits once positions are known. ``build`` runs after the whole
file was walked, so a plan can depend on everything in the file (e.g. which imports to move).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple, Union

import libcst as cst

_EMPTY = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    """Source text of a (new or existing) libcst node."""
    return _EMPTY.code_for_node(node)


@dataclass(frozen=True)
class Replace:
    node: cst.CSTNode
    statement: Optional[cst.CSTNode]
    text: str


@dataclass(frozen=True)
class InsertAfter:
    """A new line after ``statement`` (at its indentation level: top-level imports only)."""

    statement: cst.CSTNode
    text: str


@dataclass(frozen=True)
class Guard:
    """Put one single-line ``statement`` under ``if <test>:`` (a block one level deeper); with
    ``test`` empty, only indent it one level (a later line of the block a ``Guard`` opened)."""

    statement: cst.CSTNode
    test: str = ""


Part = Union[Replace, InsertAfter, Guard]


@dataclass(frozen=True)
class Declined:
    """A fix the model could not prove keeps behaviour; ``--show-fixes`` prints the reason.
    ``wants``: dotted names of functions and classes other files define whose facts could decide
    it (the run then teaches them, ``analysis.run_kinds``)."""

    reason: str
    wants: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Suggested:
    """A fix declined for ``reason`` that has a display-only form: ``parts`` remove the sync but
    change what the program shows (a value logged at an interval instead of every step). Shown
    by ``--show-fixes``, ``--diff --suggestions`` and editors, never applied by ``--fix``."""

    reason: str
    title: str
    parts: Sequence["Part"]


@dataclass
class FixPlan:
    title: str
    applicability: str  # "safe" | "unsafe"
    build: Callable[[], Union[Sequence[Part], Declined, Suggested, None]]  # None / Declined: no fix after all
    subject: object = None  # what the fix is about (a metric site), for plans that span the file
