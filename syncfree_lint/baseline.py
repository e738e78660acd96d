"""Baselines: record today's findings, then report only new ones.

``--write-baseline FILE`` stores one entry per finding key (``fingerprint.py``: path relative to
the baseline's folder, enclosing scope, code, normalized statement text) with a count for
duplicates. ``--baseline FILE`` drops findings whose key is in it, up to that count. Entries no
finding matches any more are *stale*; only entries of files that this run linted (or that no
longer exist) can be stale, so linting a few files with a whole project's baseline is fine.

The file is JSON, sorted, with one entry per line's worth of fields, so diffs of it are small::

    {"version": 1, "tool": "syncfree-lint",
     "entries": [{"path": "train.py", "scope": "train", "code": "SFL101",
                  "statement": "total += loss.item()", "count": 1}]}
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, List, Sequence, Tuple

from syncfree_lint.atomic import write_text_atomically
from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.fingerprint import Key, SourceTexts, keys_for, relative_path

VERSION = 1
#: never recorded: an internal error is a bug to report, not debt to keep
NOT_RECORDED = ("SFL001",)


class BaselineError(Exception):
    """The baseline file cannot be read or is not one; the CLI exits 2."""


def _folder(file: str) -> str:
    return os.path.dirname(os.path.abspath(file))


def render(counts: Counter) -> str:
    entries = [
        {"path": path, "scope": scope, "code": code, "statement": statement, "count": count}
        for (path, scope, code, statement), count in sorted(counts.items())
    ]
    body = ",\n".join("    " + json.dumps(entry, ensure_ascii=False, sort_keys=True) for entry in entries)
    return ('{\n  "version": %d,\n  "tool": "syncfree-lint",\n  "entries": [\n%s%s  ]\n}\n'
            % (VERSION, body, "\n" if entries else ""))


def write(file: str, diagnostics: Sequence[Diagnostic], texts: SourceTexts) -> int:
    """Record ``diagnostics`` in ``file`` (atomically); returns the number of findings stored."""
    kept = [d for d in diagnostics if d.code not in NOT_RECORDED]
    counts = Counter(keys_for(kept, texts, _folder(file)))
    write_text_atomically(file, render(counts))
    return len(kept)


def load(file: str) -> Counter:
    try:
        with open(file, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise BaselineError(f"--baseline: cannot read {file}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BaselineError(f"--baseline: {file} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), list):
        raise BaselineError(f"--baseline: {file} is not a syncfree-lint baseline (version {VERSION})")
    counts: Counter = Counter()
    for entry in data["entries"]:
        try:
            key = (entry["path"], entry["scope"], entry["code"], entry["statement"])
            count = int(entry.get("count", 1))
        except (TypeError, KeyError, ValueError):
            raise BaselineError(f"--baseline: {file}: bad entry {entry!r}") from None
        if not all(isinstance(part, str) for part in key) or count < 1:
            raise BaselineError(f"--baseline: {file}: bad entry {entry!r}")
        counts[key] += count
    return counts


@dataclass
class Filtered:
    diagnostics: List[Diagnostic]
    matched: int  # findings the baseline absorbed
    stale: int  # recorded findings that no longer occur
    stale_keys: List[Tuple[Key, int]]


def apply(file: str, diagnostics: Sequence[Diagnostic], texts: SourceTexts, linted: Iterable[str]) -> Filtered:
    """Drop the findings recorded in ``file``; count its entries that matched nothing."""
    allowed = load(file)
    base = _folder(file)
    keys = keys_for(diagnostics, texts, base)
    left = Counter(allowed)
    kept: List[Diagnostic] = []
    matched = 0
    for d, key in zip(diagnostics, keys):
        if left[key] > 0 and d.code not in NOT_RECORDED:
            left[key] -= 1
            matched += 1
        else:
            kept.append(d)
    seen = {relative_path(path, base) for path in linted}
    stale = [(key, n) for key, n in sorted(left.items())
             if n > 0 and (key[0] in seen or not os.path.exists(os.path.join(base, key[0])))]
    return Filtered(kept, matched, sum(n for _, n in stale), stale)
