"""The linter against the GPU's own sync detector, and the fix programs before/after on CUDA.

    python benchmarks/gpu/sync_debug_table.py benchmarks/results/gpu/sync_debug.json \
        > benchmarks/results/gpu/sync_debug_vs_lint.txt

Reads what ``sync_debug_run.py`` wrote on the GPU machine and lints the same files here (every
rule, the opt-in ones too; each folder linted whole, as a project).  A GPU line that synced at
least once per optimizer step (and not all after the last step) and that no finding covers is a
miss; one that synced less often (after the loop, at a log interval, once per epoch) is not the
linter's business.  SFL304 is reported where a torchmetrics metric is built, for its
updates: an ``m.update(`` line is covered by it at ``m = ...`` (shown as ``CODE@init``).  A finding on a
line that never synced on the GPU is listed too: a finding for a sync the detector does not see,
code the run did not reach, or a false alarm.  The fixed copies of ``fixtures/fix_programs/`` are
compared with their originals: the same printed lines and result, and fewer syncs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PER_STEP = 0.9  # syncs per optimizer step at which a line counts as syncing every step
OPT_IN = frozenset({"SFL402"})  # off by default: blocking batch copies


def relative(path: str) -> str:
    for marker in ("fixtures/", ".gpuwork/"):
        if marker in path:
            return path[path.index(marker):]
    return path


def lint(folders: list[str]) -> dict[str, list[tuple[int, int, str]]]:
    """(first line, last line, code) of every finding, by relative path."""
    cmd = [sys.executable, "-m", "syncfree_lint", "--no-cache", "--select", "SFL", "--output-format", "json",
           "--exit-zero", *folders]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
    found: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for item in json.loads(done.stdout):
        found[item["path"]].append((item["start"]["line"], item["end"]["line"], item["code"]))
    return found


_AT_CONSTRUCTOR = ("SFL304",)  # reported where the metric is built, for its updates


def constructor_codes(path: str, line: int, found: dict) -> list[str]:
    """Codes of findings at the constructor of the object whose ``NAME.update(`` is on ``line``."""
    text = source_line(path, line, cut=False)
    if ".update(" not in text:
        return []
    name = text.split(".update(")[0].strip().split()[-1]
    return sorted({code for lo, _hi, code in found.get(path, []) if code in _AT_CONSTRUCTOR
                   and source_line(path, lo, cut=False).startswith(f"{name} =")})


def every_step(row: dict, where: str) -> bool:
    """At least PER_STEP syncs per step and not all after the last step (a read of a kept history)."""
    steps = row["steps"]
    return row["syncs"][where] / steps >= PER_STEP and row["first_step"].get(where, 0) < steps


def source_line(path: str, line: int, cut: bool = True) -> str:
    try:
        text = (ROOT / path).read_text(encoding="utf-8").splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return "?"
    return text if len(text) <= 60 or not cut else text[:57] + "..."


def compare(rows: list[dict], found: dict) -> list[str]:
    out = [f"{'program / line':<52}{'syncs':>6}{'/step':>7}  {'linter':<16}verdict  code", ""]
    totals = defaultdict(int)
    for row in rows:
        program = relative(row["program"])
        steps = row.get("steps") or 0
        if row.get("error") or not steps:
            out.append(f"{program}: {'error ' + row['error'] if row.get('error') else 'no optimizer step ran'}")
            continue
        out.append(f"{program}  ({steps} optimizer steps)")
        synced_lines = defaultdict(set)
        for where, count in sorted(row["syncs"].items(), key=lambda kv: kv[0]):
            if ":" not in where:
                out.append(f"  {where:<50}{count:>6}")
                continue
            path, line = relative(where.rsplit(":", 1)[0]), int(where.rsplit(":", 1)[1])
            synced_lines[path].add(line)
            codes = sorted({code for lo, hi, code in found.get(path, []) if lo <= line <= hi})
            per_step, each = count / steps, every_step(row, where)
            if not codes and constructor_codes(path, line, found):
                codes = [code + "@init" for code in constructor_codes(path, line, found)]
            if codes:
                verdict = "both"
            elif each:
                verdict = "MISSED"
            else:
                verdict = "not per step"
            totals[(verdict, each)] += 1
            if verdict == "both" and each and all(code.split("@")[0] in OPT_IN for code in codes):
                totals["opt-in only"] += 1
            label = f"{path.rsplit('/', 1)[-1]}:{line}"
            out.append(f"  {label:<50}{count:>6}{per_step:>7.2f}  {','.join(codes) or '-':<16}{verdict:<13}"
                       f"{source_line(path, line)}")
        for lo, hi, code in sorted(found.get(program, [])):
            if not any(lo <= line <= hi for line in synced_lines[program]):
                totals[("linter only", True)] += 1
                out.append(f"  {program.rsplit('/', 1)[-1] + ':' + str(lo):<50}{0:>6}{0:>7.2f}  {code:<16}"
                           f"{'linter only':<13}{source_line(program, lo)}")
    per_step_lines = totals[("both", True)] + totals[("MISSED", True)]
    out[:0] = [
        f"GPU lines syncing every step: {per_step_lines}; the linter reports {totals[('both', True)]}, "
        f"misses {totals[('MISSED', True)]}",
        f"  of those reported, {totals['opt-in only']} only by the opt-in {', '.join(sorted(OPT_IN))} (blocking batch "
        "copies); the default rules report the other "
        f"{totals[('both', True)] - totals['opt-in only']}",
        f"GPU lines syncing less often: {totals[('both', False)] + totals[('not per step', False)]} "
        f"(the linter reports {totals[('both', False)]} of them)",
        f"findings on lines that never synced on the GPU: {totals[('linter only', True)]}",
        "",
    ]
    return out


def fixes(rows: list[dict]) -> list[str]:
    by_name = {relative(r["program"]): r for r in rows}
    out = [f"{'fix program':<46}{'same output':>12}{'syncs before':>14}{'after':>7}"
           f"{'per-step lines before':>23}{'after':>7}  verdict", ""]
    for name, before in sorted(by_name.items()):
        if not name.startswith(".gpuwork/original/"):
            continue
        after = by_name.get(name.replace("/original/", "/fixed/"))
        if after is None:
            continue
        fixed = (ROOT / "fixtures" / "fix_programs" / Path(name).name).read_text(encoding="utf-8")
        expected = "fixed" if "# fix: fixed" in fixed else "declined"
        same = before.get("printed") == after.get("printed") and before.get("result") == after.get("result")
        n_before, n_after = sum(before["syncs"].values()), sum(after["syncs"].values())
        each_before = sum(1 for w in before.get("syncs", {}) if ":" in w and every_step(before, w))
        each_after = sum(1 for w in after.get("syncs", {}) if ":" in w and every_step(after, w))
        if before.get("error") or after.get("error"):
            verdict = f"error: {before.get('error') or after.get('error')}"
        elif expected == "declined":
            verdict = "declined, unchanged" if same and n_after == n_before else "DECLINED BUT DIFFERENT"
        else:
            verdict = "fewer syncs, same output" if same and n_after < n_before else "WRONG"
        out.append(f"{Path(name).name:<46}{'yes' if same else 'NO':>12}{n_before:>14}{n_after:>7}"
                   f"{each_before:>23}{each_after:>7}  {verdict}")
    return out


def main(argv: list[str]) -> int:
    rows = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    env = Path(argv[0]).with_name("env.txt")
    header = env.read_text(encoding="utf-8").strip().splitlines() if env.exists() else []
    compared = [r for r in rows if ".gpuwork/fixed/" not in r["program"]]
    found = lint(sorted({str(Path(relative(r["program"])).parent) for r in compared}))
    lines = ["The linter against torch.cuda.set_sync_debug_mode(\"warn\") on CUDA", *header, ""]
    lines += compare(compared, found)
    lines += ["", "Fix programs on CUDA: original and `--fix --unsafe-fixes` copy, same printed lines and result", ""]
    lines += fixes(rows)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
