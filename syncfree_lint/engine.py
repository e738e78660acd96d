"""The pipeline: discover -> read -> pre-filter -> parse once -> analyse + rules -> resolve -> report.

``lint_file`` is a pure function of (path, source, config) returning the file's facts, so files
can be linted in any order or in other processes. ``resolve`` joins the facts of the whole run:
helpers reached from a step in another file are known only then.
"""
from __future__ import annotations

import ast
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from typing import (
    Callable, Dict, FrozenSet, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple, Union,
)

import libcst as cst

from syncfree_lint.analysis.arguments import Returns, Seeds, Settled, analyse
from syncfree_lint.analysis.callgraph import resolve
from syncfree_lint.analysis.device import may_use_accelerator
from syncfree_lint.analysis.filefacts import ExternalKinds, FileFacts
from syncfree_lint.analysis.module import ModuleAnalysis
from syncfree_lint.analysis.run_kinds import ROUNDS, holds_object_of, merge, plan, teachers
from syncfree_lint.analysis.summarize import summarize
from syncfree_lint.analysis.suppression import NoqaFilter
from syncfree_lint.cache import Cache
from syncfree_lint.config import Config
from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.notebook import NotebookError, is_notebook, place_in_cells, read_file_text, read_notebook
from syncfree_lint.prefilter import could_hold_finding, is_quiet_test_module, is_test_in_project
from syncfree_lint.project import ProjectIndex, context_files, summary_of
from syncfree_lint.rules import ALL_RULES, DEFAULTS
from syncfree_lint.rules.tool.internal_error import InternalError
from syncfree_lint.rules.tool.parse_error import ParseError
from syncfree_lint.parse import newer_syntax_possible, on_parse_thread, parse_module, syntax_error
from syncfree_lint.source import SourceError, decode_source

@dataclass
class RunResult:
    """What a whole run produced: sorted diagnostics plus counters for --statistics."""

    diagnostics: List[Diagnostic] = field(default_factory=list)
    files: int = 0
    parsed: int = 0
    skipped_by_filter: int = 0
    lines: int = 0
    internal_errors: int = 0


#: ``return Trainer(...)``, ``return models.Trainer(...)``: a factory's result, by the text alone
_RETURNS_OBJECT = re.compile(r"\breturn\s+(?:[A-Za-z_]\w*\.)*[A-Z]\w*\(")


def module_identity(path: str) -> Tuple[str, str, bool]:
    """(dotted module name, root folder it is importable from, is a package __init__)."""
    absolute = os.path.abspath(path)
    folder, filename = os.path.split(absolute)
    stem = filename[:-3] if filename.endswith(".py") else filename.rsplit(".", 1)[0]
    if is_notebook(filename):  # never imported: its functions must not meet those of a module of its name
        stem += "-ipynb"
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, name = os.path.split(folder)
        parts.insert(0, name)
        if not name:
            break
    return ".".join(parts), folder, is_package


def _rule_instances(enabled: FrozenSet[str], source: str):
    """The enabled rules that could fire in ``source`` (``Rule.requires``)."""
    return [rule() for rule in ALL_RULES if rule.code in enabled and rule.node_types
            and (not rule.requires or any(word in source for word in rule.requires))]


def lint_source(path: str, source: str, config: Config, enabled: FrozenSet[str], noqa: bool = True,
                fixes: bool = True, external: Optional[ExternalKinds] = None, start: Optional[Settled] = None) -> FileFacts:
    """Analyse one file's text; never raises for bad input (returns SFL000/SFL001 facts).
    ``start``: where an earlier analysis of this text settled (``arguments.analyse``).

    Runs on the process's parse thread (see ``syncfree_lint.parse``)."""
    return on_parse_thread(_lint_source, path, source, config, enabled, noqa, fixes, external, start)


def _lint_source(path: str, source: str, config: Config, enabled: FrozenSet[str], noqa: bool, fixes: bool,
                 external: Optional[ExternalKinds], start: Optional[Settled]) -> FileFacts:
    module_name, root, is_package = module_identity(path)
    facts = FileFacts(path, module_name, root)
    # Python's own parser first: libcst's native parser can overflow its stack (and kill the
    # process) on nesting that Python rejects; the ast is reused for positions.
    tree: Optional[ast.Module] = None
    try:
        parsed = compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        tree = parsed if isinstance(parsed, ast.Module) else None  # always a Module in "exec" mode
    except SyntaxError as error:
        if "too many" in str(error.msg) or not newer_syntax_possible(error):
            facts.errors.append(ParseError.at(path, error.lineno or 1, max(1, error.offset or 1), "syntax", detail=error.msg))
            return facts
    except (RecursionError, MemoryError):
        facts.errors.append(ParseError.at(path, 1, 1, "too_deep_for_python"))
        return facts
    except ValueError as error:
        facts.errors.append(ParseError.at(path, 1, 1, "python_rejects", detail=str(error)))
        return facts
    try:
        module = parse_module(source)
    except cst.ParserSyntaxError as exc:
        if tree is not None:  # Python accepts it: a limit of libcst's parser, not the user's error
            facts.errors.append(ParseError.at(path, 1, 1, "libcst_rejects", detail=exc.message))
        else:
            line, col, detail = syntax_error(path, source, exc)
            facts.errors.append(ParseError.at(path, line, col, "syntax", detail=detail))
        return facts
    except RecursionError:
        facts.errors.append(ParseError.at(path, 1, 1, "too_deep_for_libcst"))
        return facts
    except Exception as exc:  # libcst raises a few other types on odd input
        facts.errors.append(ParseError.at(path, 1, 1, "libcst_failed", detail=f"{type(exc).__name__}: {exc}"))
        return facts
    # a test module has no steps of its own (judged inside its project, not by where the project sits)
    uses_accelerator = may_use_accelerator(source, tree) and not is_test_in_project(path)

    used: List[Settled] = []

    def walk(parameter_kinds: Seeds, returns: Returns) -> ModuleAnalysis:
        used[:] = [(parameter_kinds, dict(returns))]
        analysis = ModuleAnalysis(
            path, source, module, _rule_instances(enabled, source), config.all_step_functions,
            tree=tree, module_name=module_name, is_package=is_package, root=root,
            uses_accelerator=uses_accelerator, logging_words=config.all_logging_words,
            opt_in_words=config.all_opt_in_words, parameter_kinds=parameter_kinds, external=external,
            earlier_returns=returns,
        )
        analysis.run()
        return analysis

    try:
        analysis = analyse(walk, start)
        summary = summarize(analysis, config.report_guarded, NoqaFilter(noqa), fixes)
        summary.settled = used[0]
        summary.errors.extend(InternalError.at(path, 1, 1, "rule", code=code, error=f"{type(exc).__name__}: {exc}")
                              for code, exc in analysis.rule_errors)
        return summary
    except RecursionError:
        facts.errors.append(ParseError.at(path, 1, 1, "too_deep_to_analyse"))
        return facts
    except Exception as exc:  # a bug outside the rules: report it for this file only
        facts.errors.append(InternalError.at(path, 1, 1, "analysis", error=f"{type(exc).__name__}: {exc}"))
        return facts


def lint_path(path: str, config: Config, enabled: FrozenSet[str], text: Optional[str] = None,
              cache: Optional[Cache] = None, noqa: bool = True, fixes: bool = True,
              external: Optional[ExternalKinds] = None, start: Optional[Settled] = None) -> Tuple[FileFacts, int, bool]:
    """(facts, line count, parsed?) for one file; ``text`` is given for --stdin-filename;
    ``external``: what the rest of the run says about its values (``analysis.run_kinds``);
    ``start``: where its analysis settled before it was taught that."""
    key = None
    if text is None:
        module_name, root, _ = module_identity(path)
        try:
            data = _read_bytes(path)
        except SourceError as exc:
            facts = FileFacts(path, module_name, root)
            facts.errors.append(ParseError.at(path, exc.line, exc.col, "unreadable", reason=str(exc)))
            return facts, 0, False
        if cache is not None:
            key = cache.key(path, data + (b"\0" + repr(external).encode() if external else b"")
                            + (b"\0" + repr(start).encode() if start else b""))
            hit = cache.get(key)
            if hit is not None:
                return hit
        try:
            text = decode_source(data)
        except SourceError as exc:
            facts = FileFacts(path, module_name, root)
            facts.errors.append(ParseError.at(path, exc.line, exc.col, "unreadable", reason=str(exc)))
            return facts, 0, False
    if is_notebook(path):  # its code cells, joined into one program (``syncfree_lint.notebook``)
        try:
            text = read_notebook(text).python
        except NotebookError as exc:
            facts = FileFacts(path, *module_identity(path)[:2])
            facts.errors.append(ParseError.at(path, exc.line, exc.col, "unreadable", reason=str(exc)))
            return facts, 0, False
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if not external and (not could_hold_finding(text, config.all_step_functions) or is_quiet_test_module(path, text)):
        module_name, root, _ = module_identity(path)
        outcome = (FileFacts(path, module_name, root, skipped=True, returns_object=bool(_RETURNS_OBJECT.search(text))),
                   lines, False)
    else:
        outcome = (lint_source(path, text, config, enabled, noqa, fixes, external, start), lines, True)
    if key is not None and cache is not None:  # a key is only made with a cache
        cache.put(key, outcome)
    return outcome


def _read_bytes(path: str) -> bytes:
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError("is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            raise SourceError("not a regular file (a pipe, socket or device); skipped")
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise SourceError("file vanished before it could be read")
    except IsADirectoryError:
        raise SourceError("is a directory, not a file")
    except OSError as exc:
        raise SourceError(f"cannot read file: {exc.strerror or exc}")


def discover(paths: Sequence[str], config: Config) -> Iterator[str]:
    """Python files and notebooks under ``paths`` in a stable order; excluded folders are not entered.

    A path named explicitly is linted even when excluded by default (as flake8 does)."""
    seen: Set[str] = set()
    for given in paths:
        if os.path.isdir(given):
            for folder, dirs, files in os.walk(given, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not config.is_excluded(os.path.join(folder, d)))
                for name in sorted(files):
                    if not (name.endswith(".py") or name.endswith(".pyi") or is_notebook(name)):
                        continue
                    full = os.path.join(folder, name)
                    if config.is_excluded(full) or full in seen:
                        continue
                    real = os.path.realpath(full)
                    if os.path.islink(full) and real in seen:
                        continue
                    seen.add(full)
                    seen.add(real)
                    yield _clean(full)
        else:
            if given not in seen:
                seen.add(given)
                yield _clean(given)


def _clean(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def select(diagnostics: Iterable[Diagnostic], config: Config, enabled: FrozenSet[str]) -> List[Diagnostic]:
    """Apply rule selection, per-file-ignores and the guard setting; sort like flake8."""
    out = []
    ignores_by_path: Dict[str, Tuple[str, ...]] = {}
    for diagnostic in diagnostics:
        if diagnostic.code not in enabled:
            continue
        if diagnostic.guarded and not config.report_guarded:
            continue
        ignores = ignores_by_path.get(diagnostic.path)
        if ignores is None:
            ignores = ignores_by_path[diagnostic.path] = config.ignored_for(diagnostic.path)
        if any(diagnostic.code.startswith(prefix) or prefix == "ALL" for prefix in ignores):
            continue
        out.append(diagnostic)
    out.sort()
    return out


#: a file walked again: its path, what the run teaches it, where its analysis settled before
_Relint = Tuple[str, ExternalKinds, Optional["Settled"]]


class _WorkerArgs(NamedTuple):
    config: Config
    enabled: FrozenSet[str]
    cache: Optional[Cache]
    fixes: bool


_WORKER: List[_WorkerArgs] = []  # the arguments of this worker process, set once by _init_worker


def _init_worker(config: Config, enabled: FrozenSet[str], cache: Optional[Cache], fixes: bool) -> None:
    _WORKER[:] = [_WorkerArgs(config, enabled, cache, fixes)]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 6000))


def _lint_in_worker(item: Union[str, _Relint]) -> Tuple[FileFacts, int, bool]:
    """One file (a path, or a path, what the run teaches it and where its analysis settled)."""
    args = _WORKER[0]
    path, external, start = item if isinstance(item, tuple) else (item, None, None)
    return lint_path(path, args.config, args.enabled, None, args.cache, fixes=args.fixes, external=external,
                     start=start)


def run(paths: Sequence[str], config: Config, stdin: Optional[Tuple[str, str]] = None, jobs: int = 1,
        cache: Optional[Cache] = None, progress: Optional[Callable[[int, int], None]] = None,
        fixes: bool = True, project: bool = False) -> RunResult:
    """Lint ``paths`` (or one stdin buffer given as (name, text)); the whole pipeline.

    ``jobs`` > 1 lints files in that many processes; the result does not depend on it.
    ``project``: when only files are given (no folder), the rest of each file's project is read
    for its call graph (see ``syncfree_lint.project``), so a file gives the findings it would
    give in a run over the whole project."""
    enabled = config.enabled_codes(DEFAULTS)
    result = RunResult()
    all_facts: List[FileFacts] = []
    run_key: Optional[str] = None
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 6000))

    def take(outcome: Tuple[FileFacts, int, bool]) -> None:
        facts, lines, parsed = outcome
        result.files += 1
        result.lines += lines
        result.parsed += parsed
        result.skipped_by_filter += (not parsed and not facts.errors)
        all_facts.append(facts)  # small: diagnostics and call edges, never trees
        if progress is not None:
            progress(result.files, len(files))

    try:
        if stdin is not None:
            files = [stdin[0]]
            take(lint_path(stdin[0], config, enabled, stdin[1], fixes=fixes))
        else:
            files = list(discover(paths, config))
            # a run over folders depends on their files only; a run over some files also on the
            # rest of their projects, which this key does not cover
            whole = not project or any(os.path.isdir(path) for path in paths)
            run_key = cache.run_key(files) if cache is not None and whole else None
            if run_key is not None and cache is not None:
                stored = cache.get(run_key)
                if isinstance(stored, RunResult):
                    return stored
            if jobs > 1 and len(files) >= 4 * jobs:
                _run_parallel(files, config, enabled, cache, jobs, take, fixes)
            else:
                for path in files:
                    take(lint_path(path, config, enabled, None, cache, fixes=fixes))
        if project:
            requested = [stdin[0]] if stdin is not None else files
            if requested and not any(os.path.isdir(path) for path in paths):
                by_root = context_files(requested, lambda given: discover(given, config))
                if cache is not None and stdin is None:  # nothing of the project changed: the stored result
                    run_key = cache.project_run_key(files, [path for paths in by_root.values() for path in paths])
                    stored = cache.get(run_key) if run_key is not None else None
                    if isinstance(stored, RunResult):
                        return stored
                all_facts.extend(project_context(by_root, config, enabled, cache, jobs))
        linted = len(files)  # the rest are the project's context: summaries that only teach
        all_facts[:linted], all_facts[linted:] = learn_across_files(
            all_facts[:linted], all_facts[linted:], config, enabled, cache, fixes, stdin, jobs=jobs)
    finally:
        sys.setrecursionlimit(old_limit)
    diagnostics = resolve(all_facts)
    result.internal_errors = sum(1 for d in diagnostics if d.code == "SFL001")
    always = Config(select=("SFL000", "SFL001"), ignore=config.ignore).enabled_codes(DEFAULTS)
    result.diagnostics = place_in_cells(select(diagnostics, config, enabled | always), _reader(stdin))
    if run_key is not None and cache is not None:
        cache.put(run_key, result)
    return result


def _reader(stdin: Optional[Tuple[str, str]]) -> Callable[[str], Optional[str]]:
    """A file's text for ``place_in_cells``: a stdin buffer by its name, else read from disk."""
    return lambda path: stdin[1] if stdin is not None and path == stdin[0] else read_file_text(path)


def _run_parallel(files: Sequence[Union[str, _Relint]], config: Config, enabled: FrozenSet[str], cache: Optional[Cache], jobs: int,
                  take: Callable[[Tuple[FileFacts, int, bool]], None], fixes: bool) -> None:
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    chunk = max(1, min(32, len(files) // (jobs * 8)))
    with context.Pool(jobs, initializer=_init_worker, initargs=(config, enabled, cache, fixes)) as pool:
        for outcome in pool.imap(_lint_in_worker, files, chunksize=chunk):  # keeps discovery order
            take(outcome)


def lint_text(path: str, text: str, config: Config, noqa: bool = True, fixes: bool = True,
              project_cache: Optional[Cache] = None, project: bool = False) -> List[Diagnostic]:
    """Findings for one file's text; with ``project``, in the context of the rest of its project
    (summaries stored beside ``project_cache``), otherwise on its own.

    For integrations that hand over one file at a time: the flake8 plugin (``noqa=False``:
    flake8 applies ``# noqa`` itself), editors."""
    enabled = config.enabled_codes(DEFAULTS)
    facts, _, _ = lint_path(path, config, enabled, text, noqa=noqa, fixes=fixes)
    context = project_context(context_files([path], lambda given: discover(given, config)), config, enabled,
                              project_cache, 1) if project else []
    (facts,), context = learn_across_files([facts], context, config, enabled, None, fixes, (path, text), noqa)
    always = Config(select=("SFL000", "SFL001"), ignore=config.ignore).enabled_codes(DEFAULTS)
    return place_in_cells(select(resolve([facts] + context), config, enabled | always), _reader((path, text)))


def learn_across_files(linted: List[FileFacts], context: List[FileFacts], config: Config, enabled: FrozenSet[str],
                       cache: Optional[Cache], fixes: bool, stdin: Optional[Tuple[str, str]],
                       noqa: bool = True, jobs: int = 1) -> Tuple[List[FileFacts], List[FileFacts]]:
    """(``linted``, ``context``) again, with the files that other files' facts teach a kind walked once more
    (``analysis.run_kinds``), round after round. ``context`` files (summaries of the rest of the
    project) teach; those that call a linted file's functions learn too, so they can pass a kind
    on. ``stdin``: (name, text) of a buffer."""
    reported = {facts.path for facts in linted}
    learners = reported | teachers(linted + context, reported)
    # a context file that learns it holds an instance of a linted file's class (`train(..., logger)`
    # with `logger = RunLogger()` in the launcher) then reaches that class's methods: it learns too
    reported_modules = {facts.module_name for facts in linted if facts.module_name}
    learned: Dict[str, ExternalKinds] = {}
    for _ in range(ROUNDS):
        again = {}
        planned = plan(linted + context, learners)
        if context:
            others = plan(linted + context, {facts.path for facts in context} - learners)
            planned.update((path, kinds) for path, kinds in others.items() if holds_object_of(kinds, reported_modules))
        for path, external in planned.items():
            merged = merge(learned.get(path), external)
            if merged != learned.get(path):
                learned[path] = again[path] = merged
        if not again:
            break

        def relint(facts: FileFacts, summary: bool) -> FileFacts:
            if facts.path not in again:
                return facts
            if summary:
                return _context_summary(facts.path, again[facts.path], config, enabled, cache)
            text = stdin[1] if stdin is not None and facts.path == stdin[0] else None
            return lint_path(facts.path, config, enabled, text, cache, noqa=noqa, fixes=fixes,
                             external=again[facts.path], start=facts.settled)[0]

        work = [(facts.path, again[facts.path], facts.settled) for facts in linted if facts.path in again]
        if jobs > 1 and len(work) >= 4 * jobs and stdin is None and noqa:  # as the first pass did
            fresh: Dict[str, FileFacts] = {}
            _run_parallel(work, config, enabled, cache, jobs, lambda outcome: fresh.__setitem__(outcome[0].path, outcome[0]),
                          fixes)
            linted = [fresh.get(facts.path, facts) for facts in linted]
        else:
            linted = [relint(facts, False) for facts in linted]
        context = [relint(facts, True) for facts in context]
    return linted, context  # the context's new call edges count too: a step there may reach a linted file


def _context_summary(path: str, external: ExternalKinds, config: Config, enabled: FrozenSet[str],
                     cache: Optional[Cache]) -> FileFacts:
    """The summary of a context file that learned ``external`` (stored apart from linted files'
    facts: a summary has no findings, so it must never answer for a linted file)."""
    key = None
    if cache is not None:
        try:
            key = cache.key(path, _read_bytes(path) + b"\0summary\0" + repr(external).encode())
        except SourceError:
            key = None
        hit = cache.get(key) if key is not None else None
        if isinstance(hit, FileFacts):
            return hit
    slim = summary_of(lint_path(path, config, enabled, None, None, fixes=False, external=external)[0])
    if key is not None and cache is not None:
        cache.put(key, slim)
    return slim


def project_context(by_root: Dict[str, List[str]], config: Config, enabled: FrozenSet[str], cache: Optional[Cache],
                    jobs: int) -> List[FileFacts]:
    """Summaries (functions and call edges, no findings) of the other files of the projects the
    requested files belong to (``project.context_files``: root -> files)."""
    out: List[FileFacts] = []
    for root, files in by_root.items():
        index = ProjectIndex.open(root, cache.folder if cache is not None else None, repr(config))

        def lint(paths: List[str]) -> List[FileFacts]:
            outcomes: List[FileFacts] = []
            if jobs > 1 and len(paths) >= 4 * jobs:
                _run_parallel(paths, config, enabled, None, jobs, lambda outcome: outcomes.append(outcome[0]), False)
            else:
                outcomes.extend(lint_path(path, config, enabled, None, None, fixes=False)[0] for path in paths)
            return outcomes

        out.extend(index.summaries(files, lint))
        index.save()
    return out
