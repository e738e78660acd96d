"""flake8-style text: ``path:line:col: CODE message``."""
from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List

from syncfree_lint.diagnostic import Diagnostic


def format_text(diagnostics: Iterable[Diagnostic], show_reach: bool = False) -> str:
    if not show_reach:
        return "".join(d.format() + "\n" for d in diagnostics)
    return "".join(d.format() + "\n" + format_reach(d) for d in diagnostics)


def format_reach(diagnostic: Diagnostic) -> str:
    """``    reached: train.py:88 step loop -> train.py:92 train_step() -> ...`` (empty when the
    finding has no chain, e.g. SFL000)."""
    if not diagnostic.reach:
        return ""
    chain = " -> ".join(f"{where} {what}" for where, what in diagnostic.reach)
    return f"    reached: {chain}\n"


def format_statistics(diagnostics: List[Diagnostic]) -> str:
    """One line per code, most frequent first: ``count  CODE  [*N fixable] message``.

    ``[*N fixable]``: N of them have a safe fix (``--fix``); ``M with --unsafe-fixes``: M more have
    a fix that may change behaviour. Counting fixes needs them built (the CLI does that)."""
    counts = Counter(d.code for d in diagnostics)
    safe = Counter(d.code for d in diagnostics if d.fix is not None and d.fix.edits and d.fix.applicability == "safe")
    unsafe = Counter(d.code for d in diagnostics if d.fix is not None and d.fix.edits and d.fix.applicability != "safe")
    first: Dict[str, str] = {}
    for d in diagnostics:
        first.setdefault(d.code, d.message)
    lines = []
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        parts = ([f"*{safe[code]} fixable"] if safe[code] else []) + ([f"{unsafe[code]} with --unsafe-fixes"] if unsafe[code] else [])
        tag = f"[{', '.join(parts)}] " if parts else ""
        lines.append(f"{count:<6} {code} {tag}{first[code]}")
    return "".join(line + "\n" for line in lines)
