"""The interface every back end of the guard implements (the CPU stand-in, CUDA)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class Backend(ABC):
    """Turns a device's sync detection on and off around a guard.

    While a guard is active the back end calls ``guard._record(kind, op, detail, source=...)``
    for each host sync, on the innermost active guard of its own name (``ACTIVE.innermost``).
    """

    #: "stand-in" or "cuda": the guards a back end records into
    name: str

    @abstractmethod
    def enter(self, guard: Any) -> None:
        """Start detecting syncs for ``guard`` (nestable)."""

    @abstractmethod
    def exit(self, guard: Any, exc: BaseException | None, tb: Any) -> None:
        """Stop detecting syncs for ``guard``; may raise a ``HostSyncError`` for what it saw."""
