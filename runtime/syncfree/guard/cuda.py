"""The CUDA back end: torch's sync debug mode (its warnings captured) plus the CUDA trace hooks
(device, stream and event synchronization), which also see ``torch.cuda.synchronize()`` and
``Event.synchronize()``."""

from __future__ import annotations

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


def trace_callback(source: str, kind: str, op: str) -> Callable[..., None]:
    """A CUDA trace hook that records ``kind``/``op`` into the innermost CUDA guard."""

    def callback(*_args):
        if not ACTIVE:
            return
        rec = ACTIVE.innermost("cuda")
        if rec is not None:
            rec._record(kind, op, "CUDA trace hook", source=source)

    return callback


def install_trace_hooks() -> None:
    """Register the CUDA trace hooks (torch cannot remove them again; they are cheap when idle)."""
    from torch.cuda import _gpu_trace

    torch._C._activate_gpu_trace()
    _gpu_trace.register_callback_for_device_synchronization(
        trace_callback("device-trace", "synchronize", "torch.cuda.synchronize")
    )
    # .item(), blocking copies and Stream.synchronize() synchronize a stream; the sync debug
    # mode warns about those too, and that warning is merged into this event.
    _gpu_trace.register_callback_for_stream_synchronization(
        trace_callback("stream-trace", "sync", "cudaStreamSynchronize")
    )
    _gpu_trace.register_callback_for_event_synchronization(
        trace_callback("event-trace", "synchronize", "Event.synchronize")
    )


class CudaBackend(Backend):
    """Sets the sync debug mode per guard; captures its warnings while any CUDA guard is active."""

    name = "cuda"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._warn_ctx: Any = None
        self._trace_installed = False
        #: installs the trace hooks; replaceable (tests without a GPU)
        self.trace_installer: Callable[[], None] = self.install_hooks

    def install_hooks(self) -> None:
        """Install the CUDA trace hooks once per process."""
        with self._lock:
            if not self._trace_installed:
                install_trace_hooks()
                self._trace_installed = True

    def enter(self, guard: Any) -> None:
        with self._lock:
            guard._prev_debug_mode = torch.cuda.get_sync_debug_mode()
            torch.cuda.set_sync_debug_mode("error" if guard.mode == "error" else "warn")
            if self._depth == 0:
                ctx = warnings.catch_warnings()
                ctx.__enter__()
                warnings.filterwarnings("always", message=".*" + CUDA_SYNC_TEXT)
                warnings.showwarning = _showwarning_hook_factory(warnings.showwarning)
                self._warn_ctx = ctx
            self._depth += 1
            if guard.cuda_trace:
                self.trace_installer()

    def exit(self, guard: Any, exc: BaseException | None, tb: Any) -> None:
        with self._lock:
            if guard._prev_debug_mode is not None:
                torch.cuda.set_sync_debug_mode(guard._prev_debug_mode)
                guard._prev_debug_mode = None
            self._depth -= 1
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
        if exc is None and guard._pending_error is not None:
            ev, guard._pending_error = guard._pending_error, None
            raise HostSyncError(error_message(ev), [ev])


CUDA_BACKEND = CudaBackend()
