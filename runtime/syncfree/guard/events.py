"""What a guard reports: one host sync (:class:`SyncEvent`), and the warnings and errors it raises."""

from __future__ import annotations

from dataclasses import dataclass

#: How a guard reacts to a host sync.
MODES = ("record", "warn", "error")

# What to do instead, per kind of sync; shown in warnings and errors.
ADVICE = {
    "item": "keep the value on the device (tensor ops, torch.where, masked_fill) and read "
    "results once, outside the step, with syncfree.to_host()",
    "d2h": "accumulate on the device and read once with syncfree.to_host(), or copy with "
    ".to('cpu', non_blocking=True) into pinned memory",
    "h2d": "create the tensor on the device (torch.zeros/full(..., device=dev)), pass Python "
    "numbers as scalars, or copy from pinned memory with non_blocking=True",
    "dynamic-shape": "use a fixed-shape form: torch.where/masked_fill instead of boolean "
    "indexing, nonzero_static, scatter_add_/bincount with a known size, "
    "repeat_interleave(output_size=...)",
    "synchronize": "remove the explicit synchronize from the step; synchronize once when "
    "the results are read",
    "sync": "find the operation on this line that reads device data on the host and keep "
    "it on the device",
}


@dataclass(frozen=True)
class SyncEvent:
    """One operation that makes the host wait for the device."""

    kind: str  # item | d2h | h2d | dynamic-shape | synchronize | sync
    op: str  # the user-level call, e.g. "Tensor.item", or the aten op
    filename: str
    lineno: int
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}: {self.kind} ({self.op})"


class SyncWarning(UserWarning):
    """Issued by a guard in ``mode="warn"`` for each host sync."""


class StandInUnusedWarning(UserWarning):
    """A stand-in guard ran tensor operations, but none of them on the stand-in device."""


class HostSyncError(RuntimeError):
    """Raised by a guard in ``mode="error"`` at the host sync (or by ``HostSyncGuard.check``)."""

    def __init__(self, message: str, events: list[SyncEvent] | None = None):
        super().__init__(message)
        self.events = list(events or [])


def error_message(ev: SyncEvent) -> str:
    """The text of a warning or error for ``ev``: where, what, and what to do instead."""
    advice = ADVICE.get(ev.kind, ADVICE["sync"])
    text = f"{ev}: host sync: the host waits for the accelerator here"
    if ev.detail:
        text += f" ({ev.detail})"
    return f"{text}. To avoid it, {advice}."
