"""The command line's last stage: baselines, ``--add-noqa``, fixing stdin, and printing.

Kept apart from ``cli.py`` (which parses options and runs the pipeline) so each stays small.
"""
from __future__ import annotations

import sys
from typing import Dict, List, Optional, Sequence, Set, TextIO, Tuple

from syncfree_lint import baseline
from syncfree_lint.config import Config
from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.fingerprint import SourceTexts, fingerprints
from syncfree_lint.output.formats import FORMATS, format_sarif
from syncfree_lint.output.source import format_with_source
from syncfree_lint.output.text import format_statistics, format_text, only_unsafe_note, summary_line

Stdin = Optional[Tuple[str, str]]
#: codes whose line says nothing about where a comment would help
_NO_NOQA = ("SFL000", "SFL001")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def fix_stdin(args, name: str, text: str, config: Config, project_cache, out: TextIO) -> int:
    """``--fix`` / ``--diff`` on a stdin buffer: the fixed source (or the diff) on stdout, the
    findings that remain on stderr, as ruff does."""
    from syncfree_lint.engine import lint_text
    from syncfree_lint.fixes.apply import fix_text

    def applicable(d: Diagnostic) -> bool:
        return d.fix is not None and d.fix.applies(args.unsafe_fixes, suggestions=args.suggestions and not args.fix)

    def lint(path: str, source: str) -> List[Diagnostic]:
        return lint_text(path, source, config, project_cache=project_cache, project=not args.no_project)

    from syncfree_lint.notebook import NotebookError, is_notebook
    from syncfree_lint.notebook_fix import fix_notebook

    if is_notebook(name):  # the cells are fixed as one program; the notebook goes to stdout
        try:
            fixed, rewritten = fix_notebook(name, text, lint, applicable)
        except NotebookError as exc:
            sys.stderr.write(f"syncfree-lint: cannot fix {name}: {exc}\n")
            fixed, rewritten = fix_text(name, text, lambda p, t: [], applicable), None
        new_text, diff = (rewritten.text, rewritten.diff(name)) if rewritten is not None else (text, "")
    else:
        fixed = fix_text(name, text, lint, applicable)
        new_text, diff = fixed.fixed, fixed.diff() if args.diff else ""
    if not fixed.changed:
        sys.stderr.write(only_unsafe_note(lint(name, text), args.unsafe_fixes))
    if args.diff:
        out.write(diff)
        return 1 if fixed.changed else 0
    out.write(new_text)
    remaining = lint(name, new_text)
    sys.stderr.write(format_text(remaining, unsafe_fixes=args.unsafe_fixes))
    if args.show_fixes and fixed.applied:
        sys.stderr.write(f"Fixed {_plural(len(fixed.applied), 'finding')}.\n")
    if any(d.code == "SFL001" for d in remaining):
        return 2
    return 1 if remaining and not args.exit_zero else 0


def add_noqa_files(diagnostics: Sequence[Diagnostic], stdin: Stdin, out: TextIO) -> int:
    """Write ``# noqa: CODE`` on every reported line; files without findings are not touched."""
    from syncfree_lint.fixes.apply import ChangedOnDisk, write_atomically
    from syncfree_lint.notebook import NotebookError
    from syncfree_lint.source import SourceError, decode_source, detect_encoding

    wanted: Dict[str, Dict[int, Set[str]]] = {}
    for d in diagnostics:
        if d.code not in _NO_NOQA:
            wanted.setdefault(d.path, {}).setdefault(d.line, set()).add(d.code)
    total = 0
    if stdin is not None:
        try:
            new, total, skipped = _with_noqa(stdin[0], stdin[1], wanted.get(stdin[0], {}))
        except NotebookError as exc:
            sys.stderr.write(f"syncfree-lint: cannot add noqa to {stdin[0]}: {exc}\n")
            new, total, skipped = stdin[1], 0, []
        out.write(new)
        _warn_skipped(stdin[0], skipped)
    for path, lines in ({} if stdin is not None else wanted).items():
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            text, encoding = decode_source(data), detect_encoding(data)
        except (OSError, SourceError) as exc:
            sys.stderr.write(f"syncfree-lint: cannot add noqa to {path}: {exc}\n")
            continue
        try:
            new, written, skipped = _with_noqa(path, text, lines)
        except NotebookError as exc:
            sys.stderr.write(f"syncfree-lint: cannot add noqa to {path}: {exc}\n")
            continue
        _warn_skipped(path, skipped)
        if new == text:
            continue
        try:
            write_atomically(path, new, data, encoding, data.startswith(b"\xef\xbb\xbf"))
            total += written
        except ChangedOnDisk:
            sys.stderr.write(f"syncfree-lint: {path} changed on disk; no noqa added\n")
        except OSError as exc:
            sys.stderr.write(f"syncfree-lint: cannot write {path}: {exc}\n")
    sys.stderr.write(f"Added {_plural(total, 'noqa directive')}.\n")
    return 0


def _with_noqa(path: str, text: str, lines: Dict[int, Set[str]]) -> Tuple[str, int, List[int]]:
    """``add_noqa`` on a file, or on a notebook's program with the cells written back."""
    from syncfree_lint.noqa_edit import add_noqa
    from syncfree_lint.notebook import is_notebook, read_notebook
    from syncfree_lint.notebook_write import write_cells

    if not is_notebook(path):
        new, written, skipped = add_noqa(text, lines)
        return new, written, list(skipped)
    notebook = read_notebook(text)
    program, written, skipped = add_noqa(notebook.python, lines)
    return (write_cells(notebook, program).text if program != notebook.python else text), written, list(skipped)


def _warn_skipped(path: str, lines: Sequence[int]) -> None:
    for line in lines:
        sys.stderr.write(f"syncfree-lint: {path}:{line}: the line ends inside a string or a continuation; "
                         "no noqa added there\n")


def report(args, result, config: Config, paths: Sequence[str], stdin: Stdin, out: TextIO) -> int:
    """Everything after linting (and fixing): returns the exit status."""
    texts = SourceTexts({stdin[0]: stdin[1]} if stdin is not None else None)
    diagnostics = result.diagnostics
    if args.write_baseline:
        try:
            count = baseline.write(args.write_baseline, diagnostics, texts)
        except OSError as exc:
            sys.stderr.write(f"syncfree-lint: error: cannot write {args.write_baseline}: {exc.strerror or exc}\n")
            return 2
        sys.stderr.write(f"syncfree-lint: recorded {_plural(count, 'finding')} in {args.write_baseline}\n")
        return 2 if result.internal_errors else 0
    stale = 0
    if args.baseline:
        from syncfree_lint.engine import discover

        linted = [stdin[0]] if stdin is not None else list(discover(paths, config))
        try:
            filtered = baseline.apply(args.baseline, diagnostics, texts, linted)
        except baseline.BaselineError as exc:
            sys.stderr.write(f"syncfree-lint: error: {exc}\n")
            return 2
        diagnostics, stale = filtered.diagnostics, filtered.stale
        if stale:
            sys.stderr.write(f"syncfree-lint: {_plural(stale, 'finding')} recorded in {args.baseline} no longer "
                             f"occur{'s' if stale == 1 else ''} (stale); update it with --write-baseline\n")
    if args.add_noqa:
        return add_noqa_files(diagnostics, stdin, out)
    if args.show_source and args.output_format == "text":
        out.write(format_with_source(diagnostics, texts.get, show_reach=args.show_reach, unsafe_fixes=args.unsafe_fixes))
    elif args.output_format == "text":
        out.write(format_text(diagnostics, show_reach=args.show_reach, unsafe_fixes=args.unsafe_fixes))
    elif args.output_format == "sarif":
        out.write(format_sarif(diagnostics, fingerprints(diagnostics, texts, config.root)))
    else:
        out.write(FORMATS[args.output_format](diagnostics))
    if args.statistics:
        out.write(format_statistics(list(diagnostics)))
    if args.show_fixes and not (args.fix or args.diff):
        out.write(declined_fixes(diagnostics))
    out.flush()
    if args.output_format in ("text", "grouped"):  # stdout keeps one finding per line for tools that parse it
        sys.stderr.write(summary_line(list(diagnostics), args.unsafe_fixes))
    if result.internal_errors:
        return 2
    if stale and args.baseline_strict:
        return 1
    return 1 if diagnostics and not args.exit_zero else 0


def declined_fixes(diagnostics) -> str:
    """``--show-fixes``: each finding whose rule has a fix that was not offered here, and why."""
    declined = sorted(d for d in diagnostics if d.fix_declined)
    if not declined:
        return ""
    lines = [f"No fix offered for {len(declined)} finding{'s' if len(declined) != 1 else ''}:\n"]
    lines += [f"  {d.where}: {d.code} {d.fix_declined}\n" for d in declined]
    suggested = [d for d in declined if d.fix is not None and d.fix.applicability == "display"]
    if suggested:
        lines.append(f"Suggested instead (display-only, never applied; `--diff --suggestions` shows them) for "
                     f"{len(suggested)} of them:\n")
        lines += [f"  {d.where}: {d.code} {d.fix.title}\n" for d in suggested if d.fix is not None]
    return "".join(lines)
