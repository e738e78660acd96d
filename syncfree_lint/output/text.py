"""flake8-style text: ``path:line:col: CODE [*] message``, and the summary line of a run.

``[*]`` marks a finding whose fix would apply with the options given, as ruff does: a safe fix
always, an unsafe one only under ``--unsafe-fixes``.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Sequence, Tuple

from syncfree_lint.diagnostic import Diagnostic


def has_fix(d: Diagnostic, applicability: str) -> bool:
    """``d`` carries a fix with edits of this applicability ("safe", "unsafe" or "display")."""
    return d.fix is not None and bool(d.fix.edits) and d.fix.applicability == applicability


def marked(d: Diagnostic, unsafe_fixes: bool) -> bool:
    """Would ``--fix`` (with ``--unsafe-fixes`` when given) apply ``d``'s fix?"""
    return has_fix(d, "safe") or (unsafe_fixes and has_fix(d, "unsafe"))


def format_text(diagnostics: Iterable[Diagnostic], show_reach: bool = False, unsafe_fixes: bool = False) -> str:
    out = []
    for d in diagnostics:
        out.append(d.format(marked(d, unsafe_fixes)) + "\n")
        if show_reach:
            out.append(format_reach(d))
    return "".join(out)


def format_reach(diagnostic: Diagnostic) -> str:
    """``    reached: train.py:88 step loop -> train.py:92 train_step() -> ...`` (empty when the
    finding has no chain, e.g. SFL000)."""
    if not diagnostic.reach:
        return ""
    chain = " -> ".join(f"{where} {what}" for where, what in diagnostic.reach)
    return f"    reached: {chain}\n"


def fix_counts(diagnostics: Sequence[Diagnostic]) -> Tuple[int, int]:
    """(findings with a safe fix, findings with only an unsafe one)."""
    return (sum(1 for d in diagnostics if has_fix(d, "safe")), sum(1 for d in diagnostics if has_fix(d, "unsafe")))


def summary_line(diagnostics: Sequence[Diagnostic], unsafe_fixes: bool) -> str:
    """``Found 5 findings. [*] 2 fixable with --fix; 1 more with --unsafe-fixes`` ('' when clean)."""
    if not diagnostics:
        return ""
    count = len(diagnostics)
    line = f"Found {count} finding{'' if count == 1 else 's'}."
    safe, unsafe = fix_counts(diagnostics)
    if unsafe_fixes:
        safe, unsafe = safe + unsafe, 0
    if safe:
        line += f" [*] {safe} fixable with --fix" + (" --unsafe-fixes" if unsafe_fixes else "")
        if unsafe:
            line += f"; {unsafe} more with --unsafe-fixes"
    elif unsafe:
        line += f" {unsafe} fixable with --unsafe-fixes"
    shown = sum(1 for d in diagnostics if has_fix(d, "display"))
    if shown:
        line += f" {shown} with a suggestion (`--diff --suggestions`; never applied)"
    return line + "\n"


def only_unsafe_note(diagnostics: Sequence[Diagnostic], unsafe_fixes: bool) -> str:
    """For ``--fix``/``--diff``: a line when every available fix is unsafe and not asked for."""
    safe, unsafe = fix_counts(diagnostics)
    if unsafe_fixes or safe or not unsafe:
        return ""
    return f"syncfree-lint: no safe fixes; {unsafe} available with --unsafe-fixes\n"


def format_statistics(diagnostics: List[Diagnostic]) -> str:
    """One line per code, most frequent first: ``count  CODE  [*N fixable] message``.

    ``[*N fixable]``: N of them have a safe fix (``--fix``); ``M with --unsafe-fixes``: M more have
    a fix that may change behaviour. Counting fixes needs them built (the CLI does that)."""
    counts = Counter(d.code for d in diagnostics)
    safe = Counter(d.code for d in diagnostics if has_fix(d, "safe"))
    unsafe = Counter(d.code for d in diagnostics if has_fix(d, "unsafe"))
    first: Dict[str, str] = {}
    for d in diagnostics:
        first.setdefault(d.code, d.message)
    lines = []
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        parts = ([f"*{safe[code]} fixable"] if safe[code] else []) + ([f"{unsafe[code]} with --unsafe-fixes"] if unsafe[code] else [])
        tag = f"[{', '.join(parts)}] " if parts else ""
        lines.append(f"{count:<6} {code} {tag}{first[code]}")
    return "".join(line + "\n" for line in lines)
