"""SFL001: a bug in one rule, reported for the file it met."""
from __future__ import annotations

from syncfree_lint.rules.base import MetaRule


class InternalError(MetaRule):
    code = "SFL001"
    name = "internal-error"
    messages = {
        "default": "internal error in a rule",
        "rule": "internal error in rule {code}: {error} (other rules still ran; please report this)",
        "analysis": "internal error: {error} (please report this)",
    }
    doc = """
## What it does
Reports a bug in syncfree-lint: one rule raised an exception on this file. The other rules
still ran on the file, and the other files were linted. The exit status is 2.

## Why it matters
It means a rule may have missed findings in this file. Please report it with the file.

## Example
(none: this is the tool's own error)

## Use instead
Nothing to change in your code; `--ignore SFL001` hides it while a fix is on its way.

## Fix safety
No fix.
"""
