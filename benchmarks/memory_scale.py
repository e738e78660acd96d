#!/usr/bin/env python3
"""Peak memory of syncfree-lint as the tree grows: lint 1x, 2x and 4x copies of a tree.

    python benchmarks/memory_scale.py DIR [--jobs 1]

Each size runs in a fresh process (``--no-cache``); peak RSS comes from getrusage. Flat peak
memory means trees are not held: each file's facts (findings, call edges) are all that stay.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

PROBE = (
    "import resource, sys; from syncfree_lint.cli import main; "
    "rc = main(sys.argv[1:] + ['--exit-zero', '--no-cache']); "
    "sys.stderr.write('RSS_KB=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree")
    parser.add_argument("--jobs", default="1")
    parser.add_argument("--sizes", default="1,2,4")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="syncfree-mem-")
    try:
        print(f"{'copies':>7}{'files':>8}{'peak RSS MiB':>15}")
        for size in (int(s) for s in args.sizes.split(",")):
            folder = os.path.join(work, f"x{size}")
            for index in range(size):
                shutil.copytree(args.tree, os.path.join(folder, f"copy{index}"), symlinks=True)
            files = sum(1 for _, _, names in os.walk(folder) for n in names if n.endswith(".py"))
            proc = subprocess.run([sys.executable, "-c", PROBE, folder, "--jobs", args.jobs],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            rss = next(int(line.split("=")[1]) for line in proc.stderr.splitlines() if line.startswith("RSS_KB="))
            print(f"{size:>7}{files:>8}{rss / 1024:>15.1f}")
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
