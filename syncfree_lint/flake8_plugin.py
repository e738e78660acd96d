"""flake8 plugin: ``flake8 --select SFL`` reports what ``syncfree-lint FILE`` reports.

Registered as the ``SFL`` entry point of ``flake8.extension``. flake8 hands over one file at a
time; each file is linted with its project as context (``syncfree_lint.project``), so a helper
called from another file's step is found, as ``syncfree-lint`` finds it on the whole tree.

Loading this module is cheap: it imports nothing beyond the standard library. The linter itself
(and libcst) is imported the first time a file is checked. torch is never imported.

Who decides what:

- flake8 applies ``--select``/``--ignore``/``--extend-select``/``--per-file-ignores`` and
  ``# noqa`` to what the plugin yields.
- The plugin yields every code that syncfree-lint's defaults enable, plus an opt-in code
  (SFL402) only when flake8's ``select`` or ``extend-select`` names it more specifically than
  ``SFL`` (``SFL4``, ``SFL40``, ``SFL402``). ``--select SFL`` is how flake8 users turn a plugin on,
  so it does not switch opt-in rules on.
- ``[tool.syncfree-lint]`` in the closest pyproject.toml is read too (its ``select``, ``ignore``,
  ``per-file-ignores``, ``step-functions``, ``report-guarded``), once per folder. Its ``exclude``
  is not consulted: flake8's own ``exclude`` decides which files are checked.
- ``--sfl-step-functions`` and ``--sfl-report-guarded`` (or ``sfl-step-functions =`` /
  ``sfl-report-guarded =`` in flake8's configuration) add to that.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = ["Plugin"]

_FAMILY = "SFL"


def _version() -> str:
    try:
        from syncfree_lint import __version__

        return __version__
    except Exception:  # pragma: no cover - a broken install still loads the plugin
        return "unknown"


def _as_list(value: Optional[Union[str, Iterable[object]]]) -> List[str]:
    """flake8 gives lists for comma-separated options, None when unset; accept a string too."""
    if not value:
        return []
    items: Iterable[object] = value.replace(",", " ").split() if isinstance(value, str) else value
    return [str(item).strip().upper() for item in items if str(item).strip()]


class Plugin:
    """The flake8 checker: one instance per file; ``run`` yields (line, col, text, type)."""

    name = "syncfree-lint"
    version = _version()

    # Set once per process by ``parse_options`` (flake8 re-parses options in each worker).
    _explicit_select: Tuple[str, ...] = ()
    _step_functions: Tuple[str, ...] = ()
    _report_guarded: bool = False
    _configs: Dict[str, Any] = {}

    def __init__(self, tree: object, filename: str, lines: Sequence[str]) -> None:
        # ``tree`` is required by flake8 to run the plugin once per file; it is not used: the
        # linter parses the text itself, with libcst, exactly as the command line does.
        self.filename = filename
        self.lines = lines
        # Read here, not in ``run``: flake8 turns an error raised while the checker is built into
        # a one-line "failed during execution due to ConfigError(...)" instead of a traceback.
        self.config = self._config_for(filename)

    # ------------------------------------------------------------------ options

    @classmethod
    def add_options(cls, manager: Any) -> None:
        manager.add_option(
            "--sfl-step-functions",
            default=[],
            parse_from_config=True,
            comma_separated_list=True,
            metavar="NAMES",
            help="syncfree-lint: more function names to treat as training/evaluation steps "
                 "(added to [tool.syncfree-lint] step-functions)",
        )
        manager.add_option(
            "--sfl-report-guarded",
            default=False,
            action="store_true",
            parse_from_config=True,
            help="syncfree-lint: also report syncs under a logging-interval guard",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        explicit = _as_list(getattr(options, "select", None)) + _as_list(getattr(options, "extend_select", None))
        # Only a prefix more specific than the family ("SFL4", "SFL402") opts a rule in.
        cls._explicit_select = tuple(p for p in explicit if p.startswith(_FAMILY) and len(p) > len(_FAMILY))
        cls._step_functions = tuple(
            name.strip() for name in (getattr(options, "sfl_step_functions", None) or []) if name.strip()
        )
        cls._report_guarded = bool(getattr(options, "sfl_report_guarded", False))
        cls._configs = {}

    # ------------------------------------------------------------------ checking

    @classmethod
    def _config_for(cls, filename: str) -> Any:
        """The Config for a file: pyproject's (cached per folder) plus the flake8 options."""
        from syncfree_lint.config import load_config, with_overrides
        from syncfree_lint.rules import DEFAULTS

        folder = os.path.dirname(os.path.abspath(filename))
        cached = cls._configs.get(folder)
        if cached is not None:
            return cached
        base = load_config(None, [filename], list(DEFAULTS))  # a ConfigError stops flake8, with the message
        opt_in = tuple(
            code for code, on in DEFAULTS.items()
            if not on and any(code.startswith(prefix) for prefix in cls._explicit_select)
        )
        config = with_overrides(
            base,
            extend_select=base.extend_select + opt_in if opt_in else None,
            step_functions=base.step_functions + cls._step_functions if cls._step_functions else None,
            report_guarded=True if cls._report_guarded else None,
        )
        cls._configs[folder] = config
        return config

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        import sys

        from syncfree_lint import engine

        text = "".join(self.lines)
        # As `syncfree-lint` does for a run: deep nesting needs more than Python's default.
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, 6000))
        try:
            diagnostics = _lint(engine, self.filename, text, self.config)
        finally:
            sys.setrecursionlimit(old_limit)
        for diagnostic in diagnostics:
            # flake8 prints the column it is given plus one; Diagnostic columns are 1-based.
            yield diagnostic.line, max(diagnostic.col - 1, 0), f"{diagnostic.code} {diagnostic.message}", type(self)


def _lint(engine: Any, filename: str, text: str, config: Any) -> list:
    """``engine.lint_text`` with the linter's own ``# noqa`` handling off: flake8 applies it
    (and ``--disable-noqa``) itself."""
    from syncfree_lint.cache import CACHE_DIR, Cache

    project_cache = Cache(os.path.join(config.root, CACHE_DIR), repr(config))
    return engine.lint_text(filename, text, config, noqa=False, fixes=False, project_cache=project_cache, project=True)
