"""Metrics in a DDP-wrapped model, and compute() that is global by default (sync_on_compute).

Runs 2 forked gloo processes on the CPU with the harness of ``test_distributed.py``.
"""

import pytest
import syncfree
import torch
from test_distributed import (
    _assert_close,
    _batches,
    _collection,
    _count_all_reduce,
    _expected,
    _launch,
    _ok,
    _update,
)

SAMPLES_PER_STEP = {0: 4, 1: 10}  # 3 steps: 12 samples on rank 0, 30 on rank 1
STEPS = 3


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.seen = syncfree.SumMetric()
        self.acc = syncfree.MulticlassAccuracy(2, average="micro")  # a state group (confusion matrix)

    def forward(self, x, y):
        out = self.lin(x)
        self.seen.update(torch.ones(x.shape[0]))
        self.acc.update(out, y)
        return out


def _ddp_scenario(rank, world):
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(_Model())  # broadcast_buffers=True (the default)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    n = SAMPLES_PER_STEP[rank]
    for _ in range(STEPS):
        x = torch.randn(n, 3)
        y = torch.arange(n) % 2
        loss = model(x, y).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    seen, acc = model.module.seen, model.module.acc
    local = (float(seen.local_states()["sum_value"]), int(acc.local_states()["confmat"].sum()))
    seen.sync()
    acc.sync()
    return {"local": local, "seen": syncfree.to_host(seen), "counted": int(acc.states()["confmat"].sum())}


def test_metric_states_in_a_ddp_model_are_not_broadcast():
    results = _ok(_launch(_ddp_scenario, 2))
    total = STEPS * sum(SAMPLES_PER_STEP.values())  # 42
    for rank, r in results.items():
        assert r["local"] == (STEPS * SAMPLES_PER_STEP[rank],) * 2, (rank, r)
        assert r["seen"] == total, (rank, r)
        assert r["counted"] == total, (rank, r)


def _compute_scenario(rank, world):
    calls = _count_all_reduce()
    out = {}
    m = syncfree.SumMetric()
    m.update(torch.tensor(float(rank + 1)))  # 1.0 on rank 0, 2.0 on rank 1
    out["first"] = float(m.compute())
    out["again"] = float(m.compute())  # not cached: every compute is a collective on every rank
    out["reduces_two_computes"] = len(calls)
    out["local_after"] = float(m.local_states()["sum_value"])
    m.update(torch.tensor(10.0 * (rank + 1)))  # local accumulation goes on from the local state
    out["second"] = float(m.compute())
    out["to_host"] = syncfree.to_host(m)
    local = syncfree.SumMetric(sync_on_compute=False)
    local.update(torch.tensor(float(rank + 1)))
    out["no_sync"] = float(local.compute())
    # A collection: one all_reduce per bucket for every member together, global values.
    c = _collection()
    for b in _batches()[rank::world]:
        _update(c, *b)
    before = len(calls)
    c.compute()
    out["collection_reduces"] = len(calls) - before
    out["collection"] = syncfree.to_host(c)
    # The explicit path still works, and compute after it all_reduces again (no rank may skip it).
    e = syncfree.SumMetric()
    e.update(torch.tensor(float(rank + 1)))
    e.trigger_sync()
    e.wait_sync()
    before = len(calls)
    out["explicit"] = float(e.compute())
    out["explicit_extra_reduces"] = len(calls) - before
    return out


def test_compute_is_global_by_default_and_keeps_local_states():
    results = _ok(_launch(_compute_scenario, 2))
    expected = _expected(_batches())
    for rank, r in results.items():
        assert r["first"] == 3.0 and r["again"] == 3.0, r
        assert r["reduces_two_computes"] == 4, r  # per compute, one per bucket: float sum, int64 sum
        assert r["local_after"] == float(rank + 1), r
        assert r["second"] == 33.0 and r["to_host"] == 33.0, r
        assert r["no_sync"] == float(rank + 1), r
        _assert_close(r["collection"], expected)
        assert r["collection_reduces"] == 3, r  # the whole collection: one per bucket
        assert r["explicit"] == 3.0 and r["explicit_extra_reduces"] == 2, r


def test_compute_without_process_group_is_local():
    m = syncfree.SumMetric()
    m.update(torch.tensor(2.0))
    assert m.compute().item() == 2.0
    assert m.sync_on_compute is True
    assert syncfree.SumMetric(sync_on_compute=False).sync_on_compute is False


def _shared_bucket_scenario(rank, world):
    calls = _count_all_reduce()
    c = syncfree.MetricCollection({"max": syncfree.MaxMetric(), "min": syncfree.MinMetric(),
                                   "sum": syncfree.SumMetric()})
    c.update(torch.tensor([float(rank), -5.0 * rank, 2.0]))
    c.sync()
    return {"values": syncfree.to_host(c), "reduces": len(calls)}


@pytest.mark.parametrize("world", [2])
def test_min_shares_the_max_bucket(world):
    results = _ok(_launch(_shared_bucket_scenario, world))
    for r in results.values():
        assert r["values"] == {"max": 2.0, "min": -5.0, "sum": 0.0 + 0.0 + 2.0 + 1.0 - 5.0 + 2.0}, r
        # float sum, int64 sum, and ONE bucket shared by max and min; twice (sync, then to_host's compute)
        assert r["reduces"] == 6, r
