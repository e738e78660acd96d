"""The guard object: a context manager that collects, warns about or raises on host syncs."""

from __future__ import annotations

import os
import sys
import warnings

import torch

from .active import ACTIVE
from .backend import Backend
from .cuda import CUDA_BACKEND
from .events import MODES, HostSyncError, SyncEvent, SyncWarning, error_message
from .frames import user_frame
from .standin import STAND_IN_BACKEND
from .tags import STAND_IN



def accelerator_device() -> torch.device:
    """The device tests should put tensors on: CUDA when available, else :data:`STAND_IN`."""
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return STAND_IN


def resolve_device(device) -> torch.device:
    """The guarded device: ``None`` picks :func:`accelerator_device`; ``cpu``/``cpu:N`` the stand-in."""
    if device is None:
        return accelerator_device()
    dev = torch.device(device)
    if dev.type == "cuda":
        if dev.index is None and torch.cuda.is_available():
            dev = torch.device("cuda", torch.cuda.current_device())
        return dev
    if dev.type == "cpu":
        return STAND_IN
    raise ValueError(f"no_host_sync: unsupported device {device!r} (use cuda or the CPU stand-in)")


def backend_for(device: torch.device) -> Backend:
    """The back end that watches ``device``."""
    return CUDA_BACKEND if device.type == "cuda" else STAND_IN_BACKEND


class HostSyncGuard:
    """Context manager that detects host syncs; see the package docstring.

    ``mode``: ``"record"`` collects :class:`SyncEvent` objects in :attr:`events`; ``"warn"`` also
    issues a :class:`SyncWarning` per event; ``"error"`` raises :class:`HostSyncError` at the event
    (on CUDA: an op that synced raises once it returned; ``torch.cuda.synchronize()`` before it waits).

    ``device``: ``None`` picks CUDA when available, else the CPU stand-in; ``"cuda"``/``"cuda:N"``
    or ``"cpu"``/``"cpu:0"`` force a back end.

    ``cuda_trace``: also report the explicit synchronizations (``torch.cuda.synchronize()``,
    ``Stream.synchronize()``, ``Event.synchronize()``), wrapped while the guard is active and
    restored after; a name bound before the guard (``from torch.cuda import synchronize``) is not
    seen.  torch's own CUDA trace hooks are not used: they cannot be switched off again, and while
    one runs with a Python exception pending, that exception becomes ``SystemError``.

    Nested guards: an event goes to the innermost active guard of the same back end.
    """

    def __init__(self, mode: str = "record", device=None, *, cuda_trace: bool = True):
        if mode not in MODES:
            raise ValueError(f"no_host_sync: mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.device = resolve_device(device)
        self.cuda_trace = cuda_trace
        self.backend = backend_for(self.device)
        self.events: list[SyncEvent] = []
        self._active = False
        self._last_child = None  # dedupe: the library frame the last event came through
        self._prev_debug_mode = None
        self._usage_at_enter = (0, 0)

    # ---- context manager
    def __enter__(self) -> HostSyncGuard:
        if self._active:
            raise RuntimeError("this no_host_sync guard is already active")
        self._active = True
        self.backend.enter(self)
        ACTIVE.push(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        ACTIVE.remove(self)
        self._active = False
        self._last_child = None
        self.backend.exit(self, exc, tb)
        return False

    # ---- results
    def clear(self) -> None:
        self.events.clear()

    def report(self, relative_to=None) -> str:
        """One line per event; file names relative to ``relative_to`` (a folder) when inside it."""
        if not self.events:
            return "no host sync"
        n = len(self.events)
        lines = [f"{n} host sync{'s' if n != 1 else ''}:"]
        for ev in self.events:
            name = ev.filename
            if relative_to is not None and not name.startswith("<"):
                rel = os.path.relpath(name, os.fspath(relative_to))
                if not rel.startswith(os.pardir):
                    name = rel
            text = f"  {name}:{ev.lineno}: {ev.kind} ({ev.op})"
            lines.append(text + (f"  [{ev.detail}]" if ev.detail else ""))
        return "\n".join(lines)

    def check(self) -> None:
        """Raise :class:`HostSyncError` listing every recorded event, if any."""
        if self.events:
            raise HostSyncError(self.report(), self.events)

    def __repr__(self) -> str:
        return (
            f"HostSyncGuard(mode={self.mode!r}, device={str(self.device)!r}, "
            f"events={len(self.events)})"
        )

    # ---- recording (called by the back ends)
    def record(self, kind: str, op: str, detail: str = "") -> None:
        """Record a sync that no back end can see (a stand-in for ``torch.cuda.synchronize()``),
        at the caller's user line."""
        self._record(kind, op, detail)

    def _record(self, kind: str, op: str, detail: str = "", source: str = "op") -> None:
        frame, child = user_frame(sys._getframe(1))
        if child is not None and child is self._last_child:
            return  # one more sync inside the same user-level call
        self._last_child = child
        if frame is not None:
            filename, lineno = frame.f_code.co_filename, frame.f_lineno
        else:
            filename, lineno = "<unknown>", 0
        ev = SyncEvent(kind, op, filename, lineno, detail)
        self.events.append(ev)
        if self.mode == "warn":
            warnings.warn_explicit(error_message(ev), SyncWarning, filename, lineno or 1)
        elif self.mode == "error":
            raise HostSyncError(error_message(ev), [ev])
