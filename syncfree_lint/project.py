"""Project context: what the rest of a project contributes when only some of its files are linted.

flake8, pre-commit and editors hand over one file or a few. A helper in ``utils.py`` is per step
only because ``train.py`` calls it from its training loop, so linting ``utils.py`` alone must still
see ``train.py``'s call graph. This module finds the project a file belongs to (the nearest folder
holding ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``) and gives the *summaries* of
its other files: functions and call edges, never their findings.

Summaries are kept in one index per project inside the cache folder, keyed by each file's path,
size and modification time, so a warm run re-reads only the files that changed.
"""
from __future__ import annotations

import hashlib
import os
import pickle
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from syncfree_lint.analysis.filefacts import FileFacts
from syncfree_lint.atomic import dump_atomically
from syncfree_lint.cache import mark_cache_root

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
#: a project larger than this is not used as context (a home folder with a stray .git)
MAX_CONTEXT_FILES = 20000

Summary = Tuple[int, int, FileFacts]  # (size, mtime_ns, facts without findings)
Linter = Callable[[List[str]], List[FileFacts]]


def find_project_root(path: str) -> Optional[str]:
    """The nearest folder at or above ``path``'s folder that marks a project, or None."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def summary_of(facts: FileFacts) -> FileFacts:
    """Only what other files need: the functions a file defines, the calls it makes, and the kind
    facts of ``analysis.run_kinds``."""
    slim = FileFacts(facts.path, facts.module_name, facts.root)
    slim.functions = facts.functions
    slim.tables = facts.tables
    slim.classes = facts.classes
    slim.edges = facts.edges
    slim.methods = facts.methods
    slim.parameter_calls = facts.parameter_calls  # a function of this file may run one a requested file passes
    slim.passes = facts.passes  # a base class here may declare the hooks a requested file overrides
    slim.meters = facts.meters  # a meter class here may decide a requested file's fix
    slim.dtypes = facts.dtypes
    # what the requested files may learn about values, and what this file could learn first (``run_kinds``)
    slim.returns = facts.returns
    slim.attributes = facts.attributes  # what instances of its classes hold (``loss_fn.center``)
    slim.calls_out = facts.calls_out
    slim.unknown_imports = facts.unknown_imports
    slim.objects_wanted = facts.objects_wanted
    slim.unknown_params = facts.unknown_params
    slim.skipped = facts.skipped
    slim.returns_object = facts.returns_object
    slim.has_step = facts.has_step
    return slim


class ProjectIndex:
    """Summaries of one project's files, stored as one pickle (or in memory without a folder).

    ``ProjectIndex.open`` keeps one index per project and configuration for the life of the
    process: flake8 and editors ask for the same project file after file."""

    _open: Dict[Tuple[str, Optional[str], str], "ProjectIndex"] = {}

    @classmethod
    def open(cls, root: str, folder: Optional[str], config_key: str) -> "ProjectIndex":
        key = (os.path.abspath(root), folder, config_key)
        index = cls._open.get(key)
        if index is None:
            index = cls._open[key] = cls(root, folder, config_key)
        return index

    def __init__(self, root: str, folder: Optional[str], config_key: str) -> None:
        self.root = root
        digest = hashlib.blake2b(f"{os.path.abspath(root)}\0{config_key}".encode(), digest_size=12).hexdigest()
        self.file = os.path.join(folder, f"project-{digest}.pickle") if folder else None
        self.entries: Dict[str, Summary] = self._load()
        self.changed = False

    def _load(self) -> Dict[str, Summary]:
        if self.file is None:
            return {}
        try:
            with open(self.file, "rb") as handle:
                loaded = pickle.load(handle)
            return loaded if isinstance(loaded, dict) else {}
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError, TypeError):
            return {}

    def save(self) -> None:
        if self.file is None or not self.changed:
            return
        try:
            dump_atomically(self.file, self.entries)
            mark_cache_root(os.path.dirname(os.path.dirname(self.file)))
            self.changed = False
        except OSError:
            pass  # a read-only tree runs without a stored index

    def summaries(self, files: Sequence[str], lint: Linter) -> List[FileFacts]:
        """Summaries of ``files``: stored ones when the file is unchanged, fresh ones otherwise."""
        out: List[FileFacts] = []
        stale: List[Tuple[str, int, int]] = []
        for path in files:
            try:
                info = os.stat(path)
            except OSError:
                continue
            known = self.entries.get(path)
            if known is not None and known[0] == info.st_size and known[1] == info.st_mtime_ns:
                out.append(known[2])
            else:
                stale.append((path, info.st_size, info.st_mtime_ns))
        if stale:
            for (path, size, mtime), facts in zip(stale, lint([path for path, _, _ in stale])):
                slim = summary_of(facts)
                self.entries[path] = (size, mtime, slim)
                out.append(slim)
            self.changed = True
        live = set(files)
        for gone in [path for path in self.entries if path not in live]:
            del self.entries[gone]
            self.changed = True
        return out


def _shown(folder: str) -> str:
    """The folder as paths are shown to the user: relative to the working folder when inside it."""
    relative = os.path.relpath(folder)
    return folder if relative.startswith("..") else relative


def context_files(requested: Iterable[str], discover: Callable[[Sequence[str]], Iterable[str]]) -> Dict[str, List[str]]:
    """Project root -> its Python files other than ``requested`` (files with no project: none)."""
    wanted = {os.path.abspath(path) for path in requested}
    roots: Dict[str, List[str]] = {}
    for path in requested:
        root = find_project_root(path)
        if root is None or root in roots:
            continue
        files = []
        for found in discover([_shown(root)]):
            if os.path.abspath(found) not in wanted:
                files.append(found)
            if len(files) > MAX_CONTEXT_FILES:
                files = []
                break
        roots[root] = files
    return roots
