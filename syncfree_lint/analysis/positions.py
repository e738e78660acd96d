"""Positions of findings without libcst's PositionProvider (which re-generates the whole file).

libcst statements and ``ast`` statements correspond one to one in source order, and ``ast``
parses ten times faster than libcst. So a finding's statement gets its line range from ``ast``,
and the node is found inside that range by its exact source text (libcst is lossless).
When the two trees disagree (syntax newer than this Python), PositionProvider is the fallback.
"""
from __future__ import annotations

import ast
import re
import sys
from typing import TYPE_CHECKING, Dict, Iterator, Optional, Sequence, Tuple

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from libcst.metadata import CodeRange

_NEWLINE = re.compile(r"\r\n|\r|\n")
Position = Tuple[int, int, int, int]  # line, col (1-based), end_line, end_col


def _cst_statements(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        else:
            yield statement
            yield from _cst_children(statement)


def _suite(node: Optional[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    if node is None:
        return
    if isinstance(node, cst.SimpleStatementSuite):
        yield from node.body
    elif isinstance(node, cst.IndentedBlock):
        yield from _cst_statements(node.body)


def _cst_children(statement: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield from _suite(getattr(statement, "body", None))
    if isinstance(statement, (cst.Try, cst.TryStar)):
        for handler in statement.handlers:
            yield from _suite(handler.body)
        if statement.orelse is not None:
            yield from _suite(statement.orelse.body)
        if statement.finalbody is not None:
            yield from _suite(statement.finalbody.body)
    elif isinstance(statement, cst.Match):
        for case in statement.cases:
            yield from _suite(case.body)
    elif isinstance(statement, cst.If):
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            yield orelse
            yield from _cst_children(orelse)
        elif orelse is not None:
            yield from _suite(orelse.body)
    elif isinstance(statement, (cst.For, cst.While)) and statement.orelse is not None:
        yield from _suite(statement.orelse.body)


def _ast_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    for statement in body:
        yield statement
        if isinstance(statement, ast.Try) or (sys.version_info >= (3, 11) and isinstance(statement, ast.TryStar)):
            yield from _ast_statements(statement.body)
            for handler in statement.handlers:
                yield from _ast_statements(handler.body)
            yield from _ast_statements(statement.orelse)
            yield from _ast_statements(statement.finalbody)
        elif hasattr(ast, "Match") and isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _ast_statements(case.body)
        else:
            yield from _ast_statements(getattr(statement, "body", ()))
            yield from _ast_statements(getattr(statement, "orelse", ()))


def _one_line(text: str) -> bool:
    """Text whose position can be found by search: a line break's text depends on the block's indentation."""
    return bool(text) and "\n" not in text and "\r" not in text


def _holds(statement: cst.CSTNode, node: cst.CSTNode) -> bool:
    """``node`` is ``statement`` or inside it (by identity)."""
    stack = [statement]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(current.children)
    return False


def _is_name_char(char: str) -> bool:
    return bool(char) and (char.isalnum() or char == "_")


class PositionFinder:
    """Resolves (statement, node) pairs of one file to source positions."""

    def __init__(self, source: str, module: cst.Module, tree: Optional[ast.Module] = None) -> None:
        self.source = source
        self._tree = tree
        self.module = module
        self._starts = [0] + [m.end() for m in _NEWLINE.finditer(source)]
        self._map: Optional[Dict[int, ast.stmt]] = None
        self._fallback: Optional[Dict[cst.CSTNode, "CodeRange"]] = None
        self._seen: Dict[Tuple[int, str], int] = {}
        self._done: Dict[int, Position] = {}

    def _statement_map(self) -> Dict[int, ast.stmt]:
        if self._map is None:
            self._map = {}
            tree = self._tree
            if tree is None:
                try:
                    tree = ast.parse(self.source)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    return self._map
            ours = list(_cst_statements(self.module.body))
            theirs = list(_ast_statements(tree.body))
            if len(ours) == len(theirs):
                self._map = {id(a): b for a, b in zip(ours, theirs)}
        return self._map

    def _offset(self, line: int, col_utf8: int) -> int:
        """Character offset of an ``ast`` (line, UTF-8 byte column) position."""
        if line > len(self._starts):
            return len(self.source)
        start = self._starts[line - 1]
        end = self._starts[line] if line < len(self._starts) else len(self.source)
        text = self.source[start:end]
        if text.isascii():
            return start + col_utf8
        return start + len(text.encode("utf-8")[:col_utf8].decode("utf-8", "ignore"))

    def _line_col(self, offset: int) -> Tuple[int, int]:
        lo, hi = 0, len(self._starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self._starts[lo] + 1

    def position(self, statement: Optional[cst.CSTNode], node: cst.CSTNode) -> Position:
        """(line, col, end_line, end_col), 1-based, of ``node`` inside ``statement``."""
        known = self._done.get(id(node))
        if known is None:
            known = self._done[id(node)] = self._position(statement, node)
        return known

    def line_of(self, statement: cst.CSTNode) -> int:
        """The first line of a statement (its ``def``/``for``/``if`` line), without generating its
        code: what a reach chain shows."""
        mapped = self._statement_map().get(id(statement))
        if mapped is not None:
            return mapped.lineno
        return self.position(statement, statement)[0]

    def _position(self, statement: Optional[cst.CSTNode], node: cst.CSTNode) -> Position:
        span = self._span(statement) if statement is not None else None
        if span is None:
            return self._provider_position(node)
        start, end = span
        text = self.module.code_for_node(node)
        key = (id(statement), text)
        nth = self._seen.get(key, 0)
        self._seen[key] = nth + 1
        at = start - 1
        for _ in range(nth + 1):
            found = self._find_token(text, at + 1, end)
            if found < 0:
                break
            at = found
        if at < start:
            at = start
        line, col = self._line_col(at)
        end_line, end_col = self._line_col(at + len(text))
        return line, col, end_line, end_col

    def _find_token(self, text: str, start: int, end: int) -> int:
        """The next occurrence of ``text`` that is not part of a longer name (``loss`` in ``aux_loss``)."""
        if not text:
            return -1
        source = self.source
        while True:
            found = source.find(text, start, end)
            if found < 0:
                return -1
            before = source[found - 1] if found > 0 else ""
            after = source[found + len(text)] if found + len(text) < len(source) else ""
            clash_before = _is_name_char(text[0]) and (_is_name_char(before) or (before == "." and text[0] != "."))
            clash_after = _is_name_char(text[-1]) and _is_name_char(after)
            if not clash_before and not clash_after:
                return found
            start = found + 1

    def exact(self, node: cst.CSTNode, statement: Optional[cst.CSTNode] = None) -> Position:
        """The exact position, for fix edits. Without generating the file's code when it can be
        proven: a statement's own text where ``ast`` says it starts, or a node's one-line text
        found exactly once inside the statement that holds it (so that occurrence is the node);
        else from libcst's code generation of the whole file (exact always, and slow).
        ``statement``: a statement that may hold ``node``, checked."""
        found = self._statement_position(node)
        if found is None and statement is not None and statement is not node and _holds(statement, node):
            found = self._unique_in(node, statement)
        return found if found is not None else self._provider_position(node)

    def _statement_position(self, node: cst.CSTNode) -> Optional[Position]:
        """A small statement's range (libcst's: without its ``;``), or a simple line's, from
        ``ast``'s start and the statement's own one-line text."""
        if isinstance(node, cst.SimpleStatementLine) and node.body:
            first = self._statement_position(node.body[0])
            last = self._statement_position(node.body[-1]) if first is not None else None
            return None if first is None or last is None else (first[0], first[1], last[2], last[3])
        span = self._span(node)
        if span is None or isinstance(getattr(node, "semicolon", None), cst.Semicolon):
            return None
        text = self.module.code_for_node(node)
        if not _one_line(text) or not self.source.startswith(text, span[0]):
            return None
        line, col = self._line_col(span[0])
        return line, col, line, col + len(text)

    def _unique_in(self, node: cst.CSTNode, statement: cst.CSTNode) -> Optional[Position]:
        span = self._span(statement)
        if span is None and isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            span = self._span(statement.body[0])
        if span is None:
            return None
        start, end = span
        text = self.module.code_for_node(node)
        if not _one_line(text):
            return None
        at = self.source.find(text, start, end)
        if at < 0 or self.source.find(text, at + 1, end) >= 0:
            return None
        line, col = self._line_col(at)
        return line, col, line, col + len(text)

    def _span(self, statement: cst.CSTNode) -> Optional[Tuple[int, int]]:
        """Character offsets [start, end) of a statement, decorators included, from ``ast``."""
        mapped = self._statement_map().get(id(statement))
        if mapped is None:
            return None
        start_line, start_col = mapped.lineno, mapped.col_offset
        for decorator in getattr(mapped, "decorator_list", ()):
            if decorator.lineno < start_line:
                start_line, start_col = decorator.lineno, 0
        start = self._offset(start_line, start_col)
        end = self._offset(mapped.end_lineno or start_line, mapped.end_col_offset or 0)
        return (start, end) if end > start else (start, len(self.source))

    def _provider_position(self, node: cst.CSTNode) -> Position:
        if self._fallback is None:
            from libcst.metadata import CodeRange, PositionProvider

            # the provider's own pass (one code generation that records every node's range),
            # without a MetadataWrapper: the wrapper also walks the whole tree for batchable
            # providers, which costs as much again and gives nothing here
            provider = PositionProvider()
            provider._gen_impl(self.module)
            self._fallback = {key: rng for key, rng in provider._computed.items() if isinstance(rng, CodeRange)}
        rng = self._fallback.get(node)
        if rng is None:
            return 1, 1, 1, 1
        return rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1

    def line_text(self, line: int) -> str:
        if line < 1 or line > len(self._starts):
            return ""
        start = self._starts[line - 1]
        end = self._starts[line] if line < len(self._starts) else len(self.source)
        return self.source[start:end]
