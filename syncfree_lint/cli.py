"""The command line: ``syncfree-lint [PATH ...]``. Exit 0 clean, 1 findings, 2 usage/internal error."""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, Sequence

from syncfree_lint import __version__
from syncfree_lint.config import ConfigError, load_config, validate_codes, with_overrides
from syncfree_lint.engine import run
from syncfree_lint.cache import CACHE_DIR, Cache
from syncfree_lint.cli_report import declined_fixes, fix_stdin, report
from syncfree_lint.output.formats import FORMATS
from syncfree_lint.output.text import only_unsafe_note
from syncfree_lint.rules import ALL_RULES, BY_CODE, DEFAULTS


def _codes(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="syncfree-lint",
        description="Find host-device syncs in PyTorch training and evaluation steps.",
        epilog="Subcommand: `syncfree-lint server` runs the Language Server (stdio) for editors; "
               "see `syncfree-lint server --help`.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files, notebooks (.ipynb) or folders to lint (default: .); `-` reads stdin; a named file of any other extension is read as Python")
    parser.add_argument("--select", type=_codes, metavar="CODES", help="comma-separated codes or prefixes to enable (ALL for every rule); replaces the default set")
    parser.add_argument("--extend-select", type=_codes, metavar="CODES", help="codes or prefixes to enable on top of the selection (e.g. SFL402)")
    parser.add_argument("--ignore", type=_codes, metavar="CODES", help="codes or prefixes to disable")
    parser.add_argument("--config", metavar="FILE", help="read settings from this pyproject.toml instead of searching for one")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--statistics", action="store_true", help="print a count per code after the findings, with how many have fixes ([*N fixable])")
    parser.add_argument("--show-source", action="store_true", help="under each finding, print its source line with a caret under the column")
    parser.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in this baseline (see --write-baseline)")
    parser.add_argument("--baseline-strict", action="store_true", help="with --baseline, exit 1 when recorded findings no longer occur (stale entries)")
    parser.add_argument("--write-baseline", metavar="FILE", help="record today's findings in FILE (JSON) and exit 0")
    parser.add_argument("--add-noqa", action="store_true", help="write `# noqa: CODE` on every reported line (merged with existing noqa codes)")
    parser.add_argument("--list-rules", action="store_true", help="list every rule and exit")
    parser.add_argument("--explain", metavar="CODE", help="print the documentation of a rule and exit")
    parser.add_argument("--stdin-filename", metavar="NAME", help="read the source from stdin and report it under NAME (with --fix, the fixed source goes to stdout)")
    parser.add_argument("--no-project", action="store_true", help="lint the given files on their own; by default the rest of their project (the folder with pyproject.toml, setup.py or .git) is read for its call graph")
    parser.add_argument("--show-reach", action="store_true", help="under each finding, print the chain that makes it run per step (step loop -> calls)")
    parser.add_argument("--report-guarded", action="store_true", default=None, help="also report code under a logging-interval guard")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    parser.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff, also apply fixes that may change behaviour")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff and write nothing (exit 1 if there is a diff)")
    parser.add_argument("--suggestions", action="store_true", help="with --diff, also show display-only suggestions: rewrites that remove a sync but change what the program shows (never applied by --fix)")
    parser.add_argument("--show-fixes", action="store_true", help="list what was fixed, and why a fix was declined where a rule has one")
    parser.add_argument("--output-format", choices=sorted(FORMATS), default="text", help="how to print findings (default: text, flake8's shape)")
    parser.add_argument("--jobs", "-j", type=int, default=0, metavar="N", help="processes to lint with (default: all cores)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write .syncfree_cache/")
    parser.add_argument("--cache-dir", metavar="DIR", help="where the cache lives (default: .syncfree_cache next to the configuration)")
    parser.add_argument("--version", action="version", version=f"syncfree-lint {__version__}")
    return parser


def list_rules() -> str:
    """One line per rule, then one indented line per other message variant it reports."""
    lines = []
    for rule in ALL_RULES:
        state = "" if rule.default_enabled else "  (opt-in)"
        lines.append(f"{rule.code}  {rule.name:<32} {rule.message.split(';')[0]}{state}")
        lines.extend(f"{'':<40} {template.split(';')[0]}" for key, template in rule.messages.items() if key != "default")
    return "\n".join(lines) + "\n"


def _fix(args, paths, config, result, jobs, cache, out) -> Optional[int]:
    """Apply fixes (or print them with --diff). Returns an exit status for --diff, else None."""
    from syncfree_lint.engine import lint_text
    from syncfree_lint.fixes.apply import ChangedOnDisk, fix_text, write_atomically
    from syncfree_lint.notebook import NotebookError, is_notebook
    from syncfree_lint.notebook_fix import fix_notebook
    from syncfree_lint.source import SourceError, decode_source, detect_encoding

    def applicable(d) -> bool:
        return d.fix is not None and d.fix.applies(args.unsafe_fixes, suggestions=args.suggestions and not args.fix)

    by_path: dict = {}
    for d in result.diagnostics:
        if applicable(d):
            by_path.setdefault(d.path, []).append(d)
    fixed_count, diffs, applied_all = 0, [], []
    for path, first in by_path.items():
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            text = decode_source(data)
            encoding = detect_encoding(data)
        except (OSError, SourceError) as exc:
            sys.stderr.write(f"syncfree-lint: cannot fix {path}: {exc}\n")
            continue
        passes = iter([first])
        lint = lambda p, t: next(passes, None) or lint_text(p, t, config)  # noqa: E731
        if is_notebook(path):  # the cells are fixed as one program, then written back
            try:
                fixed, rewritten = fix_notebook(path, text, lint, applicable)
            except NotebookError as exc:
                sys.stderr.write(f"syncfree-lint: cannot fix {path}: {exc}\n")
                continue
            new_text, diff = rewritten.text, rewritten.diff(path)
        else:
            fixed = fix_text(path, text, lint, applicable)
            new_text, diff = fixed.fixed, fixed.diff() if args.diff else ""
        if not fixed.changed:
            continue
        applied_all.extend(fixed.applied)
        fixed_count += len(fixed.applied)
        if args.diff:
            diffs.append(diff)
            continue
        try:
            write_atomically(path, new_text, data, encoding, data.startswith(b"\xef\xbb\xbf"))
        except ChangedOnDisk:
            sys.stderr.write(f"syncfree-lint: {path} changed on disk while fixing; left as it is\n")
        except OSError as exc:
            sys.stderr.write(f"syncfree-lint: cannot write {path}: {exc}\n")
    if not args.unsafe_fixes and not applied_all:
        sys.stderr.write(only_unsafe_note(result.diagnostics, args.unsafe_fixes))
    if args.show_fixes and applied_all:
        stream = sys.stderr if args.diff else out
        stream.write(f"Fixed {fixed_count} finding{'s' if fixed_count != 1 else ''}:\n")
        for d in sorted(applied_all):
            title = d.fix.title if d.fix is not None else ""
            stream.write(f"  {d.where}: {d.code} {title}\n")
    if args.show_fixes:
        (sys.stderr if args.diff else out).write(declined_fixes(result.diagnostics))
    if args.diff:
        out.write("".join(diffs))
        return 1 if diffs else 0
    return None


def _finish_threads() -> None:
    """Let parse threads end before the interpreter does (see parse.join_threads)."""
    import threading

    from syncfree_lint.parse import join_threads

    try:
        join_threads(*(t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon))
    except KeyboardInterrupt:
        pass


class _Progress:
    """``[done/total] files`` on a terminal's stderr, only once a run takes more than a second."""

    def __init__(self) -> None:
        import time

        self._time = time.monotonic
        self._start = self._time()
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        now = self._time()
        if now - self._start < 1.0 or now - self._last < 0.1:
            return
        self._last = now
        self._shown = True
        sys.stderr.write(f"\rsyncfree-lint: {done}/{total} files")
        sys.stderr.flush()

    def done(self) -> None:
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["server"]:  # a subcommand; PATH arguments are positional, so it comes first
        from syncfree_lint.lsp.serve import main as serve

        return serve(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.list_rules:
        out.write(list_rules())
        return 0
    if args.explain:
        rule = BY_CODE.get(args.explain.strip().upper())
        if rule is None:
            sys.stderr.write(f"syncfree-lint: unknown rule {args.explain!r}; see --list-rules\n")
            return 2
        out.write(rule.explain())
        return 0
    paths = args.paths or ["."]
    if "-" in paths and len(paths) > 1:
        sys.stderr.write("syncfree-lint: error: `-` (stdin) cannot be combined with other paths\n")
        return 2
    try:
        known = list(DEFAULTS)
        config = load_config(args.config, [args.stdin_filename] if args.stdin_filename else paths, known)
        config = with_overrides(
            config,
            select=validate_codes(args.select, "--select", known) if args.select is not None else None,
            extend_select=config.extend_select + validate_codes(args.extend_select, "--extend-select", known) if args.extend_select else None,
            ignore=config.ignore + validate_codes(args.ignore, "--ignore", known) if args.ignore else None,
            report_guarded=args.report_guarded,
        )
    except ConfigError as exc:
        sys.stderr.write(f"syncfree-lint: error: {exc}\n")
        return 2
    stdin = None
    if args.stdin_filename is not None or paths == ["-"]:
        data = sys.stdin.buffer.read()
        from syncfree_lint.source import SourceError, decode_source

        name = args.stdin_filename or "-"
        try:
            text = decode_source(data)
        except SourceError as exc:
            out.write(f"{name}:{exc.line}:{exc.col}: SFL000 {exc}\n")
            return 1
        stdin = (name, text)
    else:
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            sys.stderr.write(f"syncfree-lint: error: no such file or folder: {', '.join(missing)}\n")
            return 2
    jobs = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
    # fix edits need exact positions (a code generation pass): build them only when shown or used
    want_fixes = bool(args.fix or args.diff or args.statistics or args.show_fixes
                      or args.output_format in ("json", "sarif", "text", "grouped"))  # text: `[*]` and the summary
    cache = None
    if not args.no_cache:  # with stdin, only the project's summaries are stored
        folder = args.cache_dir or os.path.join(config.root, CACHE_DIR)
        cache = Cache(folder, f"{config!r} fixes={want_fixes}")
    if stdin is not None and (args.fix or args.diff):
        return fix_stdin(args, stdin[0], stdin[1], config, cache, out)
    progress = _Progress() if sys.stderr.isatty() and stdin is None else None
    try:
        result = run(paths, config, stdin=stdin, jobs=jobs, cache=cache, progress=progress, fixes=want_fixes,
                     project=not args.no_project)
    except KeyboardInterrupt:
        _finish_threads()
        sys.stderr.write("syncfree-lint: interrupted\n")
        return 130
    finally:
        if progress is not None:
            progress.done()
    try:
        if result.files == 0:  # say so: an empty folder, or every file excluded
            sys.stderr.write(f"syncfree-lint: no Python files or notebooks to lint in {', '.join(paths)}\n")
        if (args.fix or args.diff) and stdin is None:
            status = _fix(args, paths, config, result, jobs, cache, out)
            if status is not None:
                return status
            result = run(paths, config, jobs=jobs, cache=cache, fixes=want_fixes, project=not args.no_project)
        return report(args, result, config, paths, stdin, out)
    except KeyboardInterrupt:
        _finish_threads()
        sys.stderr.write("syncfree-lint: interrupted (files already fixed are complete; the others are untouched)\n")
        return 130
    except BrokenPipeError:  # `syncfree-lint ... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
