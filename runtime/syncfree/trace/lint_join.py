"""``--lint``: run syncfree-lint on the files the trace touched and join its findings with the
traced sites.

A finding and a site match when they are on the same statement.  A finding is *confirmed* when
its statement synced at least ``PER_STEP`` times per step (the linter claims once per step).
Before that, a finding is *per eval step* when it runs in an evaluation loop: its reach starts at
a loop that ``eval_loops`` reads as one, or its statement synced in bursts (``BURST`` times or more
in each optimizer step it synced in: a loop ran between two optimizer steps), and it synced in
fewer than half of the steps.  The run's steps are optimizer steps, so such a finding's rate says
nothing for or against it.  Otherwise, below that rate, it is *not seen*.
A traced site at ``PER_STEP`` with no finding on its statement is *missed by lint*; a host-to-device
copy there is named as what the opt-in SFL402 covers.  The linter runs as a subprocess: the runtime
never imports it.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from .eval_loops import eval_loop_lines
from .report import Site, display_path

#: syncs per step from which a statement counts as syncing every step
PER_STEP = 0.5

# Rules reported at a construction or for correctness: their syncs (if any) are at other lines.
NOT_A_SYNC_SITE = {"SFL304", "SFL305", "SFL307", "SFL501"}

#: syncs per step it synced in, from which a statement runs in a loop between optimizer steps
BURST = 2.0

#: what a missed row of host-to-device copies says (batch copies are SFL402's, an opt-in rule)
H2D_NOTE = "covered by SFL402, off by default: --extend-select SFL402"


@dataclass(frozen=True)
class Finding:
    code: str
    file: str
    line: int
    message: str
    loop: Optional[tuple[str, int]] = None  # where its reach starts: the step loop (file, line)


@dataclass
class Join:
    confirmed: list[tuple[Finding, float]] = field(default_factory=list)
    per_eval_step: list[tuple[Finding, float]] = field(default_factory=list)
    not_seen: list[tuple[Finding, float]] = field(default_factory=list)
    elsewhere: list[Finding] = field(default_factory=list)
    missed: list[tuple[str, int, str, float]] = field(default_factory=list)  # file, line, kinds, rate
    below_rate: list[tuple[str, int, str, float]] = field(default_factory=list)
    eval_rows: set[tuple[str, int]] = field(default_factory=set)  # below_rate rows synced in bursts


class LintUnavailable(RuntimeError):
    """syncfree-lint could not be run."""


def run_lint(files: list[str]) -> list[Finding]:
    """syncfree-lint's findings (JSON output) on ``files``."""
    if not files:
        return []
    cmd = [sys.executable, "-m", "syncfree_lint", "--output-format", "json", "--exit-zero", "--no-cache", *files]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise LintUnavailable(
            f"syncfree.trace --lint: `{' '.join(cmd[:6])} ...` failed (exit {done.returncode}); "
            f"is syncfree-lint installed (pip install syncfree-lint)?\n{done.stderr.strip()[-2000:]}"
        )
    findings = []
    for item in json.loads(done.stdout or "[]"):
        path = os.path.abspath(item["path"])
        findings.append(Finding(item["code"], path, int(item["start"]["line"]), item["message"], _loop(item)))
    return findings


def _loop(item: dict) -> Optional[tuple[str, int]]:
    """The first link of a JSON finding's reach (``path:line``), or None."""
    reach = item.get("reach") or []
    where = str(reach[0].get("where", "")) if reach else ""
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit() or ":cell " in path:
        return None
    return os.path.abspath(path), int(line)


def statement_spans(path: str) -> dict[int, tuple[int, int]]:
    """line -> (first, last) line of the statement it belongs to (a compound statement: its header)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    spans: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(first, body[0].lineno - 1)
            decorators = getattr(node, "decorator_list", None)
            if decorators:
                first = min(d.lineno for d in decorators)
        for line in range(first, last + 1):
            spans[line] = (first, last)
    return spans


def join(findings: list[Finding], sites: tuple[Site, ...]) -> Join:
    """Classify every finding and every per-step site (see the module docstring)."""
    spans: dict[str, dict[int, tuple[int, int]]] = {}

    def statement(file: str, line: int) -> tuple[str, int, int]:
        if file not in spans:
            spans[file] = statement_spans(file)
        first, last = spans[file].get(line, (line, line))
        return file, first, last

    rate: defaultdict[tuple[str, int, int], float] = defaultdict(float)
    kinds: defaultdict[tuple[str, int, int], set[str]] = defaultdict(set)
    first_line: dict[tuple[str, int, int], int] = {}
    burst: defaultdict[tuple[str, int, int], float] = defaultdict(float)  # syncs per step it synced in
    share: defaultdict[tuple[str, int, int], float] = defaultdict(float)  # share of the steps it synced in
    for s in sites:
        key = statement(s.file, s.line)
        rate[key] += s.per_step
        kinds[key].add(s.kind)
        first_line.setdefault(key, s.line)
        if s.in_steps and s.per_step:
            burst[key] = max(burst[key], s.count / s.in_steps)
            share[key] = max(share[key], s.in_steps * s.per_step / s.count)  # in_steps / steps

    def per_eval_step(key: tuple[str, int, int], loop: Optional[tuple[str, int]]) -> bool:
        """In an eval loop (read from the source, or syncing in bursts), in few of the steps."""
        in_eval_loop = loop is not None and loop[1] in eval_loop_lines(loop[0])
        return (in_eval_loop or burst[key] >= BURST) and share[key] < PER_STEP

    out = Join()
    claimed = set()
    for f in sorted(findings, key=lambda f: (f.file, f.line, f.code)):
        key = statement(f.file, f.line)
        if f.code in NOT_A_SYNC_SITE:
            out.elsewhere.append(f)
            continue
        claimed.add(key)
        found = (f, rate.get(key, 0.0))
        if per_eval_step(key, f.loop):
            out.per_eval_step.append(found)
        elif rate[key] >= PER_STEP:
            out.confirmed.append(found)
        else:
            out.not_seen.append(found)
    for key, r in sorted(rate.items(), key=lambda kv: (-kv[1], kv[0])):
        if key in claimed:
            continue
        row = (key[0], first_line[key], "/".join(sorted(kinds[key])), r)
        eval_like = per_eval_step(key, None)
        (out.missed if r >= PER_STEP and not eval_like else out.below_rate).append(row)
        if eval_like:
            out.eval_rows.add((key[0], first_line[key]))
    return out


def render_join(result: Join) -> str:
    """The join as text: what to act on first."""
    lines = [
        f"lint join: {len(result.confirmed)} confirmed, {len(result.per_eval_step)} per eval step, "
        f"{len(result.not_seen)} not seen, {len(result.missed)} missed by lint"
    ]

    def finding_row(f: Finding, r: float | None) -> str:
        rate = "" if r is None else f"  [{r:.2f}/step]"
        return f"  {display_path(f.file)}:{f.line}: {f.code}{rate} {f.message.split(';')[0]}"

    lines.append("confirmed (the linter's finding synced every step):")
    lines.extend(finding_row(f, r) for f, r in result.confirmed)
    if result.per_eval_step:
        lines.append("per eval step (the run's steps are optimizer steps; an eval loop syncs between them):")
        lines.extend(finding_row(f, r) for f, r in result.per_eval_step)
    lines.append("not seen (no sync there, or less than once per step, in this run):")
    lines.extend(finding_row(f, r) for f, r in result.not_seen)
    lines.append("missed by lint (synced every step, no finding):")
    lines.extend(
        f"  {display_path(f)}:{ln}: {k}  [{r:.2f}/step]" + (f"  {H2D_NOTE}" if k == "h2d" else "")
        for f, ln, k, r in result.missed
    )
    if result.below_rate:
        lines.append("not per step (synced less than once per step or in an eval loop, no finding; guarded or rare):")
        lines.extend(
            f"  {display_path(f)}:{ln}: {k}  [{r:.2f}/step]" + ("  per eval step" if (f, ln) in result.eval_rows else "")
            for f, ln, k, r in result.below_rate
        )
    if result.elsewhere:
        lines.append("reported at a construction (its syncs are at the uses) or not a sync:")
        lines.extend(finding_row(f, None) for f in result.elsewhere)
    return "\n".join(lines) + "\n"
