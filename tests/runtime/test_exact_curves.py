"""Exact AUROC and average precision (``thresholds=None``, torchmetrics' default): a bounded device
buffer of samples (``capacity=``), parity with torchmetrics itself on random data, no host sync,
overflow reported at the next host read, gathered across gloo ranks."""

import warnings

import pytest
import torch
from test_distributed import _launch, _ok

import syncfree
from syncfree.guard import no_host_sync, stand_in

tmc = pytest.importorskip("torchmetrics.classification")

C = 4
BINARY = ["BinaryAUROC", "BinaryAveragePrecision"]
MULTICLASS = ["MulticlassAUROC", "MulticlassAveragePrecision"]


def _binary_batches(seed, kind, ignore=False, n_batches=4):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        n = int(torch.randint(2, 60, (), generator=g))
        p = torch.rand(n, generator=g) if kind == "prob" else torch.randn(n, generator=g) * 4
        if kind == "ties":
            p = (torch.rand(n, generator=g) * 8).round() / 8
        t = torch.randint(0, 2, (n,), generator=g)
        if ignore:
            t[::2] = -1  # never every sample (torchmetrics fails on an empty curve)
        out.append((p, t))
    return out


def _multiclass_batches(seed, kind, ignore=False, n_batches=4):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        n = int(torch.randint(2, 50, (), generator=g))
        p = torch.randn(n, C, generator=g) * 3 if kind == "logits" else torch.rand(n, C, generator=g)
        if kind == "ties":
            p = (p * 4).round() / 4
        t = torch.randint(0, C, (n,), generator=g)
        if ignore:
            t[::2] = -1
        out.append((p, t))
    return out


def _close(ours, ref):
    a = torch.as_tensor(ours, dtype=torch.float64)
    b = torch.as_tensor(ref, dtype=torch.float64)
    assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5, equal_nan=True), (a, b)


def _parity(ours, ref, batches):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics warns about classes without positives
        for b in batches:
            _close(ours(*b), ref(*b))  # forward: the batch's own value
        _close(ours.compute(), ref.compute())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["prob", "logits", "ties"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_exact_matches_torchmetrics(name, kind, seed):
    ignore = seed % 2 == 1
    kw = {"ignore_index": -1} if ignore else {}
    ours, ref = getattr(syncfree, name)(**kw), getattr(tmc, name)(thresholds=None, **kw)
    assert ours.thresholds is None and ours.capacity == 65536
    _parity(ours, ref, _binary_batches(seed, kind, ignore))


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("kind", ["prob", "logits", "ties"])
@pytest.mark.parametrize("average", ["macro", "weighted", "none"])
@pytest.mark.parametrize("name", MULTICLASS)
def test_multiclass_exact_matches_torchmetrics(name, average, kind, seed):
    ignore = seed == 1
    kw = {"ignore_index": -1} if ignore else {}
    ours = getattr(syncfree, name)(C, average=average, **kw)
    ref = getattr(tmc, name)(C, average=average, thresholds=None, **kw)
    _parity(ours, ref, _multiclass_batches(seed, kind, ignore))


def test_no_positives_match_torchmetrics():
    p, t = torch.rand(20), torch.zeros(20, dtype=torch.long)
    for name in BINARY:
        _parity(getattr(syncfree, name)(), getattr(tmc, name)(thresholds=None), [(p, t)])


def test_a_class_without_positives_matches_torchmetrics():
    p, t = torch.rand(30, C), torch.randint(0, C - 1, (30,))  # class C-1 never a target
    for name in MULTICLASS:
        for average in ("macro", "none"):
            ours = getattr(syncfree, name)(C, average=average)
            ref = getattr(tmc, name)(C, average=average, thresholds=None)
            _parity(ours, ref, [(p, t)])


def test_task_wrappers_default_to_exact_and_take_capacity():
    m = syncfree.AUROC(task="binary", capacity=7)
    assert isinstance(m, syncfree.BinaryAUROC) and m.capacity == 7
    m = syncfree.AveragePrecision(task="multiclass", num_classes=C)
    assert isinstance(m, syncfree.MulticlassAveragePrecision) and m.thresholds is None


def test_overflow_is_nan_and_raises_at_the_next_host_read_naming_capacity_and_thresholds():
    m = syncfree.BinaryAUROC(capacity=10)
    m.update(torch.rand(6), torch.tensor([0, 1] * 3))
    assert syncfree.to_host(m) == pytest.approx(
        tmc.BinaryAUROC()(m.samples[:6, 0], m.samples[:6, 1].long() - 1).item())
    m.update(torch.rand(7), torch.tensor([0, 1] * 3 + [1]))  # 13 > 10: 3 dropped
    assert torch.isnan(m.compute())
    with pytest.raises(ValueError, match=r"BinaryAUROC: 3 sample\(s\) did not fit.*capacity=.*thresholds="):
        syncfree.to_host(m)
    with pytest.raises(ValueError, match="capacity="):
        m.compute(check=True)
    m.reset()
    m.update(torch.rand(4), torch.tensor([0, 1, 1, 0]))
    assert not torch.isnan(m.compute())  # reset empties the buffer and the overflow count


def test_forward_of_a_batch_larger_than_the_buffer_counts_its_overflow():
    m = syncfree.MulticlassAUROC(C, capacity=5)
    p, t = torch.rand(8, C), torch.randint(0, C, (8,))
    assert torch.isnan(m(p, t))  # the batch alone overflows its own buffer
    assert int(m.local_states()["_dropped"]) == int(m.local_states()["_filled"]) - 5


def test_capacity_errors_say_what_to_do():
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        syncfree.BinaryAUROC(capacity=0)
    with pytest.raises(ValueError, match="Drop capacity=, or pass thresholds=None"):
        syncfree.BinaryAUROC(thresholds=10, capacity=100)


def test_overflowing_updates_make_no_host_sync():
    with stand_in() as dev:
        m = syncfree.MulticlassAveragePrecision(C, capacity=16, ignore_index=-1).to(dev)
        batches = [tuple(x.to(dev) for x in b) for b in _multiclass_batches(3, "logits", ignore=True)]
        with no_host_sync() as g:
            for b in batches:
                m.update(*b)
            m(*batches[0])
            value = m.compute()
        assert g.events == [], g.report()
        assert torch.isnan(value.cpu())
        with pytest.raises(ValueError, match="did not fit"):
            syncfree.to_host(m)


def test_checkpoint_round_trip_and_no_merge_across_world_sizes():
    m = syncfree.BinaryAveragePrecision(capacity=300)
    for b in _binary_batches(5, "prob"):
        m.update(*b)
    sd = m.state_dict()
    twin = syncfree.BinaryAveragePrecision(capacity=300)
    twin.load_state_dict(sd)
    assert not torch.isnan(m.compute()) and twin.compute().item() == m.compute().item()
    with pytest.raises(ValueError, match="Resume with the same world size"):
        syncfree.merge_state_dicts([sd, sd])


def test_collection_forward_with_an_exact_member():
    coll = syncfree.MetricCollection({"auroc": syncfree.BinaryAUROC(), "acc": syncfree.BinaryAccuracy()})
    ref = tmc.BinaryAUROC(thresholds=None)
    for p, t in _binary_batches(7, "prob"):
        _close(coll(p, t)["auroc"], ref(p, t))
    _close(coll.compute()["auroc"], ref.compute())


def _multilabel_batches(seed, n_batches=3):
    g = torch.Generator().manual_seed(100 + seed)
    return [(torch.randn(n, C, generator=g) * 2, torch.randint(0, 2, (n, C), generator=g))
            for n in (int(torch.randint(2, 40, (), generator=g)) for _ in range(n_batches))]


def _exact_on_ranks(rank, world):
    out = {}
    for name, batches in (("BinaryAUROC", _binary_batches(rank, "ties")),
                          ("MulticlassAveragePrecision", _multiclass_batches(rank, "logits")),
                          ("MultilabelAUROC", _multilabel_batches(rank))):
        m = getattr(syncfree, name)(C, capacity=300) if name.startswith("Multi") else getattr(syncfree, name)(capacity=300)
        for b in batches:
            m.update(*b)
        computed = m.compute().item()
        m.sync()
        out[name] = (computed, m.states()["samples"].shape[0], syncfree.to_host(m))
    coll = syncfree.MetricCollection({"auroc": syncfree.BinaryAUROC(capacity=300), "acc": syncfree.BinaryAccuracy()})
    for b in _binary_batches(rank, "ties"):
        coll.update(*b)
    out["collection"] = syncfree.to_host(coll)
    return out


def test_exact_curves_gather_every_rank_samples():
    world = 2
    results = _ok(_launch(_exact_on_ranks, world, pg_timeout=20))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {}
        ref = tmc.BinaryAUROC(thresholds=None)
        for rank in range(world):
            for b in _binary_batches(rank, "ties"):
                ref.update(*b)
        want["BinaryAUROC"] = ref.compute().item()
        ref = tmc.MulticlassAveragePrecision(C, thresholds=None)
        for rank in range(world):
            for b in _multiclass_batches(rank, "logits"):
                ref.update(*b)
        want["MulticlassAveragePrecision"] = ref.compute().item()
        ref = tmc.MultilabelAUROC(C, thresholds=None)
        for rank in range(world):
            for b in _multilabel_batches(rank):
                ref.update(*b)
        want["MultilabelAUROC"] = ref.compute().item()
    acc = tmc.BinaryAccuracy()
    for rank in range(world):
        for b in _binary_batches(rank, "ties"):
            acc.update(*b)
    for r in results.values():
        coll = r.pop("collection")
        assert coll["auroc"] == pytest.approx(want["BinaryAUROC"], abs=1e-5), coll
        assert coll["acc"] == pytest.approx(acc.compute().item(), abs=1e-6), coll
        for name, (computed, rows, to_host) in r.items():
            assert computed == pytest.approx(want[name], abs=1e-5), (name, r)
            assert to_host == pytest.approx(want[name], abs=1e-5), (name, r)
            assert rows == world * 300  # the synced copy holds every rank's buffer
