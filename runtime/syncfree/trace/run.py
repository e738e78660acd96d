"""Run a script as ``__main__`` under the guard and count its syncs per optimizer step."""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import warnings
from dataclasses import dataclass
from typing import Optional

import torch

from ..guard import HostSyncGuard, StandInUnusedWarning
from ..guard.frames import is_library
from ..guard.tags import STAND_IN
from .cuda_map import CudaOnStandIn
from .report import TraceResult, collect
from .steps import StepCounter, StopTrace
from .timing import WaitTimer


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
    on_cuda = torch.cuda.is_available()
    mode = "cuda" if on_cuda else "stand-in"
    guard = HostSyncGuard("record", "cuda" if on_cuda else STAND_IN)
    counter = StepCounter(guard, warmup, steps)
    notes: list[str] = []
    if timing and not on_cuda:
        notes.append("--timing measures the host wait on CUDA only; the stand-in has none")
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(path))
    exit_code: object = None
    error: Optional[BaseException] = None
    guard.__enter__()
    try:
        with contextlib.ExitStack() as stack:
            if not on_cuda:
                stack.enter_context(
                    CudaOnStandIn(lambda: guard.record("synchronize", "torch.cuda.synchronize"))
                )
            if timing and on_cuda:
                stack.enter_context(WaitTimer(counter))
            stack.enter_context(counter)
            try:
                runpy.run_path(path, run_name="__main__")
            except StopTrace:
                pass
            except SystemExit as exc:
                exit_code = exc.code
            except Exception as exc:  # the script failed: report what was counted, then the error
                error = exc
    finally:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StandInUnusedWarning)
            guard.__exit__(None, None, None)
        sys.argv, sys.path[:] = saved_argv, saved_path
    if any(issubclass(w.category, StandInUnusedWarning) for w in caught):
        notes.append("no tensor was placed on the device: the script ran on the CPU without asking for 'cuda'")
    if counter.seen == 0:
        notes.append("the script never called optimizer.step(): there is no step to count syncs per")
    elif counter.counted == 0:
        notes.append(
            f"only {counter.seen} optimizer steps ran: the first one ends the set-up, then --warmup {warmup}"
        )
    result = collect(counter, mode, timing and on_cuda, tuple(notes), failed=error is not None)
    touched = set(_user_files(path)) | {s.file for s in result.sites if os.path.isfile(s.file)}
    return TraceRun(result, exit_code, error, tuple(sorted(touched)))
