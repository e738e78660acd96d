"""Issue 23 under gloo (2-3 forked ranks): a collection's sync layout does not depend on local
history, and a member reset while its collection's sync is in flight stays reset.

Runs forked gloo processes with the harness of ``test_distributed.py``.
"""

import pytest
import torch
from test_distributed import _count_all_reduce, _launch, _ok

import syncfree


def _jac_cm():
    return syncfree.MetricCollection({"jac": syncfree.MulticlassJaccardIndex(num_classes=3),
                                      "cm": syncfree.MulticlassConfusionMatrix(num_classes=3)})


def _batch(rank, n=4):
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(n, 3, generator=g), torch.randint(0, 3, (n,), generator=g)


def _member_alone_on_one_rank(rank, world):
    calls = _count_all_reduce()
    coll = _jac_cm()
    if rank == 1:
        coll["cm"].update(*_batch(rank))
    computed = {k: v.tolist() for k, v in coll.compute().items()}
    on_compute = list(calls)
    coll.sync()
    synced = {k: v.tolist() for k, v in coll.compute().items()}
    return {"computed": computed, "synced": synced, "on_compute": on_compute, "groups": coll.compute_groups}


@pytest.mark.parametrize("world", [2, 3])
def test_member_updated_alone_on_one_rank_syncs_on_every_rank(world):
    results = _ok(_launch(_member_alone_on_one_rank, world))
    cm = syncfree.MulticlassConfusionMatrix(num_classes=3)
    cm.update(*_batch(1))
    want_cm = cm.compute().tolist()
    want_jac = syncfree.MulticlassJaccardIndex(num_classes=3).compute().tolist()
    layouts = {tuple(r["on_compute"]) for r in results.values()}
    assert len(layouts) == 1, layouts  # the same buckets on every rank
    for r in results.values():
        assert r["computed"]["cm"] == want_cm and r["synced"]["cm"] == want_cm
        assert r["computed"]["jac"] == pytest.approx(want_jac, nan_ok=True)
        assert r["synced"]["jac"] == pytest.approx(want_jac, nan_ok=True)


def _updates_differ_by_rank_then_sync(rank, world):
    coll = _jac_cm()
    for i in range(rank + 1):  # members alone on some ranks, together on others
        if (rank + i) % 2:
            coll["jac"].update(*_batch(rank + 10 * i))
        else:
            coll.update(*_batch(rank + 10 * i))
    coll.sync()
    return {k: v.tolist() for k, v in coll.compute().items()}


def test_members_leaving_groups_on_different_ranks_give_global_values():
    world = 3
    results = _ok(_launch(_updates_differ_by_rank_then_sync, world))
    jac = syncfree.MulticlassJaccardIndex(num_classes=3)
    cm = syncfree.MulticlassConfusionMatrix(num_classes=3)
    for rank in range(world):
        for i in range(rank + 1):
            b = _batch(rank + 10 * i)
            jac.update(*b)
            if not (rank + i) % 2:
                cm.update(*b)
    for r in results.values():
        assert r["jac"] == pytest.approx(jac.compute().tolist())
        assert r["cm"] == cm.compute().tolist()


def _reset_during_sync(rank, world):
    coll = syncfree.MetricCollection({"s": syncfree.SumMetric(), "m": syncfree.MeanMetric()})
    coll.update(torch.tensor(5.0))
    coll.trigger_sync()
    coll["s"].reset()
    coll.wait_sync()
    plain = syncfree.SumMetric()
    plain.update(torch.tensor(5.0))
    plain.trigger_sync()
    plain.reset()
    plain.wait_sync()
    return {"member": coll.compute()["s"].item(), "other": coll.compute()["m"].item(), "plain": plain.compute().item()}


def test_member_reset_during_collection_sync_wins():
    results = _ok(_launch(_reset_during_sync, 2))
    for r in results.values():
        assert r == {"member": 0.0, "other": 5.0, "plain": 0.0}


def _reset_grouped_member_during_sync(rank, world):
    coll = syncfree.MetricCollection({"acc": syncfree.MulticlassAccuracy(3), "rec": syncfree.MulticlassRecall(3)})
    coll.update(*_batch(rank))
    coll.trigger_sync()
    coll["acc"].reset()
    coll.wait_sync()
    return {"groups": coll.compute_groups, "acc_updates": coll["acc"].update_count,
            "rec": coll["rec"].compute().item(), "acc": coll["acc"].compute().item()}


def test_grouped_member_reset_during_sync_wins_and_the_rest_is_global():
    results = _ok(_launch(_reset_grouped_member_during_sync, 2))
    rec = syncfree.MulticlassRecall(3)
    for rank in range(2):
        rec.update(*_batch(rank))
    for r in results.values():
        assert r["acc"] == 0.0
        assert r["rec"] == pytest.approx(rec.compute().item())


def test_collection_reset_groups_members_again():
    coll = _jac_cm()
    assert coll.compute_groups == {0: ["jac", "cm"]}
    coll["cm"].update(*_batch(0))
    assert coll.compute_groups == {0: ["jac"], 1: ["cm"]}
    coll.reset()
    assert coll.compute_groups == {0: ["jac", "cm"]}
    coll.update(*_batch(1))
    cm = syncfree.MulticlassConfusionMatrix(num_classes=3)
    cm.update(*_batch(1))
    assert coll.compute()["cm"].tolist() == cm.compute().tolist()


def test_states_pickled_before_per_member_synced_copies_still_load():
    from syncfree.state import MetricState

    m = syncfree.SumMetric()
    m.update(torch.tensor(2.0))
    old = m.state.__getstate__()
    old["synced"] = None  # the earlier layout: one synced copy or None, no reset count
    del old["resets"]
    state = MetricState.__new__(MetricState)
    state.__setstate__(old)
    assert state.synced == {} and state.resets == 0
    assert state.current()["sum_value"].item() == 2.0
    legacy = dict(m.__dict__)
    del legacy["sync_token"]
    twin = syncfree.SumMetric.__new__(syncfree.SumMetric)
    twin.__setstate__(legacy)
    assert twin.sync_token is not m.sync_token and twin.compute().item() == 2.0
