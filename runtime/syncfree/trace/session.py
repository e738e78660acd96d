"""A tracing session: the guard, the CUDA-to-stand-in mapping, the step counter and the timer,
entered and left together around code that trains (a script, a notebook cell).

``device``: ``None`` is CUDA when available, else the CPU stand-in; ``"cuda"`` needs CUDA;
``"stand-in"`` maps ``"cuda"`` to the stand-in even where CUDA exists.  While the session-wide map
is on (``session_map``, a notebook's ``%sync_stand_in on``) the mode is the stand-in and that map
is used instead of a new one.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import Counter
from typing import Optional

import torch

from ..guard import HostSyncGuard, StandInUnusedWarning
from ..guard.tags import STAND_IN
from .cuda_map import CudaOnStandIn
from .report import TraceResult, collect
from .session_map import SESSION_MAP
from .steps import StepCounter
from .timing import WaitTimer

DEVICES = ("cuda", "stand-in")


def pick_mode(device: Optional[str]) -> str:
    """``"cuda"`` or ``"stand-in"`` for the ``device`` asked for (see the module docstring)."""
    if device not in (None, *DEVICES):
        raise ValueError(f"--device must be one of {', '.join(DEVICES)}, not {device!r}")
    if SESSION_MAP.active:
        if device == "cuda":
            raise ValueError("--device cuda: 'cuda' is mapped to the stand-in (%sync_stand_in on)")
        return "stand-in"
    if device is None:
        return "cuda" if torch.cuda.is_available() else "stand-in"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: CUDA is not available here (use --device stand-in)")
    return device


class TraceSession:
    """Context manager: everything run inside is traced; :meth:`result` gives the counts."""

    def __init__(
        self, *, steps: Optional[int], warmup: int, timing: bool, device: Optional[str] = None, subject: str = "script"
    ) -> None:
        self.mode = pick_mode(device)
        self.timed = timing and self.mode == "cuda"
        self.subject = subject
        self.guard = HostSyncGuard("record", "cuda" if self.mode == "cuda" else STAND_IN)
        self.counter = StepCounter(self.guard, warmup, steps)
        self.notes: list[str] = []
        if timing and not self.timed:
            self.notes.append("--timing measures the host wait on CUDA only; the stand-in has none")
        self._stack: Optional[contextlib.ExitStack] = None

    def __enter__(self) -> TraceSession:
        self.guard.__enter__()
        stack = contextlib.ExitStack()
        try:
            if self.mode == "stand-in":
                guard = self.guard

                def record() -> None:
                    guard.record("synchronize", "torch.cuda.synchronize")

                if SESSION_MAP.active:
                    SESSION_MAP.recording(record)
                    stack.callback(SESSION_MAP.recording, None)
                else:
                    stack.enter_context(CudaOnStandIn(record))
            if self.timed:
                stack.enter_context(WaitTimer(self.counter))
            stack.enter_context(self.counter)
        except BaseException:
            stack.close()
            self.guard.__exit__(None, None, None)
            raise
        self._stack = stack
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._stack is not None:
                self._stack.close()
                self._stack = None
        finally:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", StandInUnusedWarning)
                self.guard.__exit__(None, None, None)
        if any(issubclass(w.category, StandInUnusedWarning) for w in caught):
            self.notes.append(
                f"no tensor was placed on the device: the {self.subject} ran on the CPU without asking for 'cuda'"
            )
        return False

    def result(self, *, failed: bool = False, whole_run_is_a_step: bool = False) -> TraceResult:
        """The counts per optimizer step.  Without any optimizer step, ``whole_run_is_a_step``
        counts every sync of the run as one step (a cell that evaluates, or steps by hand)."""
        counter = self.counter
        notes = list(self.notes)
        if counter.seen == 0 and whole_run_is_a_step:
            counter = StepCounter(self.guard)
            counter.counts = Counter((ev.filename, ev.lineno, ev.kind) for ev in self.guard.events)
            counter.steps_with = Counter(set(counter.counts))
            counter.seen = 2  # the set-up step and one counted step
        elif counter.seen == 0:
            notes.append(f"the {self.subject} never called optimizer.step(): there is no step to count syncs per")
        elif counter.counted == 0:
            notes.append(
                f"only {counter.seen} optimizer steps ran: the first one ends the set-up, then --warmup {counter.warmup}"
            )
        whole_run = self.counter.seen == 0 and whole_run_is_a_step
        return collect(counter, self.mode, self.timed, tuple(notes), failed=failed, whole_run=whole_run)
