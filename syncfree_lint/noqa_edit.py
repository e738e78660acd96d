"""Writing ``# noqa: CODE`` comments: ``--add-noqa`` and the editor's "suppress" action.

A code is added to the comment of the reported line. An existing ``# noqa: A1, B2`` keeps its
codes and gains the new ones; a bare ``# noqa`` already silences everything and is left alone;
any other comment on the line stays where it is and the directive follows it. A line whose end
sits inside a string or after a backslash continuation cannot carry a comment: it is skipped.
"""
from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple

# As flake8 reads it (and ``analysis/suppression.py``): the noqa word, then optionally ":" and codes.
_NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> List[str]:
    """Lines with their endings, split only where Python ends a line (not at form feeds)."""
    out, start = [], 0
    for match in _LINE_BREAK.finditer(text):
        out.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def _ending(line: str) -> Tuple[str, str]:
    body = line.rstrip("\r\n")
    return body, line[len(body):]


class CommentMap:
    """Where each physical line's comment starts, and which lines cannot take a new comment."""

    def __init__(self, text: str) -> None:
        self.comment_col: Dict[int, int] = {}  # 1-based line -> column of its ``#``
        self.closed: Set[int] = set()  # lines whose end is inside a string or continues with ``\``
        self.ok = True
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type == tokenize.COMMENT:
                    self.comment_col[token.start[0]] = token.start[1]
                elif token.type == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", None) == token.type:
                    self.closed.update(range(token.start[0], token.end[0]))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            self.ok = False
        for number, line in enumerate(split_lines(text), start=1):
            body, _ = _ending(line)
            if body.endswith("\\") and number not in self.comment_col:
                self.closed.add(number)


def merged_codes(existing: Iterable[str], new: Iterable[str]) -> List[str]:
    """Existing codes in their order, then the new ones sorted; no duplicates."""
    out: List[str] = []
    for code in list(existing) + sorted(set(new)):
        if code and code not in out:
            out.append(code)
    return out


def with_noqa(line: str, codes: Iterable[str], comment_col: Optional[int]) -> Optional[str]:
    """``line`` (with its ending) carrying ``# noqa`` for ``codes``; None when it already does."""
    codes = list(codes)
    body, ending = _ending(line)
    if comment_col is not None:
        comment = body[comment_col:]
        match = _NOQA.search(comment)
        if match is not None:
            if match.group("codes") is None:
                return None  # a noqa without codes silences every code already
            old = [c for c in re.split(r"[,\s]+", match.group("codes")) if c]
            merged = merged_codes(old, codes)
            if merged == old:
                return None
            start = comment_col + match.start()
            end = comment_col + match.start("codes") + len(match.group("codes"))
            return body[:start] + "# noqa: " + ", ".join(merged) + body[end:] + ending
    new = "# noqa: " + ", ".join(merged_codes([], codes))
    return body.rstrip() + "  " + new + ending


def add_noqa(text: str, wanted: Mapping[int, Iterable[str]]) -> Tuple[str, int, List[int]]:
    """(new text, directives written, lines skipped) for ``wanted``: 1-based line -> codes."""
    comments = CommentMap(text)
    lines = split_lines(text)
    written, skipped = 0, []
    for number in sorted(wanted):
        if number < 1 or number > len(lines) or not comments.ok or number in comments.closed:
            skipped.append(number)
            continue
        new = with_noqa(lines[number - 1], wanted[number], comments.comment_col.get(number))
        if new is not None and new != lines[number - 1]:
            lines[number - 1] = new
            written += 1
    return "".join(lines), written, skipped


def noqa_line(text: str, line: int, code: str) -> Optional[str]:
    """The text of ``line`` (1-based, without its ending) with ``code`` added to its noqa, or
    None when the line cannot take a comment or is silenced already."""
    comments = CommentMap(text)
    lines = split_lines(text)
    if not comments.ok or line < 1 or line > len(lines) or line in comments.closed:
        return None
    new = with_noqa(lines[line - 1], [code], comments.comment_col.get(line))
    return None if new is None else _ending(new)[0]
