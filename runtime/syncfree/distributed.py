"""Bucketed, asynchronous all_reduce of metric states.

Scheme
------
- Every state of every metric being synced (one metric, or all members of a collection) is
  labelled ``<member>.<state>``, sorted by label and grouped into buckets by (dtype, device,
  reduce op). A bucket is ONE flat buffer (``torch.cat`` of the states, which is also a
  snapshot: local accumulation may go on while the collective runs) and ONE
  ``all_reduce(..., async_op=True)`` with SUM, MAX or MIN.
- The layout depends only on which metrics the owner holds, never on local history: every member
  of a collection travels under its own label, also the members of a compute group (which share
  one state object on one rank but may have left their group on another rank, by an update or a
  reset of their own), so the same collection gives the same buckets on every rank, always.
- ``PendingSync.wait`` waits for the works and splits each bucket into per-state views, by part,
  that the owner stores as the metrics' *synced copy*. Local states are never overwritten, so a
  later sync reduces the full local states again (no double counting) and accumulation can
  continue.
- Because states are sums (or max/min), ranks that saw different numbers of samples reduce to
  exactly the single-process result.
- Layout check, on EVERY sync: the layout (label, shape, dtype, op, device type of every state)
  is hashed (blake2b, 64 bits) and ``trigger_sync`` starts one tiny asynchronous ``all_gather``
  of ``[hash, speculated, last verified hash]`` (an int64 tensor on the CPU, or on the GPU under
  NCCL; never an ``all_reduce``). ``wait_sync(timeout)`` waits for it within the timeout, so a
  rank that never joins gives a ``TimeoutError`` after ``timeout`` seconds, not after the
  process group's timeout. If ranks differ, every rank raises the same ``RuntimeError``; the
  full layouts are then exchanged (only in that case, bounded by the same timeout) to say which
  states differ.
- Speculation: the bucket all_reduces are started in ``trigger_sync`` (overlapping whatever runs
  before ``wait_sync``) only when this rank's layout equals the one verified on every rank at
  this owner's previous sync in the group. Otherwise (first sync, or a changed layout) the
  buckets are snapshotted in ``trigger_sync`` but their all_reduces are only issued by
  ``wait_sync`` once the layout check passed, so ranks never run all_reduces of different
  sizes. On a mismatch where some ranks speculated, the others issue matching dummy all_reduces
  (from the previous verified layout) so that the group's collectives stay aligned.
  Caveat: collectives issued on the same group between ``trigger_sync`` and ``wait_sync`` are
  only safe when every rank speculates alike (always the case when layouts do not change).
- ``"cat"`` states (a buffer of samples, see :mod:`syncfree.exact_curves`) travel in a bucket of
  their own: this rank's buffer at its rank's offset of a zero buffer ``world`` times larger, so the
  SUM all_reduce gathers every rank's buffer; the synced copy holds them one after the other.
- MIN shares the MAX bucket: a floating ``min`` state travels negated in the ``max`` bucket of
  its dtype (``min(x) = -max(-x)``), so a collection with both needs one all_reduce fewer.
  Integer ``min`` states keep a bucket of their own (negating ``iinfo.min`` overflows).
- ``compute()`` (``sync_on_compute=True``): :func:`sync_for_compute` runs the same buckets now
  and returns the reduced states without installing them. The layout check runs when its row
  lives on the host (gloo); under NCCL it would need a device-to-host read, so it is skipped and
  the bucket all_reduces are issued directly (every rank must hold the same metrics; an explicit
  ``sync()`` checks that).
- NCCL and CPU states: a NCCL-only group has no CPU backend ("No backend type associated with
  device type cpu"). When the group's backend is ``nccl`` and a bucket lives on the CPU, the
  bucket is staged through ``cuda:<current_device>`` and copied back in ``wait``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from syncfree.state import MetricState

Entry = Tuple[str, MetricState, str]  # (label, the states holding it, state name)
# (label, shape, dtype, reduce op, device type) of one state.
LayoutEntry = Tuple[str, Tuple[int, ...], str, str, str]
# (dtype, transport device, reduce op, numel) of one bucket, in issue order.
BucketSpec = Tuple[str, str, str, int]


def _dist():
    import torch.distributed as dist

    return dist


def is_distributed(group: Any = None) -> bool:
    """True when a process group is initialized with more than one rank."""
    dist = _dist()
    return dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1


def _reduce_op(op: str) -> Any:
    ReduceOp = _dist().ReduceOp
    # "cat": every rank's buffer sits at its own offset of a zero buffer, so a SUM gathers them.
    return {"sum": ReduceOp.SUM, "cat": ReduceOp.SUM, "max": ReduceOp.MAX, "min": ReduceOp.MIN}[op]


def transport_device(group: Any, device: torch.device) -> torch.device:
    """Where a bucket on ``device`` must be for a collective in ``group``."""
    if device.type == "cpu" and _dist().get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return device


def layout_fingerprint(entries: Sequence[Entry]) -> Tuple[LayoutEntry, ...]:
    """(label, shape, dtype, op, device type) of every state: equal on all ranks or the sync is meaningless."""
    out = []
    for label, states, name in entries:
        state = states.view.__dict__[name]
        out.append((label, tuple(state.shape), str(state.dtype), states.reductions[name], state.device.type))
    return tuple(out)


def layout_hash(layout: Sequence[LayoutEntry]) -> int:
    """A stable 64-bit signed hash of ``layout`` (the same in every process, unlike ``hash``)."""
    digest = hashlib.blake2b(json.dumps(layout).encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little", signed=True)
    return value or 1  # 0 means "no verified layout" in the exchanged rows


def _describe_mismatch(owner: str, layouts: List[Any]) -> str:
    lines = [f"syncfree: {owner} has a different layout on different ranks; every rank must hold "
             "the same metrics, created with the same arguments, before trigger_sync/sync."]
    base = {fp[0]: tuple(fp[1:]) for fp in layouts[0]}
    for rank, layout in enumerate(layouts[1:], start=1):
        other = {fp[0]: tuple(fp[1:]) for fp in layout}
        only_here = sorted(set(other) - set(base))
        only_base = sorted(set(base) - set(other))
        changed = sorted(k for k in set(base) & set(other) if base[k] != other[k])
        if only_here or only_base or changed:
            lines.append(
                f"  rank {rank} vs rank 0: only on rank {rank}: {only_here}; only on rank 0: "
                f"{only_base}; different shape/dtype/op/device: {changed}"
            )
            for k in changed[:5]:
                lines.append(f"    {k}: rank 0 {base[k]}, rank {rank} {other[k]}")
    return "\n".join(lines)


def _describe_hashes(owner: str, hashes: List[int], note: str) -> str:
    groups: Dict[int, List[int]] = {}
    for rank, h in enumerate(hashes):
        groups.setdefault(h, []).append(rank)
    parts = "; ".join(f"ranks {ranks}: layout hash {h:#018x}" for h, ranks in groups.items())
    return (f"syncfree: {owner} has a different layout on different ranks; every rank must hold "
            f"the same metrics, created with the same arguments, before trigger_sync/sync. {parts}. {note}")


class SyncRecord:
    """One owner's sync bookkeeping: the sync in flight, and per process group the layout verified
    at its last sync (hash, bucket specs). Neither survives pickling (both belong to this process);
    ``copy.deepcopy`` keeps the verified layouts."""

    def __init__(self) -> None:
        self.pending: Optional["PendingSync"] = None
        self.verified: Dict[Any, Tuple[int, List[BucketSpec]]] = {}

    def __reduce__(self) -> Tuple[Any, Tuple[()]]:
        return (SyncRecord, ())

    def __deepcopy__(self, memo: Dict[int, Any]) -> "SyncRecord":
        """A copy in this process (``clone``) keeps the verified layouts (its groups are the same):
        otherwise a clone made on one rank only would stop speculating there while its twins on the
        other ranks speculate, and two syncs in flight would then issue their collectives in a
        different order on that rank. No sync in flight is copied."""
        twin = SyncRecord()
        twin.verified = dict(self.verified)
        return twin


def _group_key(group: Any) -> Any:
    return "WORLD" if group is None else id(group)


def _deadline(timeout: Any) -> Optional[float]:
    if timeout is None:
        return None
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    return time.monotonic() + seconds


def _timed_out(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "timed out" in text or "timeout" in text


def _wait(work: Any, deadline: Optional[float]) -> None:
    """``work.wait`` bounded by ``deadline`` (``time.monotonic``); None: the group's own timeout."""
    if deadline is None:
        work.wait()
        return
    # A zero timedelta means "no timeout" to c10d: wait at least 1 ms.
    remaining = max(deadline - time.monotonic(), 0.001)
    if work.wait(datetime.timedelta(seconds=remaining)) is False:
        raise RuntimeError("Operation timed out!")


class _Bucket:
    def __init__(self, entries: List[Entry], buffer: Tensor, home: torch.device, op: str) -> None:
        self.entries = entries  # a "min" entry in a "max" bucket travels negated
        self.buffer = buffer
        self.home = home
        self.op = op
        self.work: Any = None

    def start(self, group: Any) -> None:
        self.work = _dist().all_reduce(self.buffer, op=_reduce_op(self.op), group=group, async_op=True)

    def spec(self) -> BucketSpec:
        return (str(self.buffer.dtype), str(self.buffer.device), self.op, self.buffer.numel())


class PendingSync:
    """Collectives in flight; ``wait`` checks the layout, completes them and returns the reduced states."""

    def __init__(self, owner: str, record: SyncRecord, group: Any, layout: Tuple[LayoutEntry, ...],
                 fingerprint: int, buckets: List[_Bucket], check_device: torch.device, verify: bool = True) -> None:
        dist = _dist()
        self.owner = owner
        self.record = record
        self.group = group
        self.layout = layout
        self.fingerprint = fingerprint
        self.buckets = buckets
        self.check_device = check_device
        self.world = dist.get_world_size(group)
        self.cached: Optional[Tuple[int, List[BucketSpec]]] = record.verified.get(_group_key(group))
        self.check_work: Any = None
        self.parts: List[Any] = []  # filled by the owner (see SyncLifecycle.trigger_sync)
        if not verify:
            self.speculated = True  # no layout check (see sync_for_compute): start at once
        else:
            self.speculated = self.cached is not None and self.cached[0] == fingerprint
            row = torch.tensor([fingerprint, int(self.speculated), self.cached[0] if self.cached else 0],
                               dtype=torch.int64, device=check_device)
            self.rows = [torch.empty_like(row) for _ in range(self.world)]
            # The layout check: one tiny all_gather, never an all_reduce (one all_reduce per bucket).
            self.check_work = dist.all_gather(self.rows, row, group=group, async_op=True)
        if self.speculated:
            for bucket in buckets:
                bucket.start(group)

    @property
    def _owner_name(self) -> str:
        return self.owner

    def _timeout_error(self, exc: BaseException, timeout: Any, phase: str) -> TimeoutError:
        return TimeoutError(
            f"syncfree: {self._owner_name} sync timed out after "
            f"{'the process group timeout' if timeout is None else f'{timeout} s'} waiting for {phase} in a "
            f"process group of {self.world} ranks: at least one rank did not call trigger_sync()/sync() "
            f"on this {self._owner_name} (the backend cannot tell which rank; its error: {exc}). Every "
            "rank must sync the same metrics at the same point, even a rank without data. The "
            "unmatched collective stays pending in the process group: re-create the group "
            "(destroy_process_group + init_process_group) before syncing again, or pass a longer "
            "timeout to wait_sync/sync."
        )

    def wait(self, timeout: Any = None) -> Dict[str, Dict[str, Tensor]]:
        """Finish the collectives; return the reduced states by part (label prefix). The owner
        installs them as synced copies (see :meth:`~syncfree.lifecycle.SyncLifecycle.wait_sync`)."""
        deadline = _deadline(timeout)
        if self.check_work is not None:
            self._check_layout(timeout, deadline)
        if not self.speculated:
            for bucket in self.buckets:
                bucket.start(self.group)
        for bucket in self.buckets:
            try:
                _wait(bucket.work, deadline)
            except RuntimeError as exc:
                if _timed_out(exc):
                    raise self._timeout_error(exc, timeout, "the all_reduce of the states") from exc
                raise
        if self.check_work is not None:
            self.record.verified[_group_key(self.group)] = (self.fingerprint, [b.spec() for b in self.buckets])
        return self._install()

    def _check_layout(self, timeout: Any, deadline: Optional[float]) -> None:
        try:
            _wait(self.check_work, deadline)
        except RuntimeError as exc:
            if _timed_out(exc):
                raise self._timeout_error(exc, timeout, "the layout check (the first collective of every sync)") from exc
            raise
        rows: List[Tuple[int, int, int]] = [(int(a), int(b), int(c)) for a, b, c in (r.tolist() for r in self.rows)]
        if any(row[0] != rows[0][0] for row in rows):
            self._mismatch(rows, deadline)

    def _install(self) -> Dict[str, Dict[str, Tensor]]:
        """The reduced states by part (the label prefix of :class:`~syncfree.lifecycle.SyncPart`)."""
        synced: Dict[str, Dict[str, Tensor]] = {}
        for bucket in self.buckets:
            buffer = bucket.buffer
            if buffer.device != bucket.home:
                buffer = buffer.to(bucket.home)
            if bucket.op == "cat":  # one row per rank; a state's rows follow each other
                buffer = buffer.view(self.world, -1)
            offset = 0
            for label, owner, name in bucket.entries:
                state = owner.view.__dict__[name]
                n = state.numel()
                if bucket.op == "cat":
                    shape = (self.world * state.shape[0], *state.shape[1:])
                    synced.setdefault(label[:len(label) - len(name)], {})[name] = buffer[:, offset:offset + n].reshape(shape)
                    offset += n
                    continue
                piece = buffer[offset:offset + n].view(state.shape)
                if owner.reductions[name] != bucket.op:  # a min state in the max bucket
                    piece = piece.neg()
                offset += n
                synced.setdefault(label[:len(label) - len(name)], {})[name] = piece
        return synced

    def _mismatch(self, rows: List[Tuple[int, int, int]], deadline: Optional[float]) -> None:
        """Raise the same RuntimeError on every rank, with details when they can be exchanged safely."""
        hashes = [row[0] for row in rows]
        speculators = [r for r, row in enumerate(rows) if row[1]]
        aligned = True
        note = ""
        if speculators:
            # Ranks that speculated issued the all_reduces of the previously verified layout; the
            # others issue matching dummies so that the group's collectives stay aligned.
            layout = {hashes[r] for r in speculators}
            previous = next(iter(layout))
            aligned = len(layout) == 1 and all(rows[r][2] == previous for r in range(len(rows)) if r not in speculators)
            if aligned:
                try:
                    if not self.speculated:
                        self._start_dummies()
                    for bucket in self.buckets:
                        _wait(bucket.work, deadline)
                except RuntimeError as exc:
                    aligned = False
                    note = f"(Realigning the collectives failed: {exc}.) "
            else:
                note = "Ranks disagree on the previously verified layout. "
            if not aligned:
                note += ("The process group may now hold unmatched all_reduces: re-create it "
                         "(destroy_process_group + init_process_group) before syncing again.")
        layouts = self._gather_layouts(deadline) if aligned else None
        if layouts is not None:
            raise RuntimeError(_describe_mismatch(self._owner_name, layouts))
        raise RuntimeError(_describe_hashes(self._owner_name, hashes, note))

    def _start_dummies(self) -> None:
        assert self.cached is not None
        dummies = []
        for dtype, device, op, numel in self.cached[1]:
            buffer = torch.zeros(numel, dtype=getattr(torch, dtype.split(".")[-1]), device=torch.device(device))
            bucket = _Bucket([], buffer, buffer.device, op)
            bucket.start(self.group)
            dummies.append(bucket)
        self.buckets = dummies

    def _gather_layouts(self, deadline: Optional[float]) -> Optional[List[Any]]:
        """Every rank's full layout (only after a mismatch), bounded by ``deadline``; None on failure."""
        dist = _dist()
        try:
            payload = json.dumps(self.layout).encode()
            size = torch.tensor([len(payload)], dtype=torch.int64, device=self.check_device)
            sizes = [torch.empty_like(size) for _ in range(self.world)]
            _wait(dist.all_gather(sizes, size, group=self.group, async_op=True), deadline)
            lengths = [int(s.tolist()[0]) for s in sizes]
            data = torch.tensor(list(payload) + [0] * (max(lengths) - len(payload)), dtype=torch.uint8)
            data = data.to(self.check_device)
            out = [torch.empty_like(data) for _ in range(self.world)]
            _wait(dist.all_gather(out, data, group=self.group, async_op=True), deadline)
            layouts = []
            for n, t in zip(lengths, out):
                entries = json.loads(bytes(t.cpu().tolist()[:n]).decode())
                layouts.append(tuple((e[0], tuple(e[1]), *e[2:]) for e in entries))
            return layouts
        except Exception:  # noqa: BLE001 - details are a bonus; the mismatch error is raised anyway
            return None


def _bucket_op(op: str, state: Tensor) -> str:
    """The bucket a state travels in: a floating min goes negated into the max bucket."""
    return "max" if op == "min" and state.is_floating_point() else op


def start_sync(owner: str, record: SyncRecord, entries: Sequence[Entry], group: Any = None,
               verify: bool = True) -> Optional[PendingSync]:
    """Snapshot the states into one buffer per (dtype, device, op) bucket and start the layout check.

    The bucket all_reduces start here when the layout is the one verified at the previous sync
    (or ``verify=False``: no layout check), otherwise in ``PendingSync.wait`` after the check.
    """
    if not is_distributed(group):
        for _, states, _ in entries:
            states.synced = {}  # one rank: the local states are the global ones
        return None
    entries = sorted(entries, key=lambda e: e[0])
    layout = layout_fingerprint(entries)
    grouped: Dict[Tuple[str, str, str], List[Entry]] = {}
    for entry in entries:
        state = entry[1].view.__dict__[entry[2]]
        key = (str(state.dtype), str(state.device), _bucket_op(entry[1].reductions[entry[2]], state))
        grouped.setdefault(key, []).append(entry)
    buckets = []
    for (_, _, op), members in grouped.items():
        pieces = []
        for _, states, name in members:
            piece = states.view.__dict__[name].detach().reshape(-1)
            pieces.append(piece.neg() if states.reductions[name] != op else piece)
        flat = torch.cat(pieces)
        if op == "cat":  # this rank's samples at its offset of a zero buffer; the SUM gathers them
            world, rank = _dist().get_world_size(group), _dist().get_rank(group)
            flat = torch.cat([flat.new_zeros(rank * flat.numel()), flat,
                              flat.new_zeros((world - rank - 1) * flat.numel())])
        home = flat.device
        flat = flat.to(transport_device(group, home))
        buckets.append(_Bucket(members, flat, home, op))
    return PendingSync(owner, record, group, layout, layout_hash(layout), buckets,
                       transport_device(group, torch.device("cpu")), verify)


def sync_for_compute(owner: str, record: SyncRecord, entries: Sequence[Entry],
                     group: Any = None) -> Dict[str, Dict[str, Tensor]]:
    """The globally reduced states of ``entries`` by part (label prefix), for ``compute()``; nothing is
    installed ({} when not distributed). No host read: the layout check runs only when its row
    is a host tensor (gloo), the all_reduces run on the states' device."""
    if not is_distributed(group):
        return {}
    verify = transport_device(group, torch.device("cpu")).type == "cpu"
    pending = start_sync(owner, record, entries, group, verify=verify)
    return pending.wait() if pending is not None else {}
