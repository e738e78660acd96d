"""Counting syncs per source line per optimizer step.

torch's global optimizer step hook marks the step boundaries: the syncs made since the previous
optimizer step belong to this step.  What runs before the first optimizer step is set-up and is
never counted (nor is what runs after the last one); the next ``warmup`` steps are dropped too.
After ``steps`` counted steps the run is stopped by raising :class:`StopTrace` out of the hook.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Optional

import torch

from ..guard import HostSyncGuard


class StopTrace(BaseException):
    """Raised out of the optimizer step hook to end the traced script after the last step.

    A BaseException, so that the script's ``except Exception:`` blocks let it through."""


SiteKey = tuple[str, int, str]  # file, line, kind


class StepCounter:
    """Attributes the guard's events to optimizer steps and counts them per site."""

    def __init__(self, guard: HostSyncGuard, warmup: int = 0, steps: Optional[int] = None) -> None:
        if warmup < 0:
            raise ValueError(f"--warmup must be 0 or more, not {warmup}")
        if steps is not None and steps < 1:
            raise ValueError(f"--steps must be 1 or more, not {steps}")
        self.guard = guard
        self.warmup = warmup
        self.steps = steps
        self.seen = 0  # optimizer steps so far, warm-up included
        self.counts: Counter[SiteKey] = Counter()
        self.steps_with: Counter[SiteKey] = Counter()  # counted steps in which the site synced
        self.wait_s: defaultdict[tuple[str, int], float] = defaultdict(float)
        self.stopped = False
        self._handle: Any = None

    @property
    def counted(self) -> int:
        """Optimizer steps whose syncs were counted."""
        return max(0, self.seen - self.warmup - 1)

    def __enter__(self) -> StepCounter:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handle = register_optimizer_step_post_hook(self._on_step)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        return False

    def add_wait(self, filename: str, lineno: int, seconds: float) -> None:
        """Host time blocked at a site (from the timer), counted like its events."""
        if self.seen > self.warmup and not self.stopped:
            self.wait_s[(filename, lineno)] += seconds

    def _on_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.seen += 1
        events = list(self.guard.events)
        self.guard.clear()
        if self.seen > self.warmup + 1:
            keys = [(ev.filename, ev.lineno, ev.kind) for ev in events]
            self.counts.update(keys)
            self.steps_with.update(set(keys))
        if self.steps is not None and self.counted >= self.steps:
            self.stopped = True
            raise StopTrace(f"syncfree.trace: stopped after {self.counted} steps")
