"""``--show-source``: each finding followed by its source line and a caret under its column."""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.noqa_edit import split_lines
from syncfree_lint.output.text import format_reach, marked


def source_excerpt(line_text: str, col: int) -> str:
    """The line, then a caret under 1-based ``col`` (tabs kept, so the caret lines up)."""
    body = line_text.rstrip("\r\n")
    lead = "".join(ch if ch == "\t" else " " for ch in body[: max(col - 1, 0)])
    return f"{body}\n{lead}^\n"


def format_with_source(diagnostics: Iterable[Diagnostic], text_of: Callable[[str], Optional[str]],
                       show_reach: bool = False, unsafe_fixes: bool = False) -> str:
    out = []
    lines_of = {}
    for d in diagnostics:
        out.append(d.format(marked(d, unsafe_fixes)) + "\n")
        if d.path not in lines_of:
            text = text_of(d.path)
            lines_of[d.path] = split_lines(text) if text is not None else []
        lines = lines_of[d.path]
        if 0 < d.line <= len(lines):
            out.append(source_excerpt(lines[d.line - 1], d.col))
        if show_reach:
            out.append(format_reach(d))
    return "".join(out)
