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


# ---- R2Score without num_outputs: the ranks agree on the width the batches gave ----------------
def _r2_batch(rank, cols=3, n=5):
    g = torch.Generator().manual_seed(200 + rank)
    target = torch.randn(n, cols, generator=g)
    return target + torch.randn(n, cols, generator=g), target


def _r2_some_ranks_without_batches(rank, world, explicit):
    calls = _count_all_reduce()
    coll = syncfree.MetricCollection({"r2": syncfree.R2Score(multioutput="raw_values"),
                                      "mse": syncfree.MeanSquaredError()})
    if rank % 2 == 0:  # odd ranks see no batch: they cannot know the width alone
        coll["r2"].update(*_r2_batch(rank))
    if explicit:
        coll.sync()
        first = list(calls)
        coll.sync()
        second = list(calls[len(first):])
        got = coll["r2"].compute() if not coll["r2"].sync_on_compute else None
        calls.clear()
    computed = coll.compute()["r2"].tolist()
    return {"computed": computed, "after_compute": list(calls), "width": coll["r2"].num_outputs,
            "first": first if explicit else None, "second": second if explicit else None,
            "synced": got.tolist() if explicit and got is not None else None}


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("explicit", [False, True])
def test_r2_ranks_without_a_batch_take_the_width_the_others_saw(world, explicit):
    results = _ok(_launch(_r2_some_ranks_without_batches, world, explicit=explicit))
    alone = syncfree.R2Score(multioutput="raw_values")
    for rank in range(0, world, 2):
        alone.update(*_r2_batch(rank))
    want = alone.compute().tolist()
    for r in results.values():
        assert r["width"] == 3
        assert r["computed"] == pytest.approx(want)
    if explicit:
        for r in results.values():  # the agreement (one all_reduce) at the first sync only
            assert len(r["first"]) == len(r["second"]) + 1 and r["first"][0] == ("torch.int64", 2)
            assert r["after_compute"] == r["second"]


def _r2_widths_differ(rank, world):
    r2 = syncfree.R2Score()
    r2.update(*_r2_batch(rank, cols=2 + rank))
    try:
        r2.compute()
    except RuntimeError as exc:
        return str(exc)
    return "no error"


def test_r2_ranks_that_saw_different_widths_all_raise_the_same_error():
    results = _ok(_launch(_r2_widths_differ, 2, pg_timeout=30))
    assert results[0] == results[1]  # every rank raises, none waits in a collective alone
    assert "different ones (2 on one rank, 3 on another)" in results[0] and "num_outputs=" in results[0]


def _r2_no_rank_saw_a_batch(rank, world):
    r2 = syncfree.R2Score()
    first = r2.compute()
    r2.update(*_r2_batch(rank, cols=2)) if rank == 1 else None
    return {"first": first.tolist(), "second": r2.compute().tolist(), "width": r2.num_outputs}


def test_r2_width_is_decided_at_the_first_sync_after_some_rank_saw_a_batch():
    results = _ok(_launch(_r2_no_rank_saw_a_batch, 2))
    alone = syncfree.R2Score()
    alone.update(*_r2_batch(1, cols=2))
    for r in results.values():
        assert r["width"] == 2 and r["second"] == pytest.approx(alone.compute().item())
        assert r["first"] != r["first"]  # NaN: no sample anywhere
