"""The sync lifecycle shared by :class:`~syncfree.metric.Metric` and :class:`~syncfree.collection.MetricCollection`.

Both are made of *parts*: one :class:`~syncfree.state.MetricState` per metric (a collection's
members; members of a compute group share one). On top of :meth:`SyncLifecycle.sync_parts` this
class gives ``trigger_sync`` (start one bucketed all_reduce per (dtype, op) bucket),
``wait_sync``, ``sync``, ``unsync``, the states ``compute`` reads (global under
``sync_on_compute``), and :meth:`SyncLifecycle.results_and_checks`, what
:func:`syncfree.to_host` reads.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, NamedTuple, Sequence, Tuple

from torch import Tensor

from syncfree.agreement import agree_sizes
from syncfree.distributed import Entry, SyncRecord, is_distributed, start_sync, sync_for_compute
from syncfree.state import MetricState

# (metric name for messages, counter tensor, policy "error" | "warn", message template)
Counter = Tuple[str, Tensor, str, str]


class SyncPart(NamedTuple):
    """One metric's states within an owner: ``prefix`` makes its state labels unique in the owner."""

    prefix: str
    state: MetricState
    sync_on_compute: bool
    holder: Any  # the metric's sync_token: names its synced copy in the (maybe shared) states


class SyncLifecycle:
    """``trigger_sync``/``wait_sync``/``sync``/``unsync`` and the states ``compute`` reads."""

    _default_group: Any
    _sync_record: SyncRecord

    # ---- what an owner provides ------------------------------------------------------------
    def sync_parts(self) -> List[SyncPart]:
        """Every metric's states in this owner, in a fixed order."""
        raise NotImplementedError

    def _sub_owners(self) -> Sequence["SyncLifecycle"]:
        """Owners whose own pending syncs ``wait_sync`` also finishes (a collection's members)."""
        return ()

    def _results(self, states: List[Mapping[str, Tensor]]) -> Any:
        """The result of ``compute`` from the states of every part (in ``sync_parts`` order)."""
        raise NotImplementedError

    def _counters(self, states: List[Mapping[str, Tensor]]) -> List[Counter]:
        """The check counters of every part, read from ``states``."""
        raise NotImplementedError

    # ---- the lifecycle ---------------------------------------------------------------------
    @property
    def process_group(self) -> Any:
        """The process group syncs use when none is given (torchmetrics' ``process_group``)."""
        return self._default_group

    def _member_metrics(self) -> Sequence[Any]:
        """The metrics of this owner: the metric itself (a collection: its members)."""
        return (self,)

    def _agree_sizes(self, group: Any) -> None:
        """Before a collective: ranks agree on state sizes learned from batches (:mod:`syncfree.agreement`)."""
        if is_distributed(group):
            agree_sizes(type(self).__name__, self._member_metrics(), group)

    def _entries(self, parts: Sequence[SyncPart]) -> List[Entry]:
        return [(part.prefix + name, part.state, name) for part in parts for name in part.state.reductions]

    def trigger_sync(self, group: Any = None) -> None:
        """Start the all_reduce of every state, one per (dtype, reduce op) bucket (``async_op=True``)."""
        group = group if group is not None else self._default_group
        self._agree_sizes(group)
        parts = self.sync_parts()
        pending = start_sync(type(self).__name__, self._sync_record, self._entries(parts), group)
        if pending is not None:
            # Which states each part held, and their reset count, when the snapshot was taken.
            pending.parts = [(part, part.state.resets) for part in parts]
        self._sync_record.pending = pending

    def wait_sync(self, timeout: Any = None) -> None:
        """Finish a started sync; afterwards the synced copy holds the global states.

        A part reset after ``trigger_sync`` (the metric itself, or a collection's member on its own)
        stays reset: the reset wins over the sync in flight, as for a plain metric. The reset never
        drops the sync in flight: its collectives are finished here as on every other rank (a
        dropped one would leave the other ranks waiting in an all_reduce this rank never makes).
        """
        pending, self._sync_record.pending = self._sync_record.pending, None
        if pending is not None:
            self._install_synced(pending.parts, pending.wait(timeout))
        for sub in self._sub_owners():
            sub.wait_sync(timeout)

    def _install_synced(self, snapshot: Sequence[Tuple[SyncPart, int]],
                        reduced: Mapping[str, Dict[str, Tensor]]) -> None:
        """Store every part's reduced states as its holder's synced copy, unless the part was reset
        (or left its compute group by a reset) since ``trigger_sync``: the reset wins."""
        current = {part.prefix: part.state for part in self.sync_parts()}
        for part, resets in snapshot:
            state = part.state
            if current.get(part.prefix) is state and state.resets == resets and part.prefix in reduced:
                state.synced[part.holder] = reduced[part.prefix]

    def sync(self, group: Any = None, timeout: Any = None) -> None:
        """``trigger_sync`` then ``wait_sync``."""
        self.trigger_sync(group)
        self.wait_sync(timeout)

    def unsync(self) -> None:
        """Drop the synced copies: ``compute`` returns this rank's local values again."""
        for part in self.sync_parts():
            part.state.synced.pop(part.holder, None)

    def states_for_compute(self) -> List[Mapping[str, Tensor]]:
        """The states ``compute`` reads, per part: for parts with ``sync_on_compute`` under a process
        group of several ranks, an all_reduce of the LOCAL states made now (one per bucket for the
        whole owner, on the device, not stored); else the synced copy when current, else the local
        states.

        No rank can stall: whether a rank enters the collective depends only on what every rank
        agrees on (``sync_on_compute``, the process group), never on local history. A synced copy
        from an explicit ``sync()`` does not let ``compute`` skip the collective: another rank may
        have updated (and dropped its copy) since, and would wait in an all_reduce this rank never
        makes. The price: one extra collective per bucket when ``compute`` follows ``sync()``.

        A sync in flight (``trigger_sync`` without ``wait_sync`` yet) is finished first, so every
        rank issues its collectives in the same order: whether a sync started its all_reduces at
        ``trigger_sync`` (speculation) depends on this object's history (a clone has no verified
        layout), and ``compute``'s own collectives must not interleave with them differently on
        different ranks. (Under NCCL that wait reads the layout check to the host, as ``wait_sync``
        does; with no sync in flight ``compute`` reads nothing.)
        """
        self.wait_sync()
        parts = self.sync_parts()
        todo = [part for part in parts if part.sync_on_compute]
        reduced: Dict[str, Dict[str, Tensor]] = {}
        if todo:
            self._agree_sizes(self._default_group)  # may reshape states in place (same objects)
            reduced = sync_for_compute(type(self).__name__, self._sync_record, self._entries(todo),
                                       self._default_group)
        out: List[Mapping[str, Tensor]] = []
        for part in parts:
            got = reduced.get(part.prefix)
            out.append(got if got is not None else part.state.current(part.holder))
        return out

    def results_and_checks(self) -> Tuple[Any, List[Counter]]:
        """What ``to_host`` reads: the results as ``compute`` gives them, and the check counters of
        the same states (pending syncs are finished first, by ``states_for_compute``)."""
        states = self.states_for_compute()
        return self._results(states), self._counters(states)
