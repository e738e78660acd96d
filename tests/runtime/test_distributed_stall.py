"""No rank can stall: whether a rank enters a collective never depends on its local history.

Under ``sync_on_compute``, ``compute()`` always all_reduces the local states (an explicit ``sync()``
before it does not let it skip the collective); a reset between ``trigger_sync`` and ``wait_sync``
does not drop the sync in flight (its collectives are finished, the reset part stays reset);
``EpochMetrics`` decides which metrics to log from flags every rank agrees on.

Forked gloo ranks (the harness of ``test_distributed.py``) with a 20 s process-group timeout, so a
regression fails fast instead of hanging.
"""

import pickle

import pytest
import torch
from test_distributed import _count_all_reduce, _launch, _ok

import syncfree

PG_TIMEOUT = 20


def _compute_after_sync_and_local_update(rank, world):
    calls = _count_all_reduce()
    m = syncfree.SumMetric()
    m.update(torch.tensor(1.0))
    m.sync()
    if rank == 1:
        m.update(torch.tensor(5.0))  # only here: rank 0 still holds a synced copy
    before = len(calls)
    value = m.compute().item()
    return {"value": value, "reduces": len(calls) - before, "to_host": syncfree.to_host(m)}


def test_compute_after_sync_is_global_on_every_rank():
    results = _ok(_launch(_compute_after_sync_and_local_update, 2, pg_timeout=PG_TIMEOUT))
    for rank, r in results.items():
        assert r["value"] == 7.0 and r["to_host"] == 7.0, (rank, r)
        assert r["reduces"] == 2, (rank, r)  # float sum and int64 sum buckets, on every rank


def _collection_compute_after_sync(rank, world):
    calls = _count_all_reduce()
    coll = syncfree.MetricCollection({"s": syncfree.SumMetric(), "m": syncfree.MaxMetric()})
    coll.update(torch.tensor(float(rank + 1)))
    coll.sync()
    if rank == 0:
        coll["s"].update(torch.tensor(10.0))  # a member alone, on one rank
        coll["m"].update(torch.tensor(100.0))
    before = len(calls)
    values = {k: v.item() for k, v in coll.compute().items()}
    return {"values": values, "reduces": len(calls) - before}


def test_collection_compute_after_sync_is_global_on_every_rank():
    results = _ok(_launch(_collection_compute_after_sync, 2, pg_timeout=PG_TIMEOUT))
    reduces = {r["reduces"] for r in results.values()}
    assert len(reduces) == 1 and reduces.pop() > 0, results
    for r in results.values():
        assert r["values"] == {"s": 13.0, "m": 100.0}, results


def _sync_on_compute_false_reads_the_synced_copy(rank, world):
    calls = _count_all_reduce()
    m = syncfree.SumMetric(sync_on_compute=False)
    m.update(torch.tensor(float(rank + 1)))
    m.sync()
    before = len(calls)
    return {"value": m.compute().item(), "reduces": len(calls) - before}


def test_sync_on_compute_false_compute_reads_the_synced_copy_without_a_collective():
    results = _ok(_launch(_sync_on_compute_false_reads_the_synced_copy, 2, pg_timeout=PG_TIMEOUT))
    for r in results.values():
        assert r == {"value": 3.0, "reduces": 0}


def _reset_on_one_rank_between_trigger_and_wait(rank, world):
    plain = syncfree.SumMetric()
    plain.update(torch.tensor(float(rank + 1)))
    plain.trigger_sync()  # the first sync: its all_reduces are issued by wait_sync
    if rank == 0:
        plain.reset()
    plain.wait_sync()
    coll = syncfree.MetricCollection({"s": syncfree.SumMetric(), "m": syncfree.MeanMetric()})
    coll.update(torch.tensor(float(rank + 1)))
    coll.trigger_sync()
    if rank == 0:
        coll.reset()
    coll.wait_sync()
    member = syncfree.MetricCollection({"s": syncfree.SumMetric(), "m": syncfree.MeanMetric()})
    member.update(torch.tensor(float(rank + 1)))
    member.trigger_sync()
    if rank == 1:
        member["m"].reset()
    member.wait_sync()
    return {"plain": syncfree.to_host(plain), "coll": syncfree.to_host(coll), "member": syncfree.to_host(member)}


def test_reset_on_one_rank_during_a_sync_does_not_stall_the_others():
    results = _ok(_launch(_reset_on_one_rank_between_trigger_and_wait, 2, pg_timeout=PG_TIMEOUT))
    for r in results.values():
        assert r["plain"] == 2.0  # rank 0 reset: rank 1's 2.0 only
        assert r["coll"] == {"s": 2.0, "m": 2.0}
        assert r["member"] == {"s": 3.0, "m": 1.0}  # rank 1's mean was reset: rank 0's 1.0 only


class _LoggingModule(torch.nn.Module):
    """What ``EpochMetrics`` needs of a LightningModule: its metrics and ``log``/``log_dict``."""

    def __init__(self):
        super().__init__()
        self.acc = syncfree.SumMetric()
        self.logged = {}

    def log(self, name, value, **kwargs):
        self.logged[name] = float(value)

    def log_dict(self, values, **kwargs):
        self.logged.update({k: float(v) for k, v in values.items()})


def _epoch_metrics_with_updates_on_one_rank(rank, world):
    from syncfree.lightning import EpochMetrics

    module = _LoggingModule()
    callback = EpochMetrics()
    callback.on_validation_epoch_start(None, module)
    if rank == 1:
        module.acc.update(torch.tensor(4.0))  # rank 0 saw no batch for this metric
    callback.on_validation_epoch_end(None, module)
    return module.logged


def test_epoch_metrics_log_on_every_rank_when_one_rank_saw_no_update():
    pytest.importorskip("lightning")
    results = _ok(_launch(_epoch_metrics_with_updates_on_one_rank, 2, pg_timeout=PG_TIMEOUT))
    for r in results.values():
        assert r == {"acc": 4.0}


def _compute_between_trigger_and_wait_after_one_rank_unpickled(rank, world):
    m = syncfree.SumMetric()
    m.update(torch.tensor(float(rank + 1)))
    m.sync()  # verifies the layout: the next sync speculates (starts its all_reduces at once) ...
    if rank == 1:
        m = pickle.loads(pickle.dumps(m))  # ... except on this rank: an unpickled copy has no verified layout
    m.update(torch.tensor(10.0))
    m.trigger_sync()
    value = m.compute().item()  # collectives between trigger_sync and wait_sync
    m.wait_sync()
    return {"value": value, "after": m.compute().item()}


def test_compute_between_trigger_and_wait_keeps_the_collectives_aligned():
    results = _ok(_launch(_compute_between_trigger_and_wait_after_one_rank_unpickled, 2, pg_timeout=PG_TIMEOUT))
    for r in results.values():
        assert r == {"value": 23.0, "after": 23.0}


def _two_syncs_in_flight_after_one_rank_cloned(rank, world):
    a, b = syncfree.SumMetric(), syncfree.MaxMetric()
    for m in (a, b):
        m.update(torch.tensor(float(rank + 1)))
        m.sync()  # verified: the next syncs speculate (start their all_reduces in trigger_sync)
    if rank == 1:
        a = a.clone()  # a clone keeps what was verified, so it speculates as its twin on rank 0 does
    a.trigger_sync()
    b.trigger_sync()
    a.wait_sync()  # a non-speculating sync would issue its all_reduces here, after b's layout check
    b.wait_sync()
    return {"a": a.compute().item(), "b": b.compute().item()}


def test_two_syncs_in_flight_stay_aligned_when_one_rank_cloned_a_metric():
    results = _ok(_launch(_two_syncs_in_flight_after_one_rank_cloned, 2, pg_timeout=PG_TIMEOUT))
    for r in results.values():
        assert r == {"a": 3.0, "b": 2.0}
