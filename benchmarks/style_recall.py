#!/usr/bin/env python3
"""Measure how well syncfree-lint generalises to training programs written in common styles.

Standard library only; Python 3.9+.

    python benchmarks/style_recall.py [--linter-cmd "syncfree-lint"] [--root fixtures/styles]
                                      [--extra-args "..."] [--details]

Every folder of ``fixtures/styles`` is a small project whose lines carry ground-truth marks written by
semantics (see fixtures/styles/README.md):

    # expect: SFL101         the line syncs once per step (the code names the closest rule)
    # expect: none           the line looks similar but must not be reported

The linter runs on each folder whole (``<linter-cmd> <folder>``, as a user runs it) and on each file alone
(``<linter-cmd> <file>``, as flake8, pre-commit and editors hand it over).  Its flake8-style output
``path:line:col: CODE message`` is compared with the marks:

    found        a positive line with a finding of any code
    code match   a positive line with a finding of the expected code
    missed       a positive line without a finding
    false alarm  a ``none`` line with a finding

Findings on unmarked lines are counted apart (``unmarked``): they are neither right nor wrong here.
This is a measurement, not a test gate: the script always exits 0.
"""

import argparse
import collections
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

EXPECT_RE = re.compile(r"#\s*expect:\s*([A-Za-z0-9_,\s]+?)\s*(?:#|$)")
FINDING_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<code>[A-Z]{1,3}[0-9]{1,3})\b\s*(?P<msg>.*)$")


def marks_of(path):
    """({line: set of expected codes}, set of `none` lines) of one file."""
    positives, negatives = {}, set()
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            m = EXPECT_RE.search(text)
            if not m:
                continue
            codes = [c.strip() for c in m.group(1).split(",") if c.strip()]
            if [c.lower() for c in codes] == ["none"]:
                negatives.add(number)
            else:
                positives[number] = set(codes)
    return positives, negatives


def run_linter(cmd, extra, target, timeout):
    """Run the linter on one path; return ({(realpath, line): set of codes}, error text or None)."""
    argv = shlex.split(cmd) + [target] + shlex.split(extra)
    try:
        proc = subprocess.run(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, "could not run %r: %s" % (" ".join(argv), exc)
    found = collections.defaultdict(set)
    for raw in proc.stdout.splitlines():
        m = FINDING_RE.match(raw.strip())
        if not m:
            continue
        path = m.group("path")
        if not os.path.isabs(path):
            path = os.path.join(REPO, path)
        found[(os.path.realpath(path), int(m.group("line")))].add(m.group("code"))
    error = None
    if proc.returncode not in (0, 1):
        error = "exit %d: %s" % (proc.returncode, (proc.stderr.strip().splitlines() or [""])[-1])
    return found, error


class Score(object):
    def __init__(self):
        self.positives = 0
        self.negatives = 0
        self.found = 0
        self.code_match = 0
        self.missed = []        # (rel, line, expected codes)
        self.other_code = []    # (rel, line, expected codes, reported codes): found, under another code
        self.false_alarms = []  # (rel, line, reported codes)
        self.unmarked = []      # (rel, line, reported codes)
        self.errors = []

    def add(self, other):
        self.positives += other.positives
        self.negatives += other.negatives
        self.found += other.found
        self.code_match += other.code_match
        self.missed += other.missed
        self.other_code += other.other_code
        self.false_alarms += other.false_alarms
        self.unmarked += other.unmarked
        self.errors += other.errors


def score_file(rel, real, marks, findings):
    positives, negatives = marks
    s = Score()
    s.positives, s.negatives = len(positives), len(negatives)
    reported = {line: codes for (p, line), codes in findings.items() if p == real}
    for line in sorted(positives):
        codes = reported.get(line, set())
        if codes:
            s.found += 1
            if codes & positives[line]:
                s.code_match += 1
            else:
                s.other_code.append((rel, line, positives[line], codes))
        else:
            s.missed.append((rel, line, positives[line]))
    for line in sorted(negatives):
        if line in reported:
            s.false_alarms.append((rel, line, reported[line]))
    for line in sorted(reported):
        if line not in positives and line not in negatives:
            s.unmarked.append((rel, line, reported[line]))
    return s


def pct(a, b):
    return "%5.1f%%" % (100.0 * a / b) if b else "    -"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--linter-cmd", default="syncfree-lint", help="command that runs the linter (default: syncfree-lint)")
    ap.add_argument("--root", default=os.path.join(REPO, "fixtures", "styles"), help="folder of style projects")
    ap.add_argument("--extra-args", default="", help="arguments appended to every linter run")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per linter run")
    args = ap.parse_args()

    root = os.path.realpath(args.root)
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and not d.startswith((".", "_")))
    totals = {"whole": Score(), "alone": Score()}
    per_folder = []
    for name in folders:
        folder = os.path.join(root, name)
        files = []
        for base, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            files += [os.path.join(base, n) for n in sorted(names) if n.endswith(".py")]
        if not files:
            continue
        marks = {f: marks_of(f) for f in files}
        whole_findings, whole_error = run_linter(args.linter_cmd, args.extra_args, os.path.relpath(folder, REPO), args.timeout)
        whole, alone = Score(), Score()
        if whole_error:
            whole.errors.append("%s (whole): %s" % (name, whole_error))
        for f in files:
            rel = os.path.relpath(f, root)
            real = os.path.realpath(f)
            whole.add(score_file(rel, real, marks[f], whole_findings))
            alone_findings, alone_error = run_linter(args.linter_cmd, args.extra_args, os.path.relpath(f, REPO), args.timeout)
            if alone_error:
                alone.errors.append("%s (alone): %s" % (rel, alone_error))
            alone.add(score_file(rel, real, marks[f], alone_findings))
        per_folder.append((name, whole, alone))
        totals["whole"].add(whole)
        totals["alone"].add(alone)

    header = "%-18s %4s %4s | %-28s | %-28s" % ("folder", "pos", "none", "whole: found code miss FA unm", "alone: found code miss FA unm")
    print("Style recall: %s on %s (positives found = any code on the line; code = the expected code)" % (args.linter_cmd, os.path.relpath(root, REPO)))
    print()
    print(header)
    print("-" * len(header))

    def cells(s):
        return "%11d %4d %4d %2d %3d" % (s.found, s.code_match, s.positives - s.found, len(s.false_alarms), len(s.unmarked))

    for name, whole, alone in per_folder:
        print("%-18s %4d %4d | %-28s | %-28s" % (name, whole.positives, whole.negatives, cells(whole), cells(alone)))
    print("-" * len(header))
    w, a = totals["whole"], totals["alone"]
    print("%-18s %4d %4d | %-28s | %-28s" % ("TOTAL", w.positives, w.negatives, cells(w), cells(a)))
    print()
    for mode in ("whole", "alone"):
        s = totals[mode]
        print("%s: recall %s (%d/%d), code match %s (%d/%d), false alarms %d/%d none lines, unmarked findings %d"
              % (mode, pct(s.found, s.positives), s.found, s.positives, pct(s.code_match, s.positives), s.code_match,
                 s.positives, len(s.false_alarms), s.negatives, len(s.unmarked)))

    for mode in ("whole", "alone"):
        s = totals[mode]
        print()
        print("== %s: positives missed ==" % mode)
        for rel, line, expected in s.missed:
            print("  %s:%d expected %s" % (rel, line, ",".join(sorted(expected))))
        print("== %s: positives found under another code ==" % mode)
        for rel, line, expected, got in s.other_code:
            print("  %s:%d expected %s, reported %s" % (rel, line, ",".join(sorted(expected)), ",".join(sorted(got))))
        print("== %s: false alarms (`none` lines reported) ==" % mode)
        for rel, line, got in s.false_alarms:
            print("  %s:%d reported %s" % (rel, line, ",".join(sorted(got))))
        print("== %s: findings on unmarked lines ==" % mode)
        for rel, line, got in s.unmarked:
            print("  %s:%d reported %s" % (rel, line, ",".join(sorted(got))))
        if s.errors:
            print("== %s: linter errors ==" % mode)
            for e in s.errors:
                print("  " + e)
    if totals["whole"].errors or totals["alone"].errors:  # a run that could not lint measures nothing: say so, loudly
        print("style_recall: the linter failed on some runs (listed above); these figures are not a measurement",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
