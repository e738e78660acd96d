"""Bucketed, asynchronous all_reduce of metric states.

Scheme
------
- Every state of every metric being synced (one metric, or all members of a collection) is
  sorted by label and grouped into buckets by (dtype, device, reduce op). A bucket is ONE flat
  buffer (``torch.cat`` of the states, which is also a snapshot: local accumulation may go on
  while the collective runs) and ONE ``all_reduce(..., async_op=True)`` with SUM, MAX or MIN.
- ``PendingSync.wait`` waits for the works and splits each bucket into per-state views stored
  as the metrics' *synced copy*. Local states are never overwritten, so a later sync reduces
  the full local states again (no double counting) and accumulation can continue.
- Because states are sums (or max/min), ranks that saw different numbers of samples reduce to
  exactly the single-process result.
- Layout check: before the first sync in a group (and again whenever the local layout changes)
  one ``all_gather_object`` exchanges a fingerprint of (label, shape, dtype, op) for every state;
  if ranks differ, every rank raises the same ``RuntimeError`` instead of hanging or mixing
  states. The verified fingerprint is cached per group.
- NCCL and CPU states: a NCCL-only group has no CPU backend ("No backend type associated with
  device type cpu"). When the group's backend is ``nccl`` and a bucket lives on the CPU, the
  bucket is staged through ``cuda:<current_device>`` and copied back in ``wait``.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

Entry = Tuple[str, Any, str]  # (label, metric, state name)


def _dist():
    import torch.distributed as dist

    return dist


def is_distributed(group: Any = None) -> bool:
    """True when a process group is initialized with more than one rank."""
    dist = _dist()
    return dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1


def _reduce_op(op: str) -> Any:
    ReduceOp = _dist().ReduceOp
    return {"sum": ReduceOp.SUM, "max": ReduceOp.MAX, "min": ReduceOp.MIN}[op]


def transport_device(group: Any, device: torch.device) -> torch.device:
    """Where a bucket on ``device`` must be for a collective in ``group``."""
    if device.type == "cpu" and _dist().get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return device


def layout_fingerprint(entries: Sequence[Entry]) -> Tuple[Tuple[str, Tuple[int, ...], str, str], ...]:
    """(label, shape, dtype, op) of every state: equal on all ranks or the sync is meaningless."""
    out = []
    for label, metric, name in entries:
        state = getattr(metric, name)
        out.append((label, tuple(state.shape), str(state.dtype), metric._reductions[name]))
    return tuple(out)


def _describe_mismatch(owner: str, layouts: List[Any]) -> str:
    lines = [f"syncfree: {owner} has a different layout on different ranks; every rank must hold "
             "the same metrics, created with the same arguments, before trigger_sync/sync."]
    base = {fp[0]: fp[1:] for fp in layouts[0]}
    for rank, layout in enumerate(layouts[1:], start=1):
        other = {fp[0]: fp[1:] for fp in layout}
        only_here = sorted(set(other) - set(base))
        only_base = sorted(set(base) - set(other))
        changed = sorted(k for k in set(base) & set(other) if base[k] != other[k])
        if only_here or only_base or changed:
            lines.append(
                f"  rank {rank} vs rank 0: only on rank {rank}: {only_here}; only on rank 0: "
                f"{only_base}; different shape/dtype/op: {changed}"
            )
    return "\n".join(lines)


def _group_key(group: Any) -> Any:
    return "WORLD" if group is None else id(group)


def verify_layout(owner: Any, group: Any, fingerprint: Any) -> None:
    """Raise on every rank when ranks disagree on the layout (one all_gather_object, cached)."""
    key = (_group_key(group), fingerprint)
    if key in owner._verified_layouts:
        return
    dist = _dist()
    layouts: List[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(layouts, fingerprint, group=group)
    if any(layout != layouts[0] for layout in layouts):
        raise RuntimeError(_describe_mismatch(type(owner).__name__, layouts))
    owner._verified_layouts.add(key)


class _Bucket:
    def __init__(self, entries: List[Entry], buffer: Tensor, home: torch.device, work: Any) -> None:
        self.entries = entries
        self.buffer = buffer
        self.home = home
        self.work = work


class PendingSync:
    """Collectives in flight; ``wait`` completes them and installs the synced copies."""

    def __init__(self, buckets: List[_Bucket]) -> None:
        self.buckets = buckets

    def wait(self, timeout: Any = None) -> None:
        if isinstance(timeout, (int, float)):
            timeout = datetime.timedelta(seconds=timeout)
        for bucket in self.buckets:
            if timeout is None:
                bucket.work.wait()
            else:
                bucket.work.wait(timeout)
        synced: Dict[int, Tuple[Any, Dict[str, Tensor]]] = {}
        for bucket in self.buckets:
            buffer = bucket.buffer
            if buffer.device != bucket.home:
                buffer = buffer.to(bucket.home)
            offset = 0
            for _, metric, name in bucket.entries:
                state = getattr(metric, name)
                n = state.numel()
                piece = buffer[offset:offset + n].view(state.shape)
                offset += n
                synced.setdefault(id(metric), (metric, {}))[1][name] = piece
        for metric, states in synced.values():
            metric._synced = states


def start_sync(owner: Any, entries: Sequence[Entry], group: Any = None) -> Optional[PendingSync]:
    """Start one async all_reduce per (dtype, device, op) bucket of ``entries``' states."""
    if not is_distributed(group):
        for _, metric, _ in entries:
            metric._synced = None  # one rank: the local states are the global ones
        return None
    dist = _dist()
    entries = sorted(entries, key=lambda e: e[0])
    verify_layout(owner, group, layout_fingerprint(entries))
    grouped: Dict[Tuple[str, str, str], List[Entry]] = {}
    for entry in entries:
        state = getattr(entry[1], entry[2])
        key = (str(state.dtype), str(state.device), entry[1]._reductions[entry[2]])
        grouped.setdefault(key, []).append(entry)
    buckets = []
    for (_, _, op), members in grouped.items():
        flat = torch.cat([getattr(m, name).detach().reshape(-1) for _, m, name in members])
        home = flat.device
        flat = flat.to(transport_device(group, home))
        work = dist.all_reduce(flat, op=_reduce_op(op), group=group, async_op=True)
        buckets.append(_Bucket(members, flat, home, work))
    return PendingSync(buckets)
