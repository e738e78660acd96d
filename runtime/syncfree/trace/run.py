"""Run a script as ``__main__`` under the guard and count its syncs per optimizer step."""

from __future__ import annotations

import os
import runpy
import sys
from dataclasses import dataclass
from typing import Optional

from ..guard.frames import is_library
from .report import TraceResult
from .session import TraceSession
from .steps import StopTrace


@dataclass
class TraceRun:
    result: TraceResult
    exit_code: object  # the script's SystemExit code, None when it returned
    error: Optional[BaseException]  # an exception the script raised
    touched: tuple[str, ...]  # the user's source files that ran (for --lint)


def _user_files(script: str) -> tuple[str, ...]:
    """The script and the user modules it loaded (not library code, not installed packages)."""
    found = {script}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and os.path.isabs(path) and os.path.isfile(path):
            installed = f"{os.sep}site-packages{os.sep}" in path or f"{os.sep}dist-packages{os.sep}" in path
            if not installed and not is_library(path):
                found.add(path)
    return tuple(sorted(found))


def trace_script(
    script: str, args: list[str], *, steps: Optional[int], warmup: int, timing: bool
) -> TraceRun:
    """Run ``script`` with ``args`` as ``__main__`` (as ``python -m cProfile`` does) and count
    its host syncs per optimizer step."""
    path = os.path.abspath(script)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"syncfree.trace: no such script: {script}")
    session = TraceSession(steps=steps, warmup=warmup, timing=timing)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(path))
    exit_code: object = None
    error: Optional[BaseException] = None
    try:
        with session:
            try:
                runpy.run_path(path, run_name="__main__")
            except StopTrace:
                pass
            except SystemExit as exc:
                exit_code = exc.code
            except Exception as exc:  # the script failed: report what was counted, then the error
                error = exc
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    result = session.result(failed=error is not None)
    touched = set(_user_files(path)) | {s.file for s in result.sites if os.path.isfile(s.file)}
    return TraceRun(result, exit_code, error, tuple(sorted(touched)))
