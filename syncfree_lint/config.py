"""Configuration: ``[tool.syncfree-lint]`` in pyproject.toml, merged with the command line."""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.9/3.10
    tomllib = None  # type: ignore[assignment]

from syncfree_lint.config_hints import warn_misspelt_sections
from syncfree_lint.knowledge.frequency import LOGGING_FLAG_WORDS, OPT_IN_FLAG_WORDS

SECTION = "syncfree-lint"

DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".env", "env", "__pycache__",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".syncfree_cache", "build", "dist",
    "site-packages", "node_modules", "*.egg-info", ".eggs", ".ipynb_checkpoints",
)

DEFAULT_STEP_FUNCTIONS: Tuple[str, ...] = (
    "training_step", "validation_step", "test_step", "predict_step", "train_step",
    "eval_step", "on_train_batch_end", "on_validation_batch_end",
)

# one compiled pattern for the default excludes (checked for every file and folder of a run)
_DEFAULT_EXCLUDED = re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in DEFAULT_EXCLUDE))


class ConfigError(Exception):
    """A bad configuration key or value; the CLI prints it and exits with 2."""


@dataclass(frozen=True)
class Config:
    """Everything that changes what is reported. Immutable; hashed into the cache key."""

    select: Optional[Tuple[str, ...]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Tuple[str, ...] = ()
    step_functions: Tuple[str, ...] = ()
    logging_guards: Tuple[str, ...] = ()  # flag-name words whose branch only logs, added to the defaults
    opt_in_flags: Tuple[str, ...] = ()  # flag-name words whose branch is off unless asked for
    report_guarded: bool = False
    root: str = "."  # folder the config was found in; per-file-ignores and exclude are relative to it

    @property
    def all_step_functions(self) -> FrozenSet[str]:
        return frozenset(DEFAULT_STEP_FUNCTIONS + self.step_functions)

    @property
    def all_logging_words(self) -> Tuple[str, ...]:
        return LOGGING_FLAG_WORDS + self.logging_guards

    @property
    def all_opt_in_words(self) -> Tuple[str, ...]:
        return OPT_IN_FLAG_WORDS + self.opt_in_flags

    def enabled_codes(self, known: Mapping[str, bool]) -> FrozenSet[str]:
        """Resolve select / extend-select / ignore against ``known`` (code -> on by default).

        The most specific matching prefix wins; on a tie, ignore wins (as in ruff).
        """
        chosen = set()
        for code in known:
            if self.select is None:  # the default set acts as the prefix "SFL" over default-on rules
                best_select = len("SFL") if known[code] else None
            else:
                best_select = _specificity(code, self.select)
            extended = _specificity(code, self.extend_select)
            if extended is not None and (best_select is None or extended > best_select):
                best_select = extended
            best_ignore = _specificity(code, self.ignore)
            if best_select is not None and (best_ignore is None or best_select > best_ignore):
                chosen.add(code)
        return frozenset(chosen)

    def ignored_for(self, path: str) -> Tuple[str, ...]:
        """Codes ignored for ``path`` by per-file-ignores."""
        if not self.per_file_ignores:
            return ()
        rel = _relative(path, self.root)
        name = os.path.basename(path)
        out: List[str] = []
        for pattern, codes in self.per_file_ignores:
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(path, pattern):
                out.extend(codes)
        return tuple(out)

    def is_excluded(self, path: str) -> bool:
        """True when a file or folder is excluded by default or by ``exclude``."""
        name = os.path.basename(path.rstrip("/\\")) or path
        if _DEFAULT_EXCLUDED.match(os.path.normcase(name)):
            return True
        if not self.exclude:
            return False
        rel = _relative(path, self.root)
        for pattern in self.exclude:
            pattern = pattern.rstrip("/")
            if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*"):
                return True
        return False


def _words(values: Sequence[str]) -> Tuple[str, ...]:
    """Flag words are matched against ``_``-separated name parts in lower case."""
    return tuple(value.lower().strip("_") for value in values if value.strip("_"))


def _specificity(code: str, prefixes: Iterable[str]) -> Optional[int]:
    best = None
    for prefix in prefixes:
        if prefix == "ALL":
            length = 0
        elif code.startswith(prefix):
            length = len(prefix)
        else:
            continue
        if best is None or length > best:
            best = length
    return best


def _relative(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    except ValueError:  # different drives on Windows
        return path
    return rel.replace(os.sep, "/")


# ---------------------------------------------------------------- loading and validation

_KEYS = {
    "select": "codes",
    "extend-select": "codes",
    "ignore": "codes",
    "per-file-ignores": "table",
    "exclude": "strings",
    "extend-exclude": "strings",  # ruff's name for it: patterns added to the folders always skipped
    "step-functions": "strings",
    "logging-guards": "strings",
    "opt-in-flags": "strings",
    "report-guarded": "bool",
}


def validate_codes(values: Sequence[str], where: str, known: Iterable[str]) -> Tuple[str, ...]:
    """Check that every entry is ALL or a prefix of a known code."""
    known = tuple(known)
    out = []
    for value in values:
        value = value.strip().upper()
        if not value:
            continue
        if value != "ALL" and not any(code.startswith(value) for code in known):
            raise ConfigError(f"{where}: unknown rule code or prefix {value!r} (codes look like SFL101; see --list-rules)")
        out.append(value)
    return tuple(out)


def _check_type(key: str, value: object, kind: str, where: str) -> None:
    ok = {
        "codes": isinstance(value, list) and all(isinstance(v, str) for v in value),
        "strings": isinstance(value, list) and all(isinstance(v, str) for v in value),
        "bool": isinstance(value, bool),
        "table": isinstance(value, dict) and all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()
        ),
    }[kind]
    if not ok:
        expected = {
            "codes": "a list of rule codes, e.g. [\"SFL1\", \"SFL201\"]",
            "strings": "a list of strings",
            "bool": "true or false",
            "table": "a table of glob = [codes], e.g. {\"tests/*\" = [\"SFL1\"]}",
        }[kind]
        raise ConfigError(f"{where}: `{key}` must be {expected}, got {value!r}")


def config_from_table(table: Mapping[str, object], where: str, root: str, known: Iterable[str]) -> Config:
    """Build a Config from the ``[tool.syncfree-lint]`` table, rejecting unknown keys."""
    known = tuple(known)
    values: Dict[str, object] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("_", "-")
        if key not in _KEYS:
            close = [k for k in _KEYS if k.split("-")[0] == key.split("-")[0]]
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(sorted(_KEYS))})"
            raise ConfigError(f"{where}: unknown key {raw_key!r}{hint}")
        _check_type(key, value, _KEYS[key], where)
        values[key] = value
    pfi = tuple(
        (pattern, validate_codes(codes, f"{where}: per-file-ignores[{pattern!r}]", known))
        for pattern, codes in _table(values, "per-file-ignores").items()
    )
    return Config(
        select=validate_codes(_strings(values, "select"), f"{where}: select", known) if "select" in values else None,
        extend_select=validate_codes(_strings(values, "extend-select"), f"{where}: extend-select", known),
        ignore=validate_codes(_strings(values, "ignore"), f"{where}: ignore", known),
        per_file_ignores=pfi,
        exclude=tuple(_strings(values, "exclude")) + tuple(_strings(values, "extend-exclude")),
        step_functions=tuple(_strings(values, "step-functions")),
        logging_guards=_words(_strings(values, "logging-guards")),
        opt_in_flags=_words(_strings(values, "opt-in-flags")),
        report_guarded=bool(values.get("report-guarded", False)),
        root=root,
    )


def _strings(values: Mapping[str, object], key: str) -> List[str]:
    """A list of strings that ``_check_type`` accepted (absent: empty)."""
    value = values.get(key, [])
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _table(values: Mapping[str, object], key: str) -> Dict[str, List[str]]:
    """A table of glob = [codes] that ``_check_type`` accepted (absent: empty)."""
    value = values.get(key, {})
    if not isinstance(value, dict):
        return {}
    return {str(k): [c for c in v if isinstance(c, str)] for k, v in value.items() if isinstance(v, list)}


def read_pyproject(path: Path) -> Optional[Mapping[str, object]]:
    """The ``[tool.syncfree-lint]`` table of a pyproject.toml, or None when it has none."""
    if tomllib is None:
        raise ConfigError("reading pyproject.toml needs Python 3.11+ (tomllib)")
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    tool = data.get("tool", {})
    section = tool.get(SECTION) if isinstance(tool, dict) else None
    warn_misspelt_sections(path, tool, SECTION)
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.{SECTION}] must be a table")
    return section


def find_config(start: Path) -> Optional[Path]:
    """The closest pyproject.toml with a ``[tool.syncfree-lint]`` section, walking up from ``start``."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                if read_pyproject(candidate) is not None:
                    return candidate
            except ConfigError:
                return candidate  # let load_config report it
    return None


def load_config(explicit: Optional[str], paths: Sequence[str], known: Iterable[str]) -> Config:
    """Load the configuration: ``--config`` when given, else the closest pyproject.toml."""
    known = tuple(known)
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"--config: no such file: {explicit}")
        section = read_pyproject(path)
        if section is None:
            if path.name != "pyproject.toml":
                # A dedicated file (e.g. syncfree-lint.toml) may hold the keys at top level.
                with open(path, "rb") as handle:
                    section = tomllib.load(handle)
            else:
                section = {}
        return config_from_table(section, str(path), str(path.parent), known)
    start = Path(paths[0]) if paths else Path(".")
    found = find_config(start if start.exists() else Path("."))
    if found is None:
        return Config(root=str(Path(".").resolve()))
    section = read_pyproject(found) or {}
    return config_from_table(section, str(found), str(found.parent), known)


def with_overrides(
    config: Config,
    *,
    select: Optional[Tuple[str, ...]] = None,
    extend_select: Optional[Tuple[str, ...]] = None,
    ignore: Optional[Tuple[str, ...]] = None,
    step_functions: Optional[Tuple[str, ...]] = None,
    report_guarded: Optional[bool] = None,
) -> Config:
    """A copy of ``config`` with the command-line values that were given (None: not given)."""
    return replace(
        config,
        select=config.select if select is None else select,
        extend_select=config.extend_select if extend_select is None else extend_select,
        ignore=config.ignore if ignore is None else ignore,
        step_functions=config.step_functions if step_functions is None else step_functions,
        report_guarded=config.report_guarded if report_guarded is None else report_guarded,
    )
