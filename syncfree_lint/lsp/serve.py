"""``syncfree-lint server``: the Language Server over stdio, built on pygls (the ``server`` extra).

- Diagnostics on ``didOpen``, ``didChange`` (the unsaved buffer, after a short pause in typing)
  and ``didSave`` (then every open document again: a saved caller can make a helper in another
  open file per step). Each has the rule's code, a link to its documentation, and the chain that
  makes it run per step as related information.
- Notebooks (LSP 3.17 ``notebookDocument/*``, ``*.ipynb`` with Python cells): the cells are
  linted together as the command line lints the file, and findings are published per cell
  (``syncfree_lint.lsp.notebooks``), with quick fixes per cell (no "fix all" in notebooks).
- Code actions: the finding's fix ("(unsafe)" in the title when it may change behaviour),
  "suppress with ``# noqa: CODE``", and "fix all safe findings" (``source.fixAll``).

Configuration is the ``[tool.syncfree-lint]`` of the closest pyproject.toml, as on the command
line; a file is linted with its project as context (``syncfree_lint.project``).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote, urlparse

from syncfree_lint import __version__
from syncfree_lint.config import ConfigError
from syncfree_lint.diagnostic import Diagnostic, Edit
from syncfree_lint.lsp.notebooks import NotebookSync, sync_options
from syncfree_lint.lsp.session import Action, Session, actions_for, rule_href
from syncfree_lint.noqa_edit import split_lines
from syncfree_lint.notebook import split_where

SOURCE = "syncfree-lint"
DEBOUNCE_SECONDS = 0.2
_NEEDS = 'syncfree-lint server needs pygls: pip install "syncfree-lint[server]" (or pip install "pygls>=2,<3")\n'


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="syncfree-lint server",
        description="Run the syncfree-lint Language Server on stdin/stdout (for editors: VS Code, Neovim, ...).",
    )
    parser.add_argument("--no-project", action="store_true",
                        help="lint each buffer on its own instead of with its project's call graph")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        server = build_server(Session(project=not args.no_project))
    except ImportError:
        sys.stderr.write(_NEEDS)
        return 2
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 6000))  # as the command line does, for deep files
    server.start_io()
    return 0


def path_of(uri: str) -> Optional[str]:
    """The file system path of a ``file:`` URI; None for other schemes (an unsaved "untitled:")."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":
        path = path[1:]
    return os.path.normpath(path)


def uri_of(path: str) -> str:
    from pathlib import Path

    return Path(os.path.abspath(path)).as_uri()


class Positions:
    """Converts the linter's positions (character columns) to the client's encoding."""

    def __init__(self, text: str, encoding: Any) -> None:
        self.lines = split_lines(text)
        self.encoding = str(encoding or "utf-16").lower()

    def units(self, text: str) -> int:
        if self.encoding == "utf-8":
            return len(text.encode("utf-8", "surrogatepass"))
        if self.encoding == "utf-32":
            return len(text)
        return len(text.encode("utf-16-le", "surrogatepass")) // 2

    def position(self, line: int, col: int, types: Any) -> Any:
        """(1-based line, 0-based character column) -> an LSP Position."""
        if line - 1 >= len(self.lines):
            return types.Position(line=max(line - 1, 0), character=0)
        text = self.lines[line - 1].rstrip("\r\n")
        return types.Position(line=line - 1, character=self.units(text[: max(col, 0)]))


def to_lsp(d: Diagnostic, positions: Positions, types: Any, cell_uris: Sequence[str] = ()) -> Any:
    """``cell_uris``: for a notebook's finding, its Python cells' URIs (a reach link
    ``path:cell N:line`` points into cell N)."""
    start = positions.position(d.line, d.col - 1, types)
    if d.end_line is not None and d.end_col is not None:
        end = positions.position(d.end_line, d.end_col - 1, types)
    else:
        end = positions.position(d.line, d.col, types)
    related = []
    for where, what in d.reach:
        path, cell, number = split_where(where)
        spot = types.Position(line=max(number - 1, 0), character=0)
        uri = cell_uris[cell - 1] if cell is not None and 0 < cell <= len(cell_uris) else uri_of(path)
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=types.Range(start=spot, end=spot)),
            message=f"reached through: {what}",
        ))
    href = rule_href(d.code)
    error = d.code in ("SFL000", "SFL001")
    return types.Diagnostic(
        range=types.Range(start=start, end=end),
        message=d.message,
        severity=types.DiagnosticSeverity.Error if error else types.DiagnosticSeverity.Warning,
        code=d.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related or None,
    )


def _text_edits(edits: List[Edit], positions: Positions, types: Any) -> List[Any]:
    return [
        types.TextEdit(range=types.Range(start=positions.position(e.start[0], e.start[1], types),
                                         end=positions.position(e.end[0], e.end[1], types)),
                       new_text=e.content)
        for e in edits
    ]


def to_code_action(action: Action, uri: str, positions: Positions, types: Any) -> Any:
    kind = types.CodeActionKind.SourceFixAll if action.kind == "source.fixAll" else types.CodeActionKind.QuickFix
    return types.CodeAction(
        title=action.title,
        kind=kind,
        diagnostics=[to_lsp(action.diagnostic, positions, types)] if action.diagnostic is not None else None,
        edit=types.WorkspaceEdit(changes={uri: _text_edits(action.edits, positions, types)}),
        is_preferred=action.preferred or None,
    )


def build_server(session: Session) -> Any:
    """The pygls server with every feature registered (raises ImportError without pygls)."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    server = LanguageServer(SOURCE, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                            notebook_document_sync=sync_options(types))
    pending: Dict[str, asyncio.TimerHandle] = {}
    reported: Dict[str, str] = {}  # configuration errors already shown, per document

    def document(uri: str) -> Tuple[Any, str, str]:
        doc = server.workspace.get_text_document(uri)
        path = path_of(uri) or os.path.abspath("untitled.py")
        return doc, path, doc.source

    def positions_for(text: str) -> Positions:
        return Positions(text, getattr(server.workspace, "position_encoding", None))

    def publish(uri: str) -> None:
        pending.pop(uri, None)
        if uri not in server.workspace.text_documents:  # closed while a pause in typing ran out
            return
        doc, path, text = document(uri)
        try:
            found = session.lint(uri, path, text, project=None if path_of(uri) else False)
        except ConfigError as exc:
            if reported.get(uri) != str(exc):
                reported[uri] = str(exc)
                server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                                   message=f"syncfree-lint: {exc}"))
            found = []
        except Exception as exc:  # never let one file take the server down
            server.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                             message=f"syncfree-lint: {type(exc).__name__}: {exc}"))
            found = []
        else:
            reported.pop(uri, None)
        positions = positions_for(text)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=doc.version, diagnostics=[to_lsp(d, positions, types) for d in found],
        ))

    def later(uri: str, action: Any = publish) -> None:
        handle = pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        pending[uri] = asyncio.get_event_loop().call_later(DEBOUNCE_SECONDS, action, uri)

    def lint_notebook(key: str, path: str, text: str) -> List[Diagnostic]:
        try:
            return session.lint(key, path, text, project=None if os.path.exists(path) else False)
        except Exception as exc:  # a bad configuration or a bug: say so, never take the server down
            server.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                             message=f"syncfree-lint: {type(exc).__name__}: {exc}"))
            return []

    def publish_cell(uri: str, found: List[Diagnostic], text: str, cell_uris: Sequence[str]) -> None:
        positions = positions_for(text)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[to_lsp(d, positions, types, cell_uris) for d in found]))

    notebooks = NotebookSync(lint_notebook, publish_cell)

    def refresh_notebook(uri: str) -> None:
        pending.pop(uri, None)
        notebooks.refresh(server.workspace, uri, path_of(uri))

    def in_notebook(uri: str) -> bool:
        return server.workspace.get_notebook_document(cell_uri=uri) is not None

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: Any, params: Any) -> None:
        refresh_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: Any, params: Any) -> None:
        later(params.notebook_document.uri, refresh_notebook)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: Any, params: Any) -> None:
        refresh_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: Any, params: Any) -> None:
        uri = params.notebook_document.uri
        handle = pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        session.forget(uri)
        notebooks.close(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Any, params: Any) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Any, params: Any) -> None:
        later(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: Any, params: Any) -> None:
        saved = params.text_document.uri
        publish(saved)
        for uri in sorted(server.workspace.text_documents):
            if uri != saved and uri not in pending and not in_notebook(uri):
                publish(uri)
        for uri in sorted(server.workspace.notebook_documents):
            if uri not in pending:
                refresh_notebook(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Any, params: Any) -> None:
        uri = params.text_document.uri
        handle = pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        session.forget(uri)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll],
                                resolve_provider=False),
    )
    def code_action(ls: Any, params: Any) -> List[Any]:
        uri = params.text_document.uri
        if in_notebook(uri):  # a cell: its notebook's findings, in the cell's lines
            cell_actions = notebooks.actions(server.workspace, uri, params.range.start.line + 1, params.range.end.line + 1)
            cell_positions = positions_for(server.workspace.get_text_document(uri).source)
            return [to_code_action(action, uri, cell_positions, types) for action in cell_actions]
        doc, path, text = document(uri)
        only = [str(kind.value if hasattr(kind, "value") else kind) for kind in (params.context.only or [])]
        try:
            actions = actions_for(session, uri, path, text, params.range.start.line + 1, params.range.end.line + 1,
                                  only or None)
        except ConfigError:
            return []
        positions = positions_for(text)
        return [to_code_action(action, uri, positions, types) for action in actions]

    return server
