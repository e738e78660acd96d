"""Check the display-only suggestions of a corpus run: apply them to copies, re-lint, and say per guard
whether its function is left free of host reads.

    python -m syncfree_lint /work/corpus/* -j 2 --no-cache --diff --suggestions > sugg.diff
    python benchmarks/suggestion_review.py sugg.diff > benchmarks/results/fix_suggestions.txt

The diff's files (absolute paths, as ``--diff`` prints them) are copied under a temporary folder,
patched with ``patch -p1`` and linted alone (``--no-project``). Printed: one line per guard the diff
adds (file, line, function, and whether other SFL1xx findings stay in that function), the count of
files that no longer parse and of guarded lines still reported (both must be 0), then the totals.
"""
from __future__ import annotations

import ast
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import List, Optional, Tuple

GUARD = re.compile(r"^\+\s*if \w+ % \d+ == 0:\s*$")


def added_guards(diff: str) -> List[Tuple[str, int]]:
    """(file, line in the patched file) of each ``if step % N == 0:`` the diff adds."""
    guards, current, line_no = [], None, 0
    for line in diff.splitlines():
        if line.startswith("+++ b/"):
            current = line[6:]
        elif line.startswith("@@"):
            found = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", line)
            line_no = int(found.group(1)) if found else 0
        elif current and line.startswith("+"):
            if GUARD.match(line):
                guards.append((current, line_no))
            line_no += 1
        elif current and line.startswith(" "):
            line_no += 1
    return guards


def function_of(path: str, line: int) -> Optional[ast.AST]:
    best: Optional[ast.AST] = None
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or 0):
            if best is None or node.lineno > best.lineno:  # type: ignore[attr-defined]
                best = node
    return best


def main() -> None:
    diff = open(sys.argv[1], encoding="utf-8").read()
    root = tempfile.mkdtemp(prefix="suggestions-")
    files = re.findall(r"^\+\+\+ b/(\S+)$", diff, re.M)
    for name in files:
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        shutil.copy("/" + name, os.path.join(root, name))
    subprocess.run(["patch", "-s", "-d", root, "-p1"], input=diff, text=True, check=True)
    out = subprocess.run([sys.executable, "-m", "syncfree_lint", "--no-cache", "--no-project", "--exit-zero",
                          "--output-format", "json", *(os.path.join(root, f) for f in files)],
                         capture_output=True, text=True).stdout
    after = json.loads(out)
    guards = added_guards(diff)
    totals: collections.Counter = collections.Counter()
    for name, line in guards:
        path = os.path.join(root, name)
        function = function_of(path, line)
        low, high = (function.lineno, function.end_lineno) if function is not None else (1, 10 ** 9)  # type: ignore[attr-defined]
        rest = sorted({d["code"] for d in after if d["path"] == path and low <= d["start"]["line"] <= high
                       and d["code"].startswith("SFL1")})
        verdict = "step sync-free (SFL1xx)" if not rest else "other reads stay"
        totals[verdict] += 1
        where = getattr(function, "name", "<module>")
        print(f"{name.replace('work/corpus/', '')}:{line} {where}(): {verdict}{': ' + str(rest) if rest else ''}")
    broken = [d for d in after if d["code"] in ("SFL000", "SFL001")]
    still = [d for d in after for name, line in guards
             if d["path"] == os.path.join(root, name) and d["start"]["line"] == line + 1 and d["code"] == "SFL101"]
    print(f"unparsable or crashing after the suggestions: {len(broken)}; guarded lines still reported: {len(still)}")
    print(f"{len(guards)} guards: " + ", ".join(f"{n} {k}" for k, n in totals.most_common()))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
