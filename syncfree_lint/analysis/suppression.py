"""``# noqa`` comments, read exactly as flake8 reads them."""
from __future__ import annotations

import re

_PATTERN = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
_SEPARATOR = re.compile(r"[,\s]")


class NoqaFilter:
    """``# noqa`` and ``# noqa: SFL101,SFL2`` read as flake8 7 reads them: exactly one space
    after ``#``, ``noqa`` in any case, codes compared case-sensitively, by equality or prefix."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled  # off under flake8, which applies noqa itself

    def suppressed(self, line: str, code: str) -> bool:
        if not self.enabled or "noqa" not in line.lower():
            return False
        match = _PATTERN.search(line)
        if match is None:
            return False
        codes = match.group("codes")
        if not codes:
            return True
        wanted = tuple(c for c in (part.strip() for part in _SEPARATOR.split(codes)) if c)
        return code in wanted or code.startswith(wanted)
