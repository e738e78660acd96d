"""Writing a file so that readers see the old content or the new, never half of it."""
from __future__ import annotations

import os
import pickle
import tempfile
from typing import Any


def dump_atomically(path: str, value: Any) -> None:
    """Pickle ``value`` to a temporary file in ``path``'s folder, then rename it over ``path``.
    Raises OSError (the caller decides whether a failed write matters); never leaves a ``.tmp``."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def write_text_atomically(path: str, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to a temporary file in ``path``'s folder, then rename it over ``path``
    (a new file gets the usual permissions, an existing one keeps its mode)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            handle.write(text)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
