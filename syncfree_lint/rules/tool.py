"""SFL0xx: codes the tool itself reports."""
from __future__ import annotations

from syncfree_lint.rules.base import MetaRule


class ParseError(MetaRule):
    code = "SFL000"
    name = "unreadable-file"
    message = "file could not be read or parsed"
    doc = """
## What it does
Reports a file that could not be linted: a syntax error, bytes that do not decode in the
file's encoding (PEP 263 cookie or UTF-8), a NUL byte, a file that vanished or cannot be
read, or nesting too deep to analyse. The position is where reading failed. The other files
are still linted.

## Why it matters
A file the linter cannot read is a file nobody checked. It is reported instead of being
skipped silently.

## Example
```python
def train(:
```

## Use instead
Fix the syntax, or exclude the file with `exclude` in `[tool.syncfree-lint]`.

## Fix safety
No fix.
"""


class InternalError(MetaRule):
    code = "SFL001"
    name = "internal-error"
    message = "internal error in a rule"
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


RULES = (ParseError, InternalError)
