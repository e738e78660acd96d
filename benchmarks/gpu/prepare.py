"""Here, before a GPU run: copy each fix program to .gpuwork/original/ and .gpuwork/fixed/, and fix the
second copy with ``syncfree-lint --fix --unsafe-fixes`` (plus the codes of its ``# select:`` line).

    python benchmarks/gpu/prepare.py

The GPU machine has no libcst, so the fixed copies travel (``carry: [".gpuwork"]``); run_all.sh
runs both copies there under the GPU's sync detector.  ``.gpuwork/`` is git-ignored.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".gpuwork"
_SELECT = re.compile(r"^# select: ([A-Z0-9, ]+)$", re.M)


def main() -> int:
    shutil.rmtree(WORK, ignore_errors=True)
    for side in ("original", "fixed"):
        (WORK / side).mkdir(parents=True)
    for program in sorted((ROOT / "fixtures" / "fix_programs").glob("*.py")):
        text = program.read_text(encoding="utf-8")
        for side in ("original", "fixed"):
            shutil.copyfile(program, WORK / side / program.name)
        select = _SELECT.search(text)
        extra = ["--extend-select", select.group(1).replace(" ", "")] if select else []
        done = subprocess.run([sys.executable, "-m", "syncfree_lint", "--no-cache", "-j", "1", "--no-project", *extra,
                        "--fix", "--unsafe-fixes", str(WORK / "fixed" / program.name)],
                       capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):
            print(f"{program.name}: syncfree-lint failed:\n{done.stderr}", file=sys.stderr)
            return 2
        changed = (WORK / "fixed" / program.name).read_text(encoding="utf-8") != text
        print(f"{program.name}: {'fixed' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
