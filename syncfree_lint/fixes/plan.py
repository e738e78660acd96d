"""Moved to ``syncfree_lint.edits`` (issue 20: ``analysis`` must not import ``fixes``); this
re-export keeps imports written before the move working until the branches in flight are merged."""
from __future__ import annotations

from syncfree_lint.edits import Declined, FixPlan, InsertAfter, Part, Replace, code

__all__ = ["Declined", "FixPlan", "InsertAfter", "Part", "Replace", "code"]
