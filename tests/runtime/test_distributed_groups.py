"""Compute groups under a 2-rank gloo group: every member is global and the group survives the sync.

Runs forked gloo processes with the harness of ``test_distributed.py``.
"""

import syncfree
import torch
from test_distributed import _count_all_reduce, _launch, _ok

C = 6


def _four(compute_groups=True):
    return syncfree.MetricCollection({
        "acc": syncfree.MulticlassAccuracy(C),
        "prec": syncfree.MulticlassPrecision(C, average="none"),
        "rec": syncfree.MulticlassRecall(C, average="weighted"),
        "stats": syncfree.MulticlassStatScores(C, average="micro"),
    }, compute_groups=compute_groups)


def _batches():
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(3 + 4 * i, C, generator=g), torch.randint(0, C, (3 + 4 * i,), generator=g)) for i in range(5)]


def _groups_scenario(rank, world):
    calls = _count_all_reduce()
    c = _four()
    for b in _batches()[rank::world]:  # uneven shards
        c.update(*b)
    computed = syncfree.to_host(c)  # sync_on_compute: one all_reduce of the shared states
    on_compute = list(calls)
    c.sync()
    return {"groups": c.compute_groups, "computed": computed, "synced": syncfree.to_host(c),
            "on_compute": on_compute}


def test_a_compute_group_syncs_in_one_bucket_and_stays_grouped():
    results = _ok(_launch(_groups_scenario, 2))
    alone = _four(compute_groups=False)
    for b in _batches():
        alone.update(*b)
    expected = syncfree.to_host(alone)
    for r in results.values():
        assert r["groups"] == {0: ["acc", "prec", "rec", "stats"]}
        assert r["computed"] == expected and r["synced"] == expected
        # one int64 bucket: the confusion matrix (C * C) and its bad-label bins (2 * C) of every
        # member (issue 23: the layout never depends on the groups, which may differ by rank)
        assert r["on_compute"] == [("torch.int64", 4 * (C * C + 2 * C))]
