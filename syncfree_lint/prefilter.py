"""Which files can hold a finding, judged from their text before any parse.

A file can hold a finding only if it holds a word some rule needs (``Rule.evidence``) or a word the
analysis starts from (a tensor or a step: ``knowledge.evidence``), or a configured step-function
name. A test module has no step of its own and nothing that runs per step imports it: only a rule
that reports outside steps (``Rule.step_only`` False) can fire there, and each of those needs one
of its own words. Files that fail either test are not parsed; a step that passes one of their
functions a tensor still has them read (``analysis.run_kinds``).
"""
from __future__ import annotations

import functools
import os
from typing import Iterable, Optional

from syncfree_lint.analysis.device import is_test_module
from syncfree_lint.knowledge.evidence import ANALYSIS_WORDS
from syncfree_lint.project import find_project_root
from syncfree_lint.rules import ALL_RULES

EVIDENCE = tuple(dict.fromkeys((*ANALYSIS_WORDS, *(word for rule in ALL_RULES for word in rule.evidence))))

OUTSIDE_STEP_EVIDENCE = tuple(dict.fromkeys(
    word for rule in ALL_RULES if not rule.step_only and rule.node_types for word in rule.evidence))


def could_hold_finding(text: str, step_functions: Iterable[str]) -> bool:
    """The cheap text pre-filter: False only when no rule could fire in this file."""
    if any(word in text for word in EVIDENCE):
        return True
    return any(name in text for name in step_functions)


def is_quiet_test_module(path: str, text: str) -> bool:
    """A test module (judged inside its project) that no rule reporting outside steps could fire in."""
    return not any(word in text for word in OUTSIDE_STEP_EVIDENCE) and is_test_in_project(path)


def is_test_in_project(path: str) -> bool:
    """``tests/...``, ``test_*.py``, ... relative to the file's project root, not to where the project sits."""
    root = _project_root(os.path.dirname(os.path.abspath(path)))
    return is_test_module(os.path.relpath(os.path.abspath(path), root) if root else path)


@functools.lru_cache(maxsize=4096)
def _project_root(folder: str) -> Optional[str]:
    return find_project_root(os.path.join(folder, "_"))
