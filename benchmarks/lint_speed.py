#!/usr/bin/env python3
"""Lines per second of syncfree-lint beside torchfix and flake8, on the same tree, in one run.

    python benchmarks/lint_speed.py DIR [DIR ...] [--tools before,syncfree,torchfix,flake8,ruff]
        [--flake8-cmd "flake8 --select F"] [--ruff-cmd "ruff check --select F --no-cache --exit-zero"]
        [--before-cmd "<another syncfree-lint checkout's command>"] [--repeat 1]

``before`` is an earlier syncfree-lint (another checkout), run cold with its own empty cache, so a
change's cost shows beside the other tools in the same run.

Each tool runs as a subprocess on the same paths, one after the other; the wall time of the
whole command is measured (start-up included). Files and lines count the .py files under the
paths, skipping the folders every tool skips (.git, virtualenvs, build). The pre-filter figures
(files syncfree-lint did not need to parse) come from one in-process run.

flake8 runs every installed plugin even under ``--select F``; for a pyflakes-only figure, point
``--flake8-cmd`` at a flake8 in an environment with no plugins (see README).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Tuple

SKIP_DIRS = {".git", ".hg", ".venv", "venv", "__pycache__", "build", "dist", "node_modules", ".tox"}


def count(paths: List[str]) -> Tuple[int, int]:
    files = lines = 0
    for root in paths:
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for name in names:
                if name.endswith(".py"):
                    files += 1
                    try:
                        with open(os.path.join(folder, name), "rb") as handle:
                            lines += handle.read().count(b"\n")
                    except OSError:
                        pass
    return files, lines


def timed(command: List[str]) -> Tuple[float, int, int]:
    start = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    findings = sum(1 for line in proc.stdout.decode("utf-8", "replace").splitlines() if line.strip())
    return elapsed, proc.returncode, findings


def prefilter_figures(paths: List[str]) -> str:
    from syncfree_lint.config import Config
    from syncfree_lint.engine import run

    result = run(paths, Config())
    share = result.skipped_by_filter / result.files if result.files else 0.0
    return (f"pre-filter: {result.skipped_by_filter} of {result.files} files not parsed ({share:.0%}); "
            f"{result.parsed} parsed; {len(result.diagnostics)} findings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--tools", default="syncfree,torchfix,flake8")
    parser.add_argument("--flake8-cmd", default="flake8 --select F")
    parser.add_argument("--syncfree-cmd", default=f"{sys.executable} -m syncfree_lint --exit-zero")
    parser.add_argument("--torchfix-cmd", default="torchfix")
    parser.add_argument("--ruff-cmd", default="ruff check --select F --no-cache --exit-zero")
    parser.add_argument("--before-cmd", default="", help="an earlier syncfree-lint, e.g. "
                        "'env PYTHONPATH=<old checkout>:<old checkout>/runtime python -P -m syncfree_lint --exit-zero'")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool; the best is kept")
    args = parser.parse_args()

    files, lines = count(args.paths)
    print(f"tree: {', '.join(args.paths)}")
    print(f"files: {files}  lines: {lines}  cores: {os.cpu_count()}  python: {sys.version.split()[0]}")
    commands = {
        "syncfree-lint": shlex.split(args.syncfree_cmd),
        "torchfix": shlex.split(args.torchfix_cmd),
        "flake8": shlex.split(args.flake8_cmd),
        "ruff": shlex.split(args.ruff_cmd),
        "syncfree (before)": shlex.split(args.before_cmd),
    }
    wanted = {"syncfree": "syncfree-lint", "torchfix": "torchfix", "flake8": "flake8", "ruff": "ruff",
              "before": "syncfree (before)"}
    rows = []
    cache_dir = tempfile.mkdtemp(prefix="syncfree-bench-cache-")
    for key in args.tools.split(","):
        name = wanted[key.strip()]
        command = commands[name]
        if not command or shutil.which(command[0]) is None and not os.path.exists(command[0]):
            print(f"{name}: not installed, skipped")
            continue
        runs = [(name, command)]
        if name == "syncfree (before)":
            runs = [(name, command + ["--cache-dir", tempfile.mkdtemp(prefix="syncfree-bench-before-")])]
        if name == "syncfree-lint":
            # cold: an empty cache; warm: the same command again on the unchanged tree
            runs = [("syncfree-lint", command + ["--cache-dir", cache_dir]),
                    ("syncfree (warm)", command + ["--cache-dir", cache_dir])]
        for label, cmd in runs:
            best = None
            for _ in range(max(1, args.repeat) if label != "syncfree-lint" else 1):
                elapsed, code, findings = timed(cmd + list(args.paths))
                best = (elapsed, code, findings) if best is None or elapsed < best[0] else best
            rows.append((label, *best))
    shutil.rmtree(cache_dir, ignore_errors=True)
    base = next((r[1] for r in rows if r[0] == "syncfree-lint"), None)
    print()
    print(f"{'tool':<15}{'seconds':>10}{'lines/s':>12}{'exit':>6}{'output lines':>14}{'vs syncfree-lint (cold)':>25}")
    for name, elapsed, code, findings in rows:
        ratio = (f"{elapsed / base:.1f}x slower" if elapsed >= base else f"{base / elapsed:.1f}x faster") if base else "-"
        print(f"{name:<15}{elapsed:>10.2f}{lines / elapsed:>12,.0f}{code:>6}{findings:>14}{ratio:>25}")
    if "syncfree" in args.tools:
        print()
        print(prefilter_figures(args.paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
