"""The guards active in the process, innermost last; back ends record into the innermost one."""

from __future__ import annotations

import threading
from typing import Any, Optional


class ActiveGuards:
    """A stack of active guards (all threads), each tagged with its back end's name."""

    def __init__(self) -> None:
        self._guards: list[Any] = []
        self._lock = threading.Lock()

    def push(self, guard: Any) -> None:
        with self._lock:
            self._guards.append(guard)

    def remove(self, guard: Any) -> None:
        with self._lock:
            for i in range(len(self._guards) - 1, -1, -1):
                if self._guards[i] is guard:
                    del self._guards[i]
                    break

    def innermost(self, backend: str) -> Optional[Any]:
        """The innermost active guard on ``backend`` ("stand-in" or "cuda"), or None."""
        for g in reversed(self._guards):
            if g.backend.name == backend:
                return g
        return None

    def __bool__(self) -> bool:
        return bool(self._guards)


ACTIVE = ActiveGuards()
