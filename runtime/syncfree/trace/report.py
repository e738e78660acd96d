"""The trace's result: sync sites with their rate per step, as a table or as JSON."""

from __future__ import annotations

import json
import linecache
import os
from dataclasses import asdict, dataclass
from typing import Callable, Optional

from .steps import StepCounter


@dataclass(frozen=True)
class Site:
    """A source line that made host syncs of one kind during the counted steps."""

    file: str
    line: int
    kind: str
    count: int
    per_step: float
    wait_ms: Optional[float]  # host time blocked per step; None where not measured
    in_steps: int = 0  # counted steps in which it synced (count / in_steps > 1: a loop within a step)


@dataclass(frozen=True)
class TraceResult:
    mode: str  # "cuda" or "stand-in"
    steps: int
    sites: tuple[Site, ...]
    stopped: bool  # the run was ended after --steps
    notes: tuple[str, ...] = ()
    failed: bool = False  # the script raised an exception
    whole_run: bool = False  # no optimizer step ran: the whole run was counted as one step

    @property
    def total_per_step(self) -> float:
        return sum(s.per_step for s in self.sites)

    def to_json(self) -> dict:
        return {"mode": self.mode, "steps": self.steps, "sites": [asdict(s) for s in self.sites]}


def collect(
    counter: StepCounter, mode: str, timed: bool, notes: tuple[str, ...] = (), failed: bool = False,
    whole_run: bool = False,
) -> TraceResult:
    """Sites sorted by syncs per step (most first), then by file and line."""
    steps = counter.counted
    sites = []
    for (file, line, kind), count in counter.counts.items():
        wait = None
        if timed:
            wait = round(1000.0 * counter.wait_s.get((file, line), 0.0) / steps, 3) if steps else 0.0
        per_step = round(count / steps, 4) if steps else 0.0
        in_steps = counter.steps_with.get((file, line, kind), 0)
        sites.append(Site(file, line, kind, count, per_step, wait, in_steps))
    sites.sort(key=lambda s: (-s.count, s.file, s.line, s.kind))
    return TraceResult(mode, steps, tuple(sites), counter.stopped, notes, failed, whole_run)


def display_path(path: str) -> str:
    """``path`` relative to the working folder when inside it."""
    if path.startswith("<"):
        return path
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


def _code(file: str, line: int, width: int = 60) -> str:
    text = linecache.getline(file, line).strip()
    return text if len(text) <= width else text[: width - 3] + "..."


MODE_TEXT = {
    "cuda": "CUDA (sync debug mode + explicit synchronize calls)",
    "stand-in": "stand-in: no CUDA here, so 'cuda' ran on the CPU stand-in device cpu:0 "
    "(syncs are the ones a GPU run would make; no wait is measured)",
}


def render(result: TraceResult, *, subject: str = "script", name: Callable[[str], str] = display_path) -> str:
    """The report table: one row per site, most syncs per step first, then the total.
    ``name`` writes a site's file (a notebook cell's label)."""
    lines = [f"syncfree.trace: mode {MODE_TEXT.get(result.mode, result.mode)}"]
    how = "stopped after --steps" if result.stopped else "ran to the end"
    if result.failed:
        how = f"the {subject} failed; counts cover the steps before the error"
    if result.whole_run:
        lines.append(f"no optimizer.step() in the {subject}: its whole run is counted as one step ({how})")
    else:
        lines.append(f"{result.steps} optimizer steps counted ({how})")
    lines.extend(f"note: {n}" for n in result.notes)
    if not result.sites:
        lines.append("no host sync in the counted steps")
        return "\n".join(lines) + "\n"
    rows = [("site", "code", "kind", "syncs/step", "wait ms/step")]
    for s in result.sites:
        wait = "-" if s.wait_ms is None else f"{s.wait_ms:.3f}"
        rows.append((f"{name(s.file)}:{s.line}", _code(s.file, s.line), s.kind, f"{s.per_step:.2f}", wait))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        lines.append("  ".join(r[i].ljust(widths[i]) if i < 3 else r[i].rjust(widths[i]) for i in range(5)).rstrip())
    lines.append(f"total: {result.total_per_step:.2f} host syncs per step")
    return "\n".join(lines) + "\n"


def write_json(result: TraceResult, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result.to_json(), f, indent=2)
        f.write("\n")
