"""The new metrics as states: a 2-process gloo sync equals one process over all the data;
state_dict/load_state_dict and pickle round trips resume exactly."""

import io
import pickle

import pytest
import torch

import syncfree
from test_distributed import _launch, _ok

C, L, V = 4, 3, 9


def _collection():
    return syncfree.MetricCollection({
        "ppl": syncfree.Perplexity(ignore_index=-100),
        "r2": syncfree.R2Score(),
        "mape": syncfree.MeanAbsolutePercentageError(),
        "spec": syncfree.MulticlassSpecificity(C, average="none"),
        "fbeta": syncfree.MulticlassFBetaScore(2.0, C),
        "stats": syncfree.MulticlassStatScores(C, average="micro"),
        "jacc": syncfree.MulticlassJaccardIndex(C, ignore_index=0),
        "ml_f1": syncfree.MultilabelF1Score(L, average="none"),
        "ml_acc": syncfree.Accuracy(task="multilabel", num_labels=L, average="macro"),
        "auroc": syncfree.BinaryAUROC(thresholds=21),
        "ap": syncfree.BinaryAveragePrecision(thresholds=[0.1, 0.5, 0.9]),
        "roc": syncfree.BinaryROC(thresholds=5),
    })


def _batches(n_batches=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n_batches):
        n = 2 + 3 * i  # uneven
        lm_t = torch.randint(0, V, (n, 2), generator=g)
        lm_t[:, 0] = -100
        out.append({
            "lm": (torch.randn(n, 2, V, generator=g), lm_t),
            "reg": (torch.randn(n, generator=g), torch.randn(n, generator=g) + 3),
            "mc": (torch.randn(n, C, generator=g), torch.randint(0, C, (n,), generator=g)),
            "ml": (torch.randn(n, L, generator=g), torch.randint(0, 2, (n, L), generator=g)),
            "bin": (torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g)),
        })
    return out


_INPUT = {"ppl": "lm", "r2": "reg", "mape": "reg", "spec": "mc", "fbeta": "mc", "stats": "mc", "jacc": "mc",
          "ml_f1": "ml", "ml_acc": "ml", "auroc": "bin", "ap": "bin", "roc": "bin"}


def _update(c, batch):
    for name, m in c.items():
        m.update(*batch[_INPUT[name]])


def _expected(batches):
    c = _collection()
    for b in batches:
        _update(c, b)
    return syncfree.to_host(c)


def _flat(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flat(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    return [float(x)]


def _assert_close(got, want, tol=1e-5):
    assert set(got) == set(want)
    a, b = torch.tensor(_flat(got), dtype=torch.float64), torch.tensor(_flat(want), dtype=torch.float64)
    assert a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol), (got, want)


def scenario_new_metrics(rank, world):
    batches = _batches()
    c = _collection()
    for b in batches[rank::world]:
        _update(c, b)
    c.sync()
    synced = syncfree.to_host(c)
    c.unsync()
    for m in c.values():
        m.sync_on_compute = False
    local = syncfree.to_host(c)
    return {"synced": synced, "local": local}


def test_two_process_gloo_sync_of_new_metrics_equals_one_process():
    results = _ok(_launch(scenario_new_metrics, 2))
    expected = _expected(_batches())
    for r in results.values():
        _assert_close(r["synced"], expected)
    # the ranks saw different data: their local values differ from the global one
    assert _flat(results[0]["local"]) != _flat(expected)
    mine = _batches()[0::2]
    _assert_close(results[0]["local"], _expected(mine))


def _roundtrip_torch(sd):
    buffer = io.BytesIO()
    torch.save(sd, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_checkpoint_round_trip_resumes_exactly():
    batches = _batches()
    first = _collection()
    for b in batches[:3]:
        _update(first, b)
    sd = _roundtrip_torch(first.state_dict())
    assert sd["metrics"]["ppl"]["_class"] == "Perplexity"
    assert sd["metrics"]["auroc"]["states"]["counts"].shape == (2, 22)
    resumed = _collection()
    resumed.load_state_dict(sd)
    for b in batches[3:]:
        _update(resumed, b)
    _assert_close(syncfree.to_host(resumed), _expected(batches))


def test_checkpoint_of_other_thresholds_fails_clearly():
    m = syncfree.BinaryROC(thresholds=5)
    m.update(torch.rand(4), torch.randint(0, 2, (4,)))
    other = syncfree.BinaryROC(thresholds=7)
    with pytest.raises(Exception, match="shape"):
        other.load_state_dict(m.state_dict())


def test_pickle_round_trip_keeps_states_bound():
    batches = _batches()
    c = _collection()
    for b in batches[:3]:
        _update(c, b)
    clone = pickle.loads(pickle.dumps(c))
    for b in batches[3:]:
        _update(clone, b)  # updates must land in the states compute reads
    _assert_close(syncfree.to_host(clone), _expected(batches))
    # the original is independent of the clone
    _assert_close(syncfree.to_host(c), _expected(batches[:3]))


@pytest.mark.parametrize("make", [
    lambda: syncfree.Perplexity(), lambda: syncfree.R2Score(num_outputs=2),
    lambda: syncfree.MultilabelStatScores(L), lambda: syncfree.BinaryPrecisionRecallCurve(thresholds=4),
])
def test_reset_returns_to_neutral(make):
    m = make()
    before = {k: v.clone() for k, v in m.local_states().items()}
    g = torch.Generator().manual_seed(3)
    if isinstance(m, syncfree.Perplexity):
        m.update(torch.randn(2, 3, 5, generator=g), torch.randint(0, 5, (2, 3), generator=g))
    elif isinstance(m, syncfree.R2Score):
        m.update(torch.randn(4, 2, generator=g), torch.randn(4, 2, generator=g))
    elif isinstance(m, syncfree.MultilabelStatScores):
        m.update(torch.rand(4, L, generator=g), torch.randint(0, 2, (4, L), generator=g))
    else:
        m.update(torch.rand(4, generator=g), torch.randint(0, 2, (4,), generator=g))
    assert any(not torch.equal(before[k], v) for k, v in m.local_states().items())
    m.reset()
    assert all(torch.equal(before[k], v) for k, v in m.local_states().items())


@pytest.mark.parametrize("num_classes", [10, 1000])
def test_collection_members_share_one_argmax_and_equal_standalone_metrics(num_classes, monkeypatch):
    kw = {"task": "multiclass", "num_classes": num_classes, "average": "macro"}
    names = ["Accuracy", "Precision", "Recall", "F1Score", "Specificity"]
    coll = syncfree.MetricCollection({n: getattr(syncfree, n)(**kw) for n in names})
    alone = {n: getattr(syncfree, n)(**kw) for n in names}
    g = torch.Generator().manual_seed(5)
    batches = [(torch.randn(n, num_classes, generator=g), torch.randint(0, num_classes, (n,), generator=g))
               for n in (9, 30, 4)]
    calls = []
    real = torch.Tensor.argmax
    monkeypatch.setattr(torch.Tensor, "argmax", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    for i, (preds, target) in enumerate(batches):
        if i == 1:
            coll(preds, target)
        else:
            coll.update(preds, target)
        for m in alone.values():
            m.update(preds, target)
    assert len(calls) == len(batches) * (1 + len(names))  # once per collection call, once per standalone metric
    got, want = syncfree.to_host(coll), {n: syncfree.to_host(m) for n, m in alone.items()}
    _assert_close(got, want)
    from syncfree import _labels

    assert _labels._SHARED_ARGMAX is None  # nothing kept after the call
