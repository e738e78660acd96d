"""Frame attribution: the user's source line behind a sync, walking past library frames.

Library code is torch, syncfree, the standard library and the packages registered with
:func:`add_library` (torchmetrics, Lightning and accelerate by default); a sync inside them is
reported at the user's line that called into them.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import sysconfig
import types
from typing import Optional

import torch

DEFAULT_LIBRARIES = ("torchmetrics", "lightning_utilities", "lightning", "pytorch_lightning", "accelerate")


def _package_dir(name: str) -> Optional[str]:
    """The folder of an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.abspath(list(spec.submodule_search_locations)[0]) + os.sep


def _stdlib_dirs() -> tuple[str, ...]:
    found = set()
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            found.add(os.path.abspath(p) + os.sep)
    found.add(os.path.dirname(os.path.abspath(os.__file__)) + os.sep)
    return tuple(found)


class LibraryPaths:
    """Which source files are library code (folders of torch, syncfree, the stdlib, added packages)."""

    def __init__(self) -> None:
        torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        syncfree_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        self.torch_dir = torch_dir
        self.libraries: tuple[str, ...] = (torch_dir, syncfree_dir)
        self.stdlib = _stdlib_dirs()
        self.is_library = functools.lru_cache(maxsize=4096)(self._is_library)

    def add(self, *names: str) -> None:
        found = tuple(d for d in (_package_dir(n) for n in names) if d and d not in self.libraries)
        if found:
            self.libraries = self.libraries + found
            self.is_library.cache_clear()

    def _is_library(self, filename: str) -> bool:
        if filename.startswith("<frozen"):
            return True
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        if path.startswith(self.libraries):
            return True
        for p in self.stdlib:
            if path.startswith(p):
                rest = path[len(p):]
                # site-packages may live inside the stdlib folder: those are not stdlib.
                return not (rest.startswith("site-packages") or rest.startswith("dist-packages"))
        return False


LIBRARIES = LibraryPaths()
LIBRARIES.add(*DEFAULT_LIBRARIES)


def add_library(*names: str) -> None:
    """Treat these installed packages as library code: events inside them are reported at the
    user's line that called into them (as for torch). torchmetrics, Lightning and accelerate are
    included by default."""
    LIBRARIES.add(*names)


def is_torch(filename: str) -> bool:
    """Whether ``filename`` is torch's own source (or the standard library's)."""
    if filename.startswith("<frozen"):
        return True
    path = os.path.abspath(filename) if not filename.startswith("<") else filename
    return path.startswith(LIBRARIES.torch_dir) or any(
        path.startswith(p) and "-packages" not in path[len(p):] for p in LIBRARIES.stdlib
    )


def is_library(filename: str) -> bool:
    """Whether ``filename`` is library code (never reported as the user's line)."""
    return LIBRARIES.is_library(filename)


def user_frame(frame: Optional[types.FrameType] = None):
    """(innermost frame outside library code, the frame it called) or (None, None)."""
    f: Optional[types.FrameType] = frame if frame is not None else sys._getframe(1)
    child: Optional[types.FrameType] = None
    while f is not None:
        if not is_library(f.f_code.co_filename):
            return f, child
        child = f
        f = f.f_back
    return None, None


def innermost_user_frame_of(tb) -> Optional[tuple[str, int]]:
    """(file, line) of the innermost user frame of a traceback, or None."""
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not is_library(name):
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found
