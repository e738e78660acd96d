"""Warnings about configuration that is almost right: a misspelt ``[tool.syncfree-lint]``."""
from __future__ import annotations

import sys
from typing import Mapping, Optional, Set, TextIO, Tuple

_WARNED: Set[Tuple[str, str]] = set()


def _squashed(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def misspelt_sections(tool: Mapping[str, object], section: str) -> list:
    """Keys of ``[tool]`` that look meant for ``section`` (``syncfree_lint``, ``syncfree``,
    ``syncfreelint``, ``SyncFree-Lint``...) but are not it."""
    return [key for key in tool if key != section and _squashed(key).startswith("syncfree")]


def warn_misspelt_sections(path: object, tool: object, section: str, stream: Optional[TextIO] = None) -> None:
    """Print one warning per misspelt section of ``path`` (once per process)."""
    if not isinstance(tool, Mapping):
        return
    for key in misspelt_sections(tool, section):
        if (str(path), key) in _WARNED:
            continue
        _WARNED.add((str(path), key))
        (stream or sys.stderr).write(
            f"syncfree-lint: warning: {path}: [tool.{key}] is not read; the section is named [tool.{section}]\n"
        )
