"""SFL000: a file that could not be read or parsed."""
from __future__ import annotations

from syncfree_lint.rules.base import MetaRule


class ParseError(MetaRule):
    code = "SFL000"
    name = "unreadable-file"
    messages = {
        "default": "file could not be read or parsed",
        "unreadable": "{reason}",  # the reader's reason: missing, not a regular file, undecodable, a NUL byte
        "syntax": "syntax error: {detail}",
        "too_deep_for_python": "file is nested too deeply to parse (Python's own parser gives up)",
        "python_rejects": "cannot parse: {detail}",
        "libcst_rejects": "libcst cannot parse this file (Python can): {detail}",
        "too_deep_for_libcst": "file is nested too deeply to parse",
        "libcst_failed": "could not parse: {detail}",
        "too_deep_to_analyse": "file is nested too deeply to analyse (recursion limit)",
    }
    invalid = ("import torch\n\ndef train(:\n",)
    valid = ("import torch\n\ndef train(loader):\n    pass\n",)
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
