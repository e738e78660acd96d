#!/usr/bin/env python3
"""Measure syncfree-lint against the hand-labelled development corpus.

Standard library only; Python 3.9+.

    python benchmarks/corpus_eval.py --root /work/corpus \
        --labels /work/shared/corpus/dev-labels.tsv \
        [--linter-cmd "syncfree-lint"] [--extra-args "--select SFL"] \
        [--show-unlabelled N] [--seed S] [--py-only] [--statement-span] \
        [--findings FILE] [--cwd DIR] [--save-output FILE] [--json FILE] [--repos NAME ...]

The linter runs once, as one subprocess over every repository folder:
``<linter-cmd> <root>/<name1> <root>/<name2> ... <extra-args>``.  It must print
flake8-style lines ``path:line:col: CODE message`` (exit 0, or 1 with findings,
2 on error).  Paths are normalised to be relative to ``--root`` and compared
with the labels (see /work/shared/corpus/README.md):

    a  per-step host sync: must be reported (any finding on that line)
    b  guarded by a logging interval: must not be reported
    c  not a device sync: must not be reported
    d  sync the code needs for control flow: reporting it is right;
       found / not found are counted separately, neither is an error
    e  outside the hot loop: must not be reported

precision = TP / (TP + FP) over labelled lines, recall = TP / #a, where
TP = an ``a`` line with a finding and FP = a ``b``/``c``/``e`` line with one.

The script always exits 0 once it has a result (scores are not a gate); it
exits 2 only when the linter could not be started or --findings is unreadable.
"""

import argparse
import ast
import collections
import json
import os
import random
import re
import shlex
import subprocess
import sys
import time

LABEL_MEANING = {
    "a": "per-step sync: must be reported",
    "b": "log-interval guarded: must not be reported",
    "c": "not a device sync: must not be reported",
    "d": "needed sync: reporting is right",
    "e": "outside hot loop: must not be reported",
}
MUST_FIND = {"a"}
MUST_NOT_FIND = {"b", "c", "e"}

# path:line:col: CODE message   (col optional, for robustness)
FINDING_RE = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<code>[A-Za-z]+[0-9]+)\b\s*(?P<msg>.*)$"
)


class Finding(object):
    __slots__ = ("path", "line", "col", "code", "msg", "raw")

    def __init__(self, path, line, col, code, msg, raw):
        self.path, self.line, self.col = path, line, col
        self.code, self.msg, self.raw = code, msg, raw

    def short(self):
        col = "" if self.col is None else "%d:" % self.col
        return "%s:%d:%s %s %s" % (self.path, self.line, col, self.code, self.msg)


class Label(object):
    __slots__ = ("repo", "path", "line", "label")

    def __init__(self, repo, path, line, label):
        self.repo, self.path, self.line, self.label = repo, path, line, label

    @property
    def ext(self):
        return os.path.splitext(self.path)[1] or "(none)"

    @property
    def lintable(self):
        return self.ext == ".py"


# --------------------------------------------------------------------------- input


def read_tsv(path):
    with open(path, encoding="utf-8") as fh:
        rows = [ln.rstrip("\n").rstrip("\r") for ln in fh]
    rows = [r for r in rows if r.strip() and not r.lstrip().startswith("#")]
    if not rows:
        return []
    header = rows[0].split("\t")
    return [dict(zip(header, r.split("\t"))) for r in rows[1:]]


def read_labels(path):
    labels = []
    for row in read_tsv(path):
        path_ = normalise_rel(row["path"])
        labels.append(Label(row["repo"], path_, int(row["line"]), row["label"].strip().lower()))
    return labels


def repo_names(labels_path, labels, explicit=None):
    """Repository folder names, in dev-repos.tsv order when that file is next to the labels."""
    if explicit:
        return list(explicit)
    names = []
    repos_tsv = os.path.join(os.path.dirname(os.path.abspath(labels_path)), "dev-repos.tsv")
    if os.path.isfile(repos_tsv):
        names = [r["name"] for r in read_tsv(repos_tsv) if r.get("name")]
    for lab in labels:
        if lab.repo not in names:
            names.append(lab.repo)
    return names


def normalise_rel(p):
    p = p.replace("\\", "/")
    p = os.path.normpath(p).replace("\\", "/")
    if p.startswith("./"):
        p = p[2:]
    return p


def to_root_relative(path, root_abs, root_real, cwd):
    """Return the finding's path relative to the corpus root, or None if outside it."""
    p = path.strip()
    if not os.path.isabs(p):
        p = os.path.join(cwd, p)
    p = os.path.normpath(p)
    for base, cand in ((root_abs, p), (root_real, os.path.realpath(p))):
        rel = os.path.relpath(cand, base)
        if rel != os.curdir and not rel.startswith(os.pardir + os.sep) and rel != os.pardir:
            return normalise_rel(rel)
    return None


def parse_output(text, root, cwd):
    """Parse linter stdout. Returns (findings, outside_root, unparsed_lines)."""
    root_abs = os.path.normpath(os.path.abspath(root))
    root_real = os.path.realpath(root)
    findings, outside, unparsed = [], [], []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        m = FINDING_RE.match(line)
        if not m:
            unparsed.append(line)
            continue
        rel = to_root_relative(m.group("path"), root_abs, root_real, cwd)
        col = int(m.group("col")) if m.group("col") is not None else None
        f = Finding(rel, int(m.group("line")), col, m.group("code"), m.group("msg").strip(), line)
        if rel is None:
            f.path = m.group("path")
            outside.append(f)
        else:
            findings.append(f)
    return findings, outside, unparsed


def run_linter(cmd, paths, extra, cwd):
    argv = shlex.split(cmd) + list(paths) + list(extra)
    t0 = time.time()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, errors="replace")
    return argv, proc.returncode, proc.stdout, proc.stderr, time.time() - t0


# --------------------------------------------------------------------------- matching


def statement_span(source, line):
    """(first, last) lines of the innermost statement holding ``line``; for a compound
    statement only its header (up to the line before its body). Falls back to (line, line)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return line, line
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        start = node.lineno
        end = getattr(node, "end_lineno", None) or start
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            first_child = body[0].lineno
            decorators = getattr(node, "decorator_list", None) or []
            end = max(start, first_child - 1)
            if decorators:
                start = min(start, min(d.lineno for d in decorators))
        if start <= line <= end:
            if best is None or (end - start) < (best[1] - best[0]):
                best = (start, end)
    return best or (line, line)


class SourceCache(object):
    def __init__(self, root):
        self.root, self._text = root, {}

    def text(self, rel):
        if rel not in self._text:
            try:
                with open(os.path.join(self.root, rel), encoding="utf-8", errors="replace") as fh:
                    self._text[rel] = fh.read()
            except OSError:
                self._text[rel] = None
        return self._text[rel]

    def line(self, rel, n):
        t = self.text(rel)
        if t is None:
            return None
        lines = t.splitlines()
        return lines[n - 1] if 1 <= n <= len(lines) else None


def match(labels, by_line, sources, use_span):
    """For each label: the findings that count for it."""
    out = []
    for lab in labels:
        lo = hi = lab.line
        if use_span and lab.lintable:
            src = sources.text(lab.path)
            if src is not None:
                lo, hi = statement_span(src, lab.line)
        hits = []
        for n in range(lo, hi + 1):
            hits.extend(by_line.get((lab.path, n), ()))
        out.append((lab, hits))
    return out


# --------------------------------------------------------------------------- report


def fmt_table(header, rows):
    cols = list(zip(*([header] + rows))) if rows else [[h] for h in header]
    widths = [max(len(str(c)) for c in col) for col in cols]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(str(c).rjust(w) if isinstance(c, (int, float)) or _numlike(c)
                               else str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def _numlike(s):
    return isinstance(s, str) and bool(re.match(r"^-?[\d.]+%?$|^n/a$|^-$", s))


def ratio(num, den):
    return "n/a" if den == 0 else "%.3f" % (num / den)


def section(title):
    print()
    print("=" * 78)
    print(title)
    print("=" * 78)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="folder holding one folder per corpus repo")
    ap.add_argument("--labels", required=True, help="dev-labels.tsv")
    ap.add_argument("--linter-cmd", default="syncfree-lint",
                    help="linter command line (shell-split); default: %(default)s")
    ap.add_argument("--extra-args", action="append", default=[], metavar="ARGS",
                    help="extra linter arguments, shell-split, appended after the paths; "
                         "repeatable; write --extra-args=--opt or --extra-args '--opt X'")
    ap.add_argument("--repos", nargs="+", metavar="NAME",
                    help="only these repo folders (default: dev-repos.tsv next to the labels, "
                         "plus any repo named in the labels)")
    ap.add_argument("--show-unlabelled", type=int, default=0, metavar="N",
                    help="print N random unlabelled findings for manual review")
    ap.add_argument("--seed", type=int, default=0, help="seed for --show-unlabelled (default 0)")
    ap.add_argument("--py-only", action="store_true",
                    help="leave labels on non-.py files (e.g. .rst docs) out of the scores")
    ap.add_argument("--statement-span", action="store_true",
                    help="a finding anywhere in the labelled line's statement (header only for "
                         "compound statements) counts, not just on the line itself")
    ap.add_argument("--findings", metavar="FILE",
                    help="read saved linter output instead of running the linter "
                         "(relative paths in it are resolved against --cwd)")
    ap.add_argument("--cwd", metavar="DIR",
                    help="directory the linter runs in, and that relative paths in its output "
                         "(or in --findings) are resolved against; default: current directory")
    ap.add_argument("--save-output", metavar="FILE", help="write the linter's stdout here")
    ap.add_argument("--json", metavar="FILE", help="write a JSON summary here")
    ap.add_argument("--alone", action="store_true",
                    help="lint each labelled file on its own (one linter run per file, as flake8, "
                         "pre-commit and editors hand files over) instead of each repo whole")
    args = ap.parse_args(argv)

    root = args.root
    cwd = os.path.abspath(args.cwd) if args.cwd else os.getcwd()
    labels = read_labels(args.labels)
    names = repo_names(args.labels, labels, args.repos)
    present = [n for n in names if os.path.isdir(os.path.join(root, n))]
    absent = [n for n in names if n not in present]
    if args.repos:
        labels = [l for l in labels if l.repo in set(args.repos)]

    extra = []
    for chunk in args.extra_args:
        extra.extend(shlex.split(chunk))

    section("syncfree-lint corpus evaluation")
    print("root:    %s" % os.path.abspath(root))
    print("labels:  %s (%d rows)" % (args.labels, len(labels)))
    print("repos:   %s" % ", ".join(present))
    if absent:
        print("WARNING: repo folders missing under root (skipped): %s" % ", ".join(absent))

    rc, elapsed, stderr = None, None, ""
    if args.findings:
        try:
            with open(args.findings, encoding="utf-8", errors="replace") as fh:
                stdout = fh.read()
        except OSError as exc:
            print("ERROR: cannot read --findings: %s" % exc, file=sys.stderr)
            return 2
        print("linter:  (saved output) %s" % args.findings)
    else:
        paths = [os.path.join(os.path.abspath(root), n) for n in present]
        if args.alone:
            paths = sorted({os.path.join(os.path.abspath(root), l.path) for l in labels
                            if l.repo in present and l.lintable})
        try:
            if args.alone:
                runs = [run_linter(args.linter_cmd, [p], extra, cwd) for p in paths]
                argv_run = runs[0][0] if runs else shlex.split(args.linter_cmd)
                rc = max((r[1] for r in runs), default=0)
                stdout = "".join(r[2] for r in runs)
                stderr = "".join(r[3] for r in runs)
                elapsed = sum(r[4] for r in runs)
            else:
                argv_run, rc, stdout, stderr, elapsed = run_linter(args.linter_cmd, paths, extra, cwd)
        except OSError as exc:
            print("ERROR: cannot start linter %r: %s" % (args.linter_cmd, exc), file=sys.stderr)
            return 2
        shown = " ".join(shlex.quote(a) for a in argv_run[: len(shlex.split(args.linter_cmd))])
        print("linter:  %s <%d repo folders> %s" % (shown, len(paths), " ".join(map(shlex.quote, extra))))
        print("exit:    %d   wall: %.1fs" % (rc, elapsed))
        if rc not in (0, 1):
            print("WARNING: linter exited %d (error); results below use whatever it printed." % rc)
        if stderr.strip():
            tail = stderr.strip().splitlines()
            print("stderr (%d lines, last 15):" % len(tail))
            for ln in tail[-15:]:
                print("    " + ln)
        if args.save_output:
            with open(args.save_output, "w", encoding="utf-8") as fh:
                fh.write(stdout)

    findings, outside, unparsed = parse_output(stdout, root, cwd)
    by_line = collections.defaultdict(list)
    for f in findings:
        by_line[(f.path, f.line)].append(f)
    sources = SourceCache(root)

    # ---------------------------------------------------------------- findings overview
    section("Findings")
    print("total findings: %d (under root: %d, outside root: %d, unparsed lines: %d)"
          % (len(findings) + len(outside), len(findings), len(outside), len(unparsed)))
    per_code = collections.Counter(f.code for f in findings + outside)
    print()
    print(fmt_table(["code", "findings"], [[c, n] for c, n in sorted(per_code.items())]))
    if outside:
        print("\nfindings outside root (first 5):")
        for f in outside[:5]:
            print("    " + f.raw)
    if unparsed:
        print("\nunparsed stdout lines (first 5):")
        for ln in unparsed[:5]:
            print("    " + ln)

    # ---------------------------------------------------------------- matching
    results = match(labels, by_line, sources, args.statement_span)
    not_lintable = [(l, h) for l, h in results if not l.lintable]
    scored = [(l, h) for l, h in results if l.lintable or not args.py_only]

    per_label = collections.OrderedDict((k, [0, 0]) for k in "abcde")
    for lab, hits in scored:
        per_label.setdefault(lab.label, [0, 0])[0 if hits else 1] += 1

    section("Per label%s" % (" (statement-span matching)" if args.statement_span else ""))
    rows = []
    for k, (found, nf) in per_label.items():
        if k in MUST_FIND:
            verdict = "TP %d / miss %d" % (found, nf)
        elif k in MUST_NOT_FIND:
            verdict = "FP %d / ok %d" % (found, nf)
        else:
            verdict = "(not scored)"
        rows.append([k, LABEL_MEANING.get(k, "?"), found + nf, found, nf, verdict])
    print(fmt_table(["label", "meaning", "n", "found", "not found", "outcome"], rows))

    # per repo
    section("Per repo")
    findings_per_repo = collections.Counter(f.path.split("/", 1)[0] for f in findings)
    rows = []
    for name in names:
        rs = [(l, h) for l, h in scored if l.repo == name]
        n_a = sum(1 for l, _ in rs if l.label in MUST_FIND)
        tp = sum(1 for l, h in rs if l.label in MUST_FIND and h)
        fp = sum(1 for l, h in rs if l.label in MUST_NOT_FIND and h)
        neg = sum(1 for l, _ in rs if l.label in MUST_NOT_FIND)
        d_f = sum(1 for l, h in rs if l.label == "d" and h)
        d_n = sum(1 for l, h in rs if l.label == "d" and not h)
        rows.append([name, findings_per_repo.get(name, 0), len(rs), n_a, tp, n_a - tp, neg, fp,
                     "%d/%d" % (d_f, d_f + d_n), ratio(tp, tp + fp), ratio(tp, n_a)])
    print(fmt_table(["repo", "findings", "labels", "#a", "TP", "miss", "#bce", "FP",
                     "d found", "precision", "recall"], rows))

    # ---------------------------------------------------------------- details
    def show_label(lab, hits, with_nearby=False):
        src = sources.line(lab.path, lab.line)
        print("  [%s] %s:%d" % (lab.label, lab.path, lab.line))
        if src is not None:
            print("        | %s" % src.strip()[:140])
        else:
            print("        | (file or line not found under root)")
        for f in hits:
            print("      -> %s" % f.short())
        if with_nearby:
            near = [f for (p, n), fs in by_line.items() if p == lab.path and 0 < abs(n - lab.line) <= 3
                    for f in fs]
            for f in sorted(near, key=lambda f: f.line):
                print("      ~ nearby: %s" % f.short())

    misses = [(l, h) for l, h in scored if l.label in MUST_FIND and not h]
    fps = [(l, h) for l, h in scored if l.label in MUST_NOT_FIND and h]
    d_found = [(l, h) for l, h in scored if l.label == "d" and h]
    d_nf = [(l, h) for l, h in scored if l.label == "d" and not h]

    section("Misses: label a, not reported (%d)" % len(misses))
    for lab, hits in misses:
        show_label(lab, hits, with_nearby=True)
    section("False positives: label b/c/e, reported (%d)" % len(fps))
    for lab, hits in fps:
        show_label(lab, hits)
    section("Label d: reported (%d) - check the message offers the sync-free pattern" % len(d_found))
    for lab, hits in d_found:
        show_label(lab, hits)
    section("Label d: not reported (%d) - not an error" % len(d_nf))
    for lab, hits in d_nf:
        show_label(lab, hits, with_nearby=True)

    by_ext = collections.defaultdict(list)
    for lab, hits in not_lintable:
        by_ext[lab.ext].append((lab, hits))
    for ext, items in sorted(by_ext.items()):
        section("Not lintable: %s (%d labels; %s)" % (
            ext, len(items), "left out of the scores (--py-only)" if args.py_only
            else "counted in the scores, so a/b/c/e show as misses/FPs above"))
        for lab, hits in items:
            show_label(lab, hits)

    # ---------------------------------------------------------------- scores
    tp = sum(1 for l, h in scored if l.label in MUST_FIND and h)
    n_a = sum(1 for l, _ in scored if l.label in MUST_FIND)
    fp = len(fps)
    section("Scores (labelled lines only%s)" % (", .py labels only" if args.py_only else ""))
    print("TP (a found)        %d" % tp)
    print("FN (a not found)    %d" % (n_a - tp))
    print("FP (b/c/e found)    %d" % fp)
    print("TN (b/c/e quiet)    %d" % sum(1 for l, h in scored if l.label in MUST_NOT_FIND and not h))
    print("d found / not found %d / %d" % (len(d_found), len(d_nf)))
    print("precision = TP/(TP+FP) = %s" % ratio(tp, tp + fp))
    print("recall    = TP/#a      = %s   (#a = %d)" % (ratio(tp, n_a), n_a))

    # ---------------------------------------------------------------- unlabelled sample
    labelled_lines = set()
    for lab, _ in results:
        lo = hi = lab.line
        if args.statement_span and lab.lintable and sources.text(lab.path) is not None:
            lo, hi = statement_span(sources.text(lab.path), lab.line)
        for n in range(lo, hi + 1):
            labelled_lines.add((lab.path, n))
    unlabelled = [f for f in findings if (f.path, f.line) not in labelled_lines]
    if args.show_unlabelled > 0:
        k = min(args.show_unlabelled, len(unlabelled))
        sample = random.Random(args.seed).sample(unlabelled, k) if k else []
        section("Unlabelled findings: %d random of %d (seed %d) for manual review"
                % (k, len(unlabelled), args.seed))
        for f in sorted(sample, key=lambda f: (f.path, f.line)):
            print("  %s" % f.short())
            src = sources.line(f.path, f.line)
            if src is not None:
                print("        | %s" % src.strip()[:140])
    else:
        print("\nunlabelled findings: %d (use --show-unlabelled N to sample some)" % len(unlabelled))

    if args.json:
        summary = {
            "root": os.path.abspath(root), "labels": args.labels, "linter_cmd": args.linter_cmd,
            "extra_args": extra, "linter_exit": rc, "linter_wall_s": elapsed,
            "py_only": args.py_only, "statement_span": args.statement_span,
            "findings_total": len(findings) + len(outside), "findings_per_code": dict(per_code),
            "findings_per_repo": dict(findings_per_repo), "unlabelled_findings": len(unlabelled),
            "tp": tp, "fn": n_a - tp, "fp": fp, "n_a": n_a,
            "d_found": len(d_found), "d_not_found": len(d_nf),
            "precision": None if tp + fp == 0 else tp / (tp + fp),
            "recall": None if n_a == 0 else tp / n_a,
            "labels_detail": [
                {"repo": l.repo, "path": l.path, "line": l.line, "label": l.label,
                 "found": bool(h), "findings": [f.short() for f in h]} for l, h in results],
        }
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=2, sort_keys=True)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
