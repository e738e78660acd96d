"""The per-file result cache in ``.syncfree_cache/``.

A file's facts are stored under a key made of its bytes, its path, the configuration, the tool
version and a hash of the linter's own source files, so any change to one of them misses (an
edited install never serves results of the code it replaced). Writes go to a temporary file in the same
folder and are renamed into place, so concurrent runs never see half a file.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import stat
from typing import Any, Optional, Sequence

from syncfree_lint import __version__
from syncfree_lint.atomic import dump_atomically

CACHE_DIR = ".syncfree_cache"
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_SOURCE_HASH: Optional[str] = None


def source_hash() -> str:
    """A digest of every ``.py`` file of the installed ``syncfree_lint`` package (once per process)."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        digest = hashlib.blake2b(digest_size=8)
        for folder, dirs, files in os.walk(_PACKAGE):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    digest.update(os.path.relpath(path, _PACKAGE).encode())
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
        _SOURCE_HASH = digest.hexdigest()
    return _SOURCE_HASH


def mark_cache_root(root: str) -> None:
    """Tag the cache folder for backup tools (CACHEDIR.TAG) and keep it out of git
    (a ``.gitignore`` holding ``*``), as ruff and pytest do. Raises OSError."""
    for name, text in (("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# syncfree-lint cache\n"),
                       (".gitignore", "# created by syncfree-lint\n*\n")):
        marker = os.path.join(root, name)
        if not os.path.exists(marker):
            with open(marker, "w") as handle:
                handle.write(text)


class Cache:
    def __init__(self, folder: str, config_key: str) -> None:
        self.folder = os.path.join(folder, f"{__version__}-{source_hash()}")
        self.salt = f"{__version__}\0{source_hash()}\0{config_key}\0".encode()
        self._ready = False

    def key(self, path: str, data: bytes) -> str:
        digest = hashlib.blake2b(self.salt, digest_size=20)
        digest.update(os.path.abspath(path).encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def run_key(self, paths: Sequence[str]) -> Optional[str]:
        """The key of a whole run over ``paths`` (their names and bytes, in order), or None when
        one cannot be read. Findings depend on every file of the run (a helper in one file makes a
        read in another a finding), so a run's result is stored whole under this key and served
        only when no file of the run changed, none was added and none removed."""
        digest = hashlib.blake2b(self.salt + b"run\0", digest_size=20)
        for path in paths:
            try:
                if not stat.S_ISREG(os.stat(path).st_mode):
                    return None  # a FIFO would block the read: no entry for such a run
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                return None
            digest.update(os.path.abspath(path).encode("utf-8", "surrogateescape"))
            digest.update(b"\0%d\0" % len(data))
            digest.update(data)
        return digest.hexdigest()

    def project_run_key(self, paths: Sequence[str], context: Sequence[str]) -> Optional[str]:
        """The key of a run over some files of a project: their names and bytes, and the name,
        size and modification time of every other file of the project read for context (the
        project index decides a summary is stale the same way)."""
        own = self.run_key(paths)
        if own is None:
            return None
        digest = hashlib.blake2b(self.salt + b"project\0" + own.encode(), digest_size=20)
        for path in sorted(context):
            try:
                info = os.stat(path)
            except OSError:
                return None
            digest.update(b"%s\0%d\0%d\0" % (os.path.abspath(path).encode("utf-8", "surrogateescape"),
                                               info.st_size, info.st_mtime_ns))
        return digest.hexdigest()

    def _file(self, key: str) -> str:
        return os.path.join(self.folder, key[:2], key[2:] + ".pickle")

    def get(self, key: str) -> Optional[Any]:
        try:
            with open(self._file(key), "rb") as handle:
                return pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError):
            return None

    def put(self, key: str, value: Any) -> None:
        try:
            if not self._ready:
                os.makedirs(self.folder, exist_ok=True)
                mark_cache_root(os.path.dirname(self.folder))
                self._ready = True
            dump_atomically(self._file(key), value)
        except OSError:
            pass  # a read-only tree simply runs without a cache
