#!/usr/bin/env python3
"""Single-file runs in a project: cold, warm, and warm after another file changed, in one run.

    python benchmarks/single_file.py [--files 1000] [--project DIR --file PATH] [--repeat 5]

flake8, pre-commit and editors lint one file at a time; syncfree-lint reads the rest of the
file's project for its call graph, keeping per-file summaries in one index in the cache folder.
Without ``--project`` a synthetic project of ``--files`` modules is generated in a temporary
folder (a training script that calls helpers spread over the modules). Every figure is the wall
time of ``python -m syncfree_lint FILE`` as a subprocess (start-up included), the median of
``--repeat`` runs, beside the same file with ``--no-project`` and the whole project linted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List

HELPER = '''"""Module {i}: helpers the training script reaches."""
import torch


def scale_{i}(x, factor={i}):
    return x * factor


def report_{i}(loss):
    value = loss.item()
    return value / {n}


def unused_{i}(values):
    total = 0
    for v in values:
        total += v
    return total
'''

SCRIPT = '''import torch

from pkg.mod_{last} import report_{last}
from pkg.mod_0 import scale_0


def train(model, loader, optimizer):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(scale_0(x.cuda())), y.cuda())
        loss.backward()
        optimizer.step()
        report_{last}(loss)
'''


def generate(folder: str, files: int) -> str:
    os.makedirs(os.path.join(folder, "pkg"))
    with open(os.path.join(folder, "pyproject.toml"), "w") as handle:
        handle.write('[project]\nname = "synthetic"\nversion = "0"\n')
    open(os.path.join(folder, "pkg", "__init__.py"), "w").close()
    for i in range(files - 1):
        with open(os.path.join(folder, "pkg", f"mod_{i}.py"), "w") as handle:
            handle.write(HELPER.format(i=i, n=files))
    with open(os.path.join(folder, "train.py"), "w") as handle:
        handle.write(SCRIPT.format(last=files - 2))
    return os.path.join("pkg", f"mod_{files - 2}.py")


def timed(argv: List[str], cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000, help="modules in the synthetic project")
    parser.add_argument("--project", help="an existing project folder instead of a synthetic one")
    parser.add_argument("--file", help="with --project: the file to lint, relative to it")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        if args.project:
            project, target = os.path.abspath(args.project), args.file
        else:
            project, target = temp, generate(temp, args.files)
        cache = os.path.join(temp, "cache-dir")
        base = [sys.executable, "-m", "syncfree_lint", "--cache-dir", cache, "-j", "1"]
        py_files = sum(1 for _, _, names in os.walk(project) for n in names if n.endswith(".py"))
        print(f"project: {'synthetic' if not args.project else project} ({py_files} .py files); file: {target}")
        rows = []
        rows.append(("cold (no index yet)", timed(base + [target], project)))
        warm = [timed(base + [target], project) for _ in range(args.repeat)]
        rows.append(("warm", statistics.median(warm)))
        other = next(os.path.join(folder, n) for folder, _, names in os.walk(project) for n in sorted(names)
                     if n.endswith(".py") and os.path.join(folder, n) != os.path.join(project, target))
        touched = []
        for _ in range(args.repeat):
            os.utime(other, None)  # a new modification time: its summary is rebuilt
            touched.append(timed(base + [target], project))
        rows.append(("warm, one other file changed", statistics.median(touched)))
        alone = [timed(base + ["--no-project", target], project) for _ in range(args.repeat)]
        rows.append(("--no-project (file alone)", statistics.median(alone)))
        rows.append(("whole project, cold (-j 1, --no-cache)",
                     timed([sys.executable, "-m", "syncfree_lint", "--no-cache", "-j", "1", "."], project)))
        width = max(len(name) for name, _ in rows)
        for name, seconds in rows:
            print(f"  {name:<{width}}  {seconds:7.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
