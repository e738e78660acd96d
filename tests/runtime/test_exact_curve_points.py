"""Exact ROC and precision-recall curves (``thresholds=None``, torchmetrics' default) equal
torchmetrics' on randomized batches, for binary, multiclass (per class, micro, macro) and multilabel
inputs; their compute is the one place that reads the host (the curves' lengths), after reporting
the buffer's overflow and bad targets; every rank's samples make the curve."""

import warnings

import pytest
import torch
from test_distributed import _launch, _ok
from test_exact_curves import C, _binary_batches, _multiclass_batches, _multilabel_batches

import syncfree
from syncfree.guard import no_host_sync, stand_in

tmc = pytest.importorskip("torchmetrics.classification")


def _same(ours, ref):
    if isinstance(ref, (list, tuple)):
        assert isinstance(ours, type(ref)) and len(ours) == len(ref), (ours, ref)
        for a, b in zip(ours, ref):
            _same(a, b)
        return
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, (ours, ref)
    assert torch.allclose(ours, ref, atol=1e-6, equal_nan=True), (ours, ref)


def _parity(ours, ref, batches, forward=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics warns about curves without positives
        for b in batches:
            if forward:
                _same(ours(*b), ref(*b))  # the batch's own curve
            else:
                ours.update(*b)
                ref.update(*b)
        _same(ours.compute(), ref.compute())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["prob", "logits", "ties"])
@pytest.mark.parametrize("name", ["BinaryROC", "BinaryPrecisionRecallCurve"])
def test_binary_exact_curves_match_torchmetrics(name, kind, seed):
    kw = {"ignore_index": -1} if seed % 2 else {}
    _parity(getattr(syncfree, name)(**kw), getattr(tmc, name)(**kw), _binary_batches(seed, kind, bool(kw)))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["prob", "logits", "ties"])
@pytest.mark.parametrize("average", [None, "micro", "macro"])
@pytest.mark.parametrize("name", ["MulticlassROC", "MulticlassPrecisionRecallCurve"])
def test_multiclass_exact_curves_match_torchmetrics(name, average, kind, seed):
    kw = {"ignore_index": -1} if seed % 2 else {}
    ours, ref = getattr(syncfree, name)(C, average=average, **kw), getattr(tmc, name)(C, average=average, **kw)
    # forward compares batch curves; a batch may miss a class (NaN recall, as torchmetrics says)
    _parity(ours, ref, _multiclass_batches(seed, kind, bool(kw)), forward=seed == 0)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", ["MultilabelROC", "MultilabelPrecisionRecallCurve"])
def test_multilabel_exact_curves_match_torchmetrics(name, seed):
    batches = _multilabel_batches(seed)
    kw = {}
    if seed % 2:
        kw = {"ignore_index": -1}
        for _, t in batches:
            t[::3, 1] = -1
    _parity(getattr(syncfree, name)(C, **kw), getattr(tmc, name)(C, **kw), batches)


def test_a_class_without_positives_matches_torchmetrics():
    # class 2 never occurs: recall NaN unless every label is 0, as torchmetrics' exact curve
    preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.6, 0.3, 0.1], [0.1, 0.8, 0.1]])
    for target in (torch.tensor([0, 1, 0, 1]), torch.tensor([0, 0, 0, 0])):
        for name in ("MulticlassPrecisionRecallCurve", "MulticlassROC"):
            _parity(getattr(syncfree, name)(3), getattr(tmc, name)(3), [(preds, target)], forward=False)


def test_task_wrappers_give_exact_curves():
    preds, target = torch.rand(12, C), torch.randint(0, C, (12,))
    ours = syncfree.ROC(task="multiclass", num_classes=C)
    ours.update(preds, target)
    ref = tmc.MulticlassROC(C)
    ref.update(preds, target)
    _same(ours.compute(), ref.compute())
    assert syncfree.PrecisionRecallCurve(task="binary", capacity=10).capacity == 10


def test_overflow_and_bad_targets_raise_at_compute():
    m = syncfree.BinaryROC(capacity=5)
    m.update(torch.rand(8), torch.randint(0, 2, (8,)))
    with pytest.raises(ValueError, match="capacity="):
        m.compute()  # it reads the host anyway: the overflow is said there, not hidden in the curve
    m = syncfree.MulticlassPrecisionRecallCurve(3)
    m.update(torch.rand(4, 3), torch.tensor([0, 1, 5, 2]))
    with pytest.raises(ValueError, match=r"1 target value\(s\) outside"):
        m.compute()
    m = syncfree.MultilabelROC(2, validate_args=False)
    m.update(torch.rand(3, 2), torch.tensor([[0, 1], [2, 1], [1, 0]]))
    with pytest.warns(UserWarning, match="not 0, 1 or ignore_index"):
        fpr, _, _ = m.compute()
    assert isinstance(fpr, list) and len(fpr) == 2


def test_update_and_sync_make_no_host_sync_and_compute_reads_once_per_owner():
    with stand_in() as dev:
        metrics = [syncfree.BinaryROC().to(dev), syncfree.MulticlassPrecisionRecallCurve(C, average="macro").to(dev),
                   syncfree.MultilabelROC(C).to(dev)]
        batches = [[tuple(x.to(dev) for x in b) for b in bs]
                   for bs in (_binary_batches(0, "ties"), _multiclass_batches(0, "logits"), _multilabel_batches(0))]
        with no_host_sync() as g:
            for m, bs in zip(metrics, batches):
                for b in bs:
                    m.update(*b)
                m.sync()
        assert g.events == [], g.report()
        for m in metrics:
            with no_host_sync(mode="record") as g:
                m.compute()
            assert len(g.events) == 1, g.report()  # compute is the one call that reads
        reads, depth = [], []
        real = torch.Tensor.tolist

        def counting(t):  # top-level reads only (the stand-in reads through tolist itself)
            if not depth:
                reads.append(t.numel())
            depth.append(1)
            try:
                return real(t)
            finally:
                depth.pop()

        torch.Tensor.tolist = counting
        try:
            for m in metrics:
                m.compute()
        finally:
            torch.Tensor.tolist = real
        # per metric: the check counters (one read), then every curve's length (one read)
        assert reads == [2, 1, 2, C, 2, C], reads  # (C lengths: one curve per class or label)


def _curves_on_ranks(rank, world):
    out = {}
    for name, batches in (("BinaryROC", _binary_batches(rank, "ties")),
                          ("MulticlassPrecisionRecallCurve", _multiclass_batches(rank, "logits")),
                          ("MultilabelROC", _multilabel_batches(rank))):
        m = getattr(syncfree, name)(C, capacity=300) if name.startswith("Multi") else getattr(syncfree, name)(capacity=300)
        for b in batches:
            m.update(*b)
        out[name] = _flat(syncfree.to_host(m.compute()))
    return out


def _flat(x):
    """Every number of a nested result, in order (lists of per-class curves included)."""
    return [v for item in x for v in _flat(item)] if isinstance(x, (list, tuple)) else [x]


def test_exact_curves_are_made_of_every_rank_samples():
    world = 2
    results = _ok(_launch(_curves_on_ranks, world, pg_timeout=20))
    want = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, batches, kw in (("BinaryROC", _binary_batches, {"kind": "ties"}),
                                  ("MulticlassPrecisionRecallCurve", _multiclass_batches, {"kind": "logits"}),
                                  ("MultilabelROC", _multilabel_batches, {})):
            ref = getattr(tmc, name)(C) if name.startswith("Multi") else getattr(tmc, name)()
            for rank in range(world):
                for b in batches(rank, **kw):
                    ref.update(*b)
            want[name] = _flat(syncfree.to_host(ref.compute()))
    for r in results.values():
        for name, got in r.items():
            assert got == pytest.approx(want[name], abs=1e-5, nan_ok=True), name
