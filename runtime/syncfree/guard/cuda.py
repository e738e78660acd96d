"""The CUDA back end: torch's sync debug mode (its warnings captured) plus wrappers of the explicit
synchronizations it does not report (``torch.cuda.synchronize()``, ``Stream.synchronize()``,
``Event.synchronize()``), in place while a CUDA guard is active."""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable

import torch

from .active import ACTIVE
from .backend import Backend
from .events import HostSyncError, SyncEvent, error_message
from .frames import innermost_user_frame_of

#: The text of torch's sync debug mode warnings and errors.
CUDA_SYNC_TEXT = "called a synchronizing CUDA operation"


def _showwarning_hook_factory(previous):
    orig = getattr(warnings, "_showwarning_orig", None)

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if CUDA_SYNC_TEXT in str(message):
            rec = ACTIVE.innermost("cuda")
            if rec is not None:
                rec._record(
                    "sync", "synchronizing CUDA operation", "torch.cuda sync debug mode",
                    source="cuda-warning",
                )
                return
        if previous is orig and hasattr(warnings, "_showwarnmsg_impl"):
            warnings._showwarnmsg_impl(  # type: ignore[attr-defined]
                warnings.WarningMessage(message, category, filename, lineno, file, line)
            )
        else:
            previous(message, category, filename, lineno, file, line)

    return showwarning


def explicit_sync(original: Callable[..., Any], kind: str, op: str) -> Callable[..., Any]:
    """``original`` (an explicit synchronization, which the sync debug mode does not report) wrapped
    to record ``kind``/``op`` into the innermost CUDA guard first; the error mode raises before the
    wait."""

    @functools.wraps(original)
    def synchronize(*args: Any, **kwargs: Any) -> Any:
        rec = ACTIVE.innermost("cuda") if ACTIVE else None
        if rec is not None:
            rec._record(kind, op, "explicit synchronization", source="explicit")
        return original(*args, **kwargs)

    return synchronize


#: (owner, attribute, kind, op): the explicit synchronizations wrapped while a CUDA guard is active
EXPLICIT_SYNCS = (
    ("torch.cuda", "synchronize", "synchronize", "torch.cuda.synchronize"),
    ("torch.cuda.Stream", "synchronize", "synchronize", "Stream.synchronize"),
    ("torch.cuda.Event", "synchronize", "synchronize", "Event.synchronize"),
)


def _owner(dotted: str) -> Any:
    obj: Any = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


class ExplicitSyncPatches:
    """Puts the wrappers of :data:`EXPLICIT_SYNCS` in place and takes them out again.

    torch's own CUDA trace hooks would see these too, but they cannot be removed once activated,
    and a hook that runs while a Python exception is pending (a CUDA tensor freed as an exception
    unwinds) turns that exception into ``SystemError`` (seen on an H100 with torch 2.11)."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any, bool]] = []

    def install(self) -> None:
        if self._saved:
            return
        for dotted, attr, kind, op in EXPLICIT_SYNCS:
            owner = _owner(dotted)
            own = attr in vars(owner)
            original = vars(owner)[attr] if own else getattr(owner, attr)
            self._saved.append((owner, attr, original, own))
            setattr(owner, attr, explicit_sync(original, kind, op))

    def remove(self) -> None:
        while self._saved:
            owner, attr, original, own = self._saved.pop()
            if own:
                setattr(owner, attr, original)
            else:  # it was inherited: take the wrapper away, leave nothing behind
                delattr(owner, attr)


class CudaBackend(Backend):
    """Sets the sync debug mode per guard; captures its warnings while any CUDA guard is active."""

    name = "cuda"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._warn_ctx: Any = None
        self.patches = ExplicitSyncPatches()

    def enter(self, guard: Any) -> None:
        with self._lock:
            guard._prev_debug_mode = torch.cuda.get_sync_debug_mode()
            # "warn" in every guard mode: the error mode raises from the warning, once the op returned
            torch.cuda.set_sync_debug_mode("warn")
            if self._depth == 0:
                ctx = warnings.catch_warnings()
                ctx.__enter__()
                warnings.filterwarnings("always", message=".*" + CUDA_SYNC_TEXT)
                warnings.showwarning = _showwarning_hook_factory(warnings.showwarning)
                self._warn_ctx = ctx
            self._depth += 1
            if guard.cuda_trace:
                self.patches.install()

    def exit(self, guard: Any, exc: BaseException | None, tb: Any) -> None:
        with self._lock:
            if guard._prev_debug_mode is not None:
                torch.cuda.set_sync_debug_mode(guard._prev_debug_mode)
                guard._prev_debug_mode = None
            self._depth -= 1
            if self._depth == 0:
                self.patches.remove()
            if self._depth == 0 and self._warn_ctx is not None:
                ctx, self._warn_ctx = self._warn_ctx, None
                ctx.__exit__(None, None, None)
        if exc is not None and isinstance(exc, RuntimeError) and CUDA_SYNC_TEXT in str(exc):
            # torch's sync debug mode "error" raised inside the op: report it our way.
            frame = innermost_user_frame_of(tb)
            ev = SyncEvent(
                "sync",
                "synchronizing CUDA operation",
                frame[0] if frame else "<unknown>",
                frame[1] if frame else 0,
                "torch.cuda sync debug mode",
            )
            guard.events.append(ev)
            raise HostSyncError(error_message(ev), [ev]) from exc


CUDA_BACKEND = CudaBackend()
