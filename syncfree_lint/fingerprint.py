"""A finding's identity that survives edits elsewhere in the file: baselines and SARIF.

The key of a finding is (path, enclosing scope's qualified name, code, the statement's text with
comments dropped and whitespace collapsed). Line numbers are not part of it, so lines inserted
above a finding do not change it. For a compound statement (``if``, ``for``, ``with``, ``def``...)
only its header counts, so an edit in its body does not change a finding in its condition.
"""
from __future__ import annotations

import ast
import hashlib
import io
import os
import tokenize
from typing import Dict, List, Optional, Sequence, Tuple

from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.noqa_edit import split_lines

Key = Tuple[str, str, str, str]  # (path, scope, code, statement)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
MODULE_SCOPE = "<module>"


def _position(node: ast.AST) -> Tuple[int, int]:
    """Where a block's first element starts (its decorators included; a match case's pattern)."""
    if not hasattr(node, "lineno"):
        node = node.pattern  # type: ignore[attr-defined]
    line = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])  # type: ignore[attr-defined]
    return line, (node.col_offset if line == node.lineno else 0)  # type: ignore[attr-defined]


class _Statement:
    __slots__ = ("start", "end", "scope")

    def __init__(self, start: Tuple[int, int], end: Tuple[int, int], scope: str) -> None:
        self.start, self.end, self.scope = start, end, scope


class StatementIndex:
    """Every statement of one file as a (start, end) span of (1-based line, 0-based char
    column), with the scope it sits in; headers only for compound statements."""

    def __init__(self, text: str) -> None:
        self.lines = split_lines(text)
        self.statements: List[_Statement] = []
        self._comments: Dict[int, int] = {}
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type == tokenize.COMMENT:
                    self._comments[token.start[0]] = token.start[1]
        except (tokenize.TokenError, SyntaxError):
            pass
        self._walk(tree.body, [])

    def _char_col(self, line: int, byte_col: int) -> int:
        if line > len(self.lines):
            return byte_col
        return len(self.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def _walk(self, body: Sequence[ast.stmt], scope: List[str]) -> None:
        for node in body:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
            start_col = node.col_offset if first == node.lineno else 0
            children = [getattr(node, name, None) for name in ("body", "orelse", "finalbody", "handlers", "cases")]
            blocks = [block for block in children if isinstance(block, list) and block]
            if blocks:  # compound: its header ends where its first block starts
                inner_line, inner_col = min(_position(block[0]) for block in blocks)
                end = (inner_line, self._char_col(inner_line, inner_col)) if inner_line == first else (inner_line, 0)
            else:
                end_line = node.end_lineno or node.lineno
                end = (end_line, self._char_col(end_line, node.end_col_offset or 0))
            here = ".".join(scope) or MODULE_SCOPE
            self.statements.append(_Statement((first, self._char_col(first, start_col)), end, here))
            inner_scope = scope + [node.name] if isinstance(node, _SCOPES) else scope
            for block in blocks:
                for child in block:
                    if isinstance(child, ast.ExceptHandler):
                        self._walk(child.body, inner_scope)
                    elif hasattr(ast, "match_case") and isinstance(child, ast.match_case):
                        self._walk(child.body, inner_scope)
                    else:
                        self._walk([child], inner_scope)

    def find(self, line: int, col: int) -> Optional[_Statement]:
        """The innermost statement holding (1-based line, 0-based char col); failing that, the
        innermost one whose lines hold ``line``."""
        best = None
        for statement in self.statements:
            if statement.start <= (line, col) < statement.end and (best is None or statement.start >= best.start):
                best = statement
        if best is None:
            for statement in self.statements:
                if statement.start[0] <= line <= statement.end[0] and (best is None or statement.start >= best.start):
                    best = statement
        return best

    def text(self, start: Tuple[int, int], end: Tuple[int, int]) -> str:
        parts = []
        for number in range(start[0], min(end[0], len(self.lines)) + 1):
            line = self.lines[number - 1].rstrip("\r\n")
            if number in self._comments:
                line = line[: self._comments[number]]
            lo = start[1] if number == start[0] else 0
            hi = end[1] if number == end[0] else len(line)
            parts.append(line[lo:hi])
        return " ".join(" ".join(parts).split())

    def scope_and_statement(self, line: int, col: int) -> Tuple[str, str]:
        statement = self.find(line, col)
        if statement is None:  # an unparsable file (SFL000): the physical line is all there is
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            return MODULE_SCOPE, " ".join(text.split())
        return statement.scope, self.text(statement.start, statement.end)


def relative_path(path: str, base: str) -> str:
    """``path`` relative to the folder ``base``, with ``/`` separators (as stored in baselines)."""
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(base))
    except ValueError:  # another drive on Windows
        rel = os.path.abspath(path)
    return rel.replace(os.sep, "/")


def keys_for(diagnostics: Sequence[Diagnostic], texts: "SourceTexts", base: str) -> List[Key]:
    """The key of each diagnostic, in order; paths relative to ``base``."""
    indexes: Dict[str, StatementIndex] = {}
    out: List[Key] = []
    for d in diagnostics:
        index = indexes.get(d.path)
        if index is None:
            index = indexes[d.path] = StatementIndex(texts.get(d.path) or "")
        scope, statement = index.scope_and_statement(d.line, max(d.col - 1, 0))
        out.append((relative_path(d.path, base), scope, d.code, statement))
    return out


def digest(key: Key) -> str:
    return hashlib.blake2b("\0".join(key).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def fingerprints(diagnostics: Sequence[Diagnostic], texts: "SourceTexts", base: str) -> List[str]:
    """``<hash of the key>:<n>``, n counting findings with the same key (1, 2, ...)."""
    seen: Dict[str, int] = {}
    out = []
    for key in keys_for(diagnostics, texts, base):
        value = digest(key)
        seen[value] = seen.get(value, 0) + 1
        out.append(f"{value}:{seen[value]}")
    return out


class SourceTexts:
    """Source texts by path, read once; a stdin buffer is given by name."""

    def __init__(self, given: Optional[Dict[str, str]] = None) -> None:
        self._texts: Dict[str, Optional[str]] = dict(given or {})
        self._programs: Dict[str, Optional[str]] = {}

    def get(self, path: str) -> Optional[str]:
        """The text findings' lines index: a notebook's joined program (``syncfree_lint.notebook``)."""
        if path not in self._texts:
            from syncfree_lint.source import SourceError, decode_source

            try:
                with open(path, "rb") as handle:
                    self._texts[path] = decode_source(handle.read())
            except (OSError, SourceError):
                self._texts[path] = None
        if path not in self._programs:
            self._programs[path] = self._texts[path]
            from syncfree_lint.notebook import NotebookError, is_notebook, read_notebook

            if is_notebook(path) and self._texts[path] is not None:
                try:
                    self._programs[path] = read_notebook(self._texts[path] or "").python
                except NotebookError:
                    self._programs[path] = None
        return self._programs[path]
