"""``python -m syncfree.trace [--steps N] [--warmup K] [--json FILE] [--lint] [--timing] SCRIPT [ARGS...]``."""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Optional

from .lint_join import LintUnavailable, join, render_join, run_lint
from .report import render, write_json
from .run import trace_script


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m syncfree.trace",
        description="Run a training script and count its host syncs per source line per optimizer step.",
    )
    p.add_argument("--steps", type=int, default=None, help="stop the script after N counted steps (default: run to the end)")
    p.add_argument("--warmup", type=int, default=0, help="do not count the first K optimizer steps")
    p.add_argument("--json", metavar="FILE", help="also write the sites as JSON to FILE")
    p.add_argument("--lint", action="store_true", help="run syncfree-lint on the traced files and join both")
    p.add_argument("--timing", action="store_true", help="measure the host time blocked per site (CUDA)")
    p.add_argument("script", help="the training script, run as __main__")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    """Run the trace; exit code 0, 1 when the script failed, 2 for a usage error."""
    args = _parser().parse_args(argv)
    try:
        run = trace_script(args.script, args.args, steps=args.steps, warmup=args.warmup, timing=args.timing)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if run.error is not None:
        traceback.print_exception(run.error, file=sys.stderr)
    out = sys.__stdout__ or sys.stdout  # the script may have replaced sys.stdout
    out.write("\n" + render(run.result))
    if args.json:
        write_json(run.result, args.json)
    if args.lint:
        try:
            findings = run_lint(list(run.touched))
        except LintUnavailable as exc:
            print(exc, file=sys.stderr)
            return 2
        out.write("\n" + render_join(join(findings, run.result.sites)))
    out.flush()
    if run.error is not None:
        return 1
    if run.exit_code not in (None, 0):
        return run.exit_code if isinstance(run.exit_code, int) else 1
    return 0
