"""Applying fixes: text edits, repeated passes, atomic writes.

A file is re-linted after each pass and fixed again until no fix applies (at most
``MAX_PASSES``). Overlapping edits are resolved deterministically: edits are taken in order of
position, then code, and one that overlaps an edit already taken waits for the next pass.
Nothing is written unless the text changed; a write goes to a temporary file in the same folder
that is renamed over the original (mode kept), after checking the file did not change on disk.
"""
from __future__ import annotations

import difflib
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Callable, List, Sequence, Tuple

from syncfree_lint.diagnostic import Diagnostic

MAX_PASSES = 10
_LINE_START = re.compile(r"\r\n|\r|\n")


def _offsets(text: str) -> List[int]:
    return [0] + [m.end() for m in _LINE_START.finditer(text)]


def _offset(starts: List[int], text: str, position: Tuple[int, int]) -> int:
    line, col = position
    if line - 1 >= len(starts):
        return len(text)
    return min(starts[line - 1] + col, len(text))


def apply_edits(text: str, diagnostics: Sequence[Diagnostic]) -> Tuple[str, List[Diagnostic]]:
    """Apply the fixes of ``diagnostics`` that do not overlap; returns (text, applied)."""
    starts = _offsets(text)
    chosen: List[Tuple[int, int, str]] = []
    applied: List[Diagnostic] = []
    taken: List[Tuple[int, int]] = []
    seen_edits = set()
    for diagnostic in sorted(diagnostics, key=lambda d: (d.line, d.col, d.code)):
        assert diagnostic.fix is not None
        spans = []
        for edit in diagnostic.fix.edits:
            start, end = _offset(starts, text, edit.start), _offset(starts, text, edit.end)
            spans.append((start, end, edit.content))
        new = [s for s in spans if s not in seen_edits]
        if any(_overlaps(s, t) for s in new for t in taken):
            continue  # next pass
        for span in new:
            seen_edits.add(span)
            taken.append((span[0], span[1]))
            chosen.append(span)
        applied.append(diagnostic)
    for start, end, content in sorted(chosen, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def _overlaps(a: Tuple[int, int, str], b: Tuple[int, int]) -> bool:
    if a[0] == a[1] or b[0] == b[1]:  # insertions only clash when strictly inside
        return b[0] < a[0] < b[1] or a[0] < b[0] < a[1]
    return a[0] < b[1] and b[0] < a[1]


@dataclass
class FileFix:
    path: str
    original: str
    fixed: str
    applied: List[Diagnostic] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.original.splitlines(keepends=True), self.fixed.splitlines(keepends=True),
            fromfile=f"a/{self.path.lstrip('/')}", tofile=f"b/{self.path.lstrip('/')}",
        ))


def fix_text(path: str, text: str, lint: Callable[[str, str], List[Diagnostic]], applicable: Callable[[Diagnostic], bool]) -> FileFix:
    """Lint, apply, re-lint until stable (bounded)."""
    result = FileFix(path, text, text)
    for _ in range(MAX_PASSES):
        fixable = [d for d in lint(path, result.fixed) if d.fix is not None and d.fix.edits and applicable(d)]
        if not fixable:
            break
        new_text, applied = apply_edits(result.fixed, fixable)
        if new_text == result.fixed:
            break
        result.fixed = new_text
        result.applied.extend(applied)
    return result


class ChangedOnDisk(Exception):
    """The file changed since it was read: refuse to overwrite someone's edit."""


def write_atomically(path: str, text: str, expected: bytes, encoding: str, bom: bool) -> None:
    """Replace ``path`` with ``text``, keeping its mode, if it still holds ``expected``."""
    with open(path, "rb") as handle:
        if handle.read() != expected:
            raise ChangedOnDisk(path)
    mode = os.stat(path).st_mode
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".syncfree-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write((b"\xef\xbb\xbf" if bom else b"") + text.encode(encoding))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode & 0o7777)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
