"""Parsing: Python's and libcst's parsers, on one long-lived big-stack thread per process.

libcst's native parser recurses on the C stack of the thread that calls it and overflows 8 MiB
(a segfault) on very long ``and``/``or`` chains that Python accepts, so every parse of a process
runs on one daemon thread with a large stack (see ``_ParseThread``).
"""
from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from typing import Callable, Optional, Tuple, TypeVar

import libcst as cst

Result = TypeVar("Result")

_BLOCKABLE = (
    {signal.SIGINT, signal.SIGTERM} if hasattr(signal, "pthread_sigmask") and hasattr(signal, "SIGTERM") else set()
)
_STACK_BYTES = 512 * 1024 * 1024  # virtual; pages are only touched by deep files


def join_threads(*threads: threading.Thread) -> None:
    """Wait for ``threads`` even through Ctrl-C, then re-raise it."""
    interrupted: Optional[BaseException] = None
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join()
            except KeyboardInterrupt as exc:
                interrupted = exc
    if interrupted is not None:
        raise interrupted


class _ParseThread:
    """One long-lived thread with a large stack that runs every parse of this process.

    libcst's native parser recurses on the C stack of the thread that calls it and overflows
    8 MiB (a segfault) on very long ``and``/``or`` chains that Python accepts. The thread lives
    as long as the process (a daemon, idle in a queue between files), so no native thread is
    ever tearing down while the interpreter exits; signals are blocked in it."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.requests: "queue.SimpleQueue" = queue.SimpleQueue()
        previous = threading.stack_size()
        try:
            threading.stack_size(_STACK_BYTES)
            self.thread = threading.Thread(target=self._serve, name="syncfree-lint-parse", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(previous)

    def _serve(self) -> None:
        if _BLOCKABLE:
            signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKABLE)
        while True:
            function, args, reply = self.requests.get()
            try:
                reply.put((True, function(*args)))
            except BaseException as exc:  # handed back to the caller's thread
                reply.put((False, exc))

    def call(self, function: Callable[..., Result], *args: object) -> Result:
        reply: "queue.SimpleQueue" = queue.SimpleQueue()
        if _BLOCKABLE:
            # Ctrl-C and SIGTERM wait until the reply is held: caught while waiting and retried, one
            # raised just after ``get()`` returned would lose the reply and hang the run for ever.
            # Unblocking delivers a pending signal, which then stops the run as usual.
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKABLE)
            try:
                self.requests.put((function, args, reply))
                ok, value = reply.get()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        else:
            self.requests.put((function, args, reply))
            ok, value = reply.get()
        if ok:
            return value
        raise value


_PARSER: Optional[_ParseThread] = None


def on_parse_thread(function: Callable[..., Result], *args: object) -> Result:
    """Run ``function(*args)`` on this process's parse thread (created on first use, again after
    a fork); on platforms that refuse big stacks, in the calling thread."""
    global _PARSER
    if _PARSER is None or _PARSER.pid != os.getpid():  # a forked worker needs its own
        try:
            _PARSER = _ParseThread()
        except (RuntimeError, ValueError, MemoryError):
            return function(*args)
    return _PARSER.call(function, *args)


def parse_module(source: str) -> cst.Module:
    """libcst's parse without re-validating every node it builds (a third of parse time).

    Validation exists for hand-built nodes; the parser's output is valid by construction.
    Fixes build nodes with validation on, since this switch is only held during parsing."""
    base = cst.CSTNode
    original = base.__post_init__
    base.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        return cst.parse_module(source)
    finally:
        base.__post_init__ = original  # type: ignore[method-assign]


def _no_validation(self: cst.CSTNode) -> None:
    return None


def newer_syntax_possible(error: SyntaxError) -> bool:
    """A syntax error that a newer Python might accept (libcst parses up to 3.13 syntax)."""
    return sys.version_info < (3, 13) and "invalid syntax" in str(error.msg)


def syntax_error(path: str, source: str, exc: cst.ParserSyntaxError) -> Tuple[int, int, str]:
    """(line, column, message) of a syntax error: Python's own when it agrees the file is invalid
    (it is exacter), else libcst's."""
    try:
        compile(source, path, "exec", dont_inherit=True, flags=0x400)  # ast.PyCF_ONLY_AST
    except SyntaxError as error:
        line = error.lineno or exc.raw_line
        return line, max(1, error.offset or 1), str(error.msg)
    except (ValueError, RecursionError, MemoryError):
        pass
    return exc.raw_line, exc.raw_column + 1, exc.message
