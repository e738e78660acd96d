"""The metrics added after the first release equal torchmetrics on seeded random batches of uneven
sizes (an empty one among them): perplexity, R2, MAPE, specificity, F-beta, stat scores, Jaccard,
the multilabel family and the binned binary curves."""

import math
import warnings

import pytest
import torch
import torchmetrics
import torchmetrics.classification as tmc
import torchmetrics.regression as tmr
import torchmetrics.text as tmt

import syncfree

C = 5  # classes
L = 4  # labels
SEEDS = [0, 1, 2]
SIZES = [7, 0, 13, 1, 32]  # uneven, one empty batch, one of a single sample


def _close(ours, ref, tol=1e-5):
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref), (ours, ref)
        for a, b in zip(ours, ref):
            _close(a, b, tol)
        return
    ref = ref.tolist() if isinstance(ref, torch.Tensor) else ref
    a = torch.tensor(ours, dtype=torch.float64)
    b = torch.tensor(ref, dtype=torch.float64)
    assert a.shape == b.shape, (ours, ref)
    assert torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=True), (ours, ref)


def _run(ours, ref, batches, forward=False):
    """Update both with every batch (torchmetrics skips empty ones: some reject them); compare the
    batch values of forward too when asked."""
    for batch in batches:
        empty = batch[-1].numel() == 0
        if forward and not empty:
            _close(syncfree.to_host(ours(*batch)), ref(*batch))
            continue
        ours.update(*batch)
        if not empty:
            ref.update(*batch)
    return syncfree.to_host(ours), ref.compute()


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# ---- perplexity -------------------------------------------------------------------------------
def _lm_batches(seed, vocab=11, ignore_index=None, nan=False):
    g = _gen(seed)
    out = []
    for n in SIZES:
        preds = torch.randn(n, 3, vocab, generator=g) * 2
        target = torch.randint(0, vocab, (n, 3), generator=g)
        if ignore_index is not None and n:
            target[:, 0] = ignore_index
        if nan and n > 5:
            preds[0, 0, 2] = math.nan  # an ignored token when ignore_index is set
        out.append((preds, target))
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ignore_index", [None, -100, 3])
@pytest.mark.parametrize("forward", [False, True])
def test_perplexity(seed, ignore_index, forward):
    ours, ref = syncfree.Perplexity(ignore_index=ignore_index), tmt.Perplexity(ignore_index=ignore_index)
    _close(*_run(ours, ref, _lm_batches(seed, ignore_index=ignore_index), forward), tol=1e-4)


@pytest.mark.parametrize("ignore_index", [None, -100])
def test_perplexity_nan_scores(ignore_index):
    """A NaN score in a counted token makes the result NaN (as torchmetrics); in an ignored one it
    does not count (torchmetrics drops the token too)."""
    ours, ref = syncfree.Perplexity(ignore_index=ignore_index), tmt.Perplexity(ignore_index=ignore_index)
    ours_v, ref_v = _run(ours, ref, _lm_batches(0, ignore_index=ignore_index, nan=True))
    _close(ours_v, ref_v, tol=1e-4)
    assert math.isnan(ours_v) == (ignore_index is None)


def test_perplexity_half_scores_and_bad_targets():
    ours, ref = syncfree.Perplexity(), tmt.Perplexity()
    preds, target = _lm_batches(1)[0]
    ours.update(preds.half(), target)
    ref.update(preds.half().float(), target)
    _close(syncfree.to_host(ours), ref.compute(), tol=1e-3)
    bad = target.clone()
    bad[0, 0], bad[1, 1] = 11, -1  # out of [0, vocab): torchmetrics fails with an index error
    ours.update(preds, bad)
    with pytest.raises(ValueError, match=r"Perplexity: 2 target token\(s\) outside"):
        syncfree.to_host(ours)
    assert ours.count.item() == 2 * target.numel() - 2  # the two bad tokens were not counted


@pytest.mark.parametrize("preds,target,match", [
    (torch.randn(2, 3), torch.zeros(2, 3, dtype=torch.long), "3 dimensions"),
    (torch.randn(2, 3, 4), torch.zeros(2, dtype=torch.long), "2 dimensions"),
    (torch.randn(2, 3, 4), torch.zeros(2, 4, dtype=torch.long), "first two dimensions"),
])
def test_perplexity_shape_errors(preds, target, match):
    with pytest.raises(ValueError, match=match):
        syncfree.Perplexity().update(preds, target)
    with pytest.raises(TypeError, match="int64"):
        syncfree.Perplexity().update(torch.randn(2, 3, 4), torch.zeros(2, 3, dtype=torch.int32))


# ---- regression -------------------------------------------------------------------------------
def _reg_batches(seed, cols=1, dtype=torch.float32, nan=False, sizes=SIZES):
    g = _gen(seed)
    out = []
    for n in sizes:
        shape = (n, cols) if cols > 1 else (n,)
        target = torch.randn(shape, generator=g) * 3 + 1
        preds = target + torch.randn(shape, generator=g)
        if nan and n > 5:
            preds.view(-1)[3] = math.nan
        out.append((preds.to(dtype), target.to(dtype)))
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
@pytest.mark.parametrize("forward", [False, True])
def test_mape(seed, dtype, forward):
    ours, ref = syncfree.MeanAbsolutePercentageError(), tmr.MeanAbsolutePercentageError()
    batches = _reg_batches(seed, dtype=dtype)
    if dtype == torch.int64:
        batches = [(p, torch.where(t == 0, torch.ones_like(t), t)) for p, t in batches]
    ours_v, ref_v = _run(ours, ref, batches, forward and dtype != torch.int64)
    _close(ours_v, ref_v, tol=1e-4)


def test_mape_zero_target_and_nan():
    ours, ref = syncfree.MeanAbsolutePercentageError(), tmr.MeanAbsolutePercentageError()
    preds, target = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 2.0, 1.0])
    _close(*_run(ours, ref, [(preds, target)]), tol=1e-4)  # target 0 -> epsilon, a huge error
    ours, ref = syncfree.MeanAbsolutePercentageError(), tmr.MeanAbsolutePercentageError()
    ours_v, ref_v = _run(ours, ref, _reg_batches(0, nan=True))
    assert math.isnan(ours_v) and math.isnan(ref_v.item())


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("multioutput", ["uniform_average", "raw_values", "variance_weighted"])
@pytest.mark.parametrize("cols", [1, 3])
@pytest.mark.parametrize("adjusted", [0, 2])
@pytest.mark.parametrize("given", [True, False])
def test_r2(seed, multioutput, cols, adjusted, given):
    # given=False: the number of outputs comes from the first batch, as in torchmetrics
    ours = syncfree.R2Score(adjusted=adjusted, multioutput=multioutput, num_outputs=cols if given else None)
    ref = tmr.R2Score(adjusted=adjusted, multioutput=multioutput)
    # the empty batch and the single sample of SIZES would make torchmetrics' forward raise (< 2 samples)
    _close(*_run(ours, ref, _reg_batches(seed, cols)), tol=1e-4)


@pytest.mark.parametrize("seed", SEEDS)
def test_r2_forward_batches(seed):
    ours, ref = syncfree.R2Score(num_outputs=2), tmr.R2Score()
    _close(*_run(ours, ref, _reg_batches(seed, 2, sizes=[5, 9, 3]), forward=True), tol=1e-4)
    ours, ref = syncfree.R2Score(multioutput="raw_values"), tmr.R2Score(multioutput="raw_values")
    _close(*_run(ours, ref, _reg_batches(seed, 3, sizes=[5, 9, 3]), forward=True), tol=1e-4)


def test_r2_constant_target_and_perfect_fit():
    for preds, target in [(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 2.0, 2.0])),
                          (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])),
                          (torch.tensor([2.0, 2.0, 2.0]), torch.tensor([2.0, 2.0, 2.0]))]:
        ours, ref = syncfree.R2Score(), tmr.R2Score()
        _close(*_run(ours, ref, [(preds, target)]))


def test_r2_adjusted_falls_back_like_torchmetrics():
    preds, target = torch.tensor([1.0, 2.5, 2.0, 4.0]), torch.tensor([1.0, 2.0, 3.0, 4.0])
    for adjusted in (3, 5):  # adjusted == n - 1 and adjusted > n - 1: the plain score, with a warning
        ours, ref = syncfree.R2Score(adjusted=adjusted), tmr.R2Score(adjusted=adjusted)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _close(*_run(ours, ref, [(preds, target)]))


def test_r2_fewer_than_two_samples_is_reported_not_synced():
    ours = syncfree.R2Score()
    ours.update(torch.tensor([1.0]), torch.tensor([2.0]))
    assert math.isnan(ours.compute().item())  # no host read in compute
    with pytest.raises(ValueError, match="at least two samples"):
        syncfree.to_host(ours)
    with pytest.raises(ValueError, match="at least two samples"):
        tmr.R2Score()(torch.tensor([1.0]), torch.tensor([2.0]))
    ours.update(torch.tensor([3.0]), torch.tensor([2.5]))
    assert isinstance(syncfree.to_host(ours), float)


def test_r2_takes_its_width_from_the_first_batch_and_keeps_it():
    r2 = syncfree.R2Score(multioutput="raw_values")
    assert r2.num_outputs is None and r2.compute().shape == ()  # nothing seen: NaN, one value
    r2.update(torch.randn(4, 3), torch.randn(4, 3))
    assert r2.num_outputs == 3 and r2.compute().shape == (3,)
    with pytest.raises(ValueError, match=r"has 3 output\(s\)"):
        r2.update(torch.randn(4, 2), torch.randn(4, 2))
    r2.reset()  # the width stays (every rank agreed on it)
    with pytest.raises(ValueError, match=r"has 3 output\(s\)"):
        r2.update(torch.randn(5), torch.randn(5))
    fixed = syncfree.R2Score(num_outputs=2)
    with pytest.raises(ValueError, match=r"has 2 output\(s\)"):
        fixed.update(torch.randn(4, 3), torch.randn(4, 3))
    with pytest.raises(ValueError, match="num_outputs"):
        syncfree.R2Score(num_outputs=0)
    with pytest.raises(ValueError, match="multioutput"):
        syncfree.R2Score(multioutput="median")
    with pytest.raises(ValueError, match="adjusted"):
        syncfree.R2Score(adjusted=-1)


def test_r2_checkpoint_of_an_inferred_width_loads_into_a_fresh_metric():
    preds, target = torch.randn(6, 3), torch.randn(6, 3)
    r2 = syncfree.R2Score(multioutput="raw_values")
    r2.update(preds, target)
    want = r2.compute()
    fresh = syncfree.R2Score(multioutput="raw_values")
    fresh.load_state_dict(r2.state_dict())
    assert fresh.num_outputs == 3 and torch.allclose(fresh.compute(), want)
    fresh.update(preds, target)  # the loaded width is its width
    # as a module's member: the parent's state_dict round trip
    parent, twin = torch.nn.Module(), torch.nn.Module()
    parent.r2, twin.r2 = r2, syncfree.R2Score(multioutput="raw_values")
    r2.persistent(True)
    twin.r2.persistent(True)
    twin.load_state_dict(parent.state_dict())
    assert twin.r2.num_outputs == 3 and torch.allclose(twin.r2.compute(), want)
    # a width the metric was built with must match
    with pytest.raises(ValueError, match="shape"):
        syncfree.R2Score(num_outputs=2).load_state_dict(r2.state_dict())


# ---- binary and multiclass stat scores --------------------------------------------------------
def _bin_batches(seed, kind, ignore_index=None):
    g = _gen(seed)
    out = []
    for n in SIZES:
        if kind == "prob":
            preds = torch.rand(n, 2, generator=g)
        elif kind == "logit":
            preds = torch.randn(n, 2, generator=g) * 3
        else:
            preds = torch.randint(0, 2, (n, 2), generator=g)
        target = torch.randint(0, 2, (n, 2), generator=g)
        if ignore_index is not None and n > 2:
            target[::3, 0] = ignore_index
        out.append((preds, target))
    return out


def _mc_batches(seed, kind, ignore_index=None, num_classes=C):
    g = _gen(seed)
    out = []
    for n in SIZES:
        if kind == "scores":
            preds = torch.randn(n, num_classes, generator=g)
            target = torch.randint(0, num_classes, (n,), generator=g)
        elif kind == "multidim":
            preds = torch.randn(n, num_classes, 3, generator=g)
            target = torch.randint(0, num_classes, (n, 3), generator=g)
        else:
            preds = torch.randint(0, num_classes, (n,), generator=g)
            target = torch.randint(0, num_classes, (n,), generator=g)
        if ignore_index is not None and n > 2:
            target.view(-1)[::4] = ignore_index
        out.append((preds, target))
    return out


BINARY_NEW = [
    ("BinarySpecificity", {}), ("BinaryStatScores", {}), ("BinaryJaccardIndex", {}),
    ("BinaryFBetaScore", {"beta": 0.5}), ("BinaryFBetaScore", {"beta": 2.0}),
    ("BinaryFBetaScore", {"beta": 2.0, "zero_division": 1}), ("BinaryJaccardIndex", {"zero_division": 1}),
]


@pytest.mark.parametrize("name,kwargs", BINARY_NEW)
@pytest.mark.parametrize("kind", ["prob", "logit", "int"])
@pytest.mark.parametrize("extra", [{}, {"threshold": 0.3}, {"ignore_index": 0}, {"ignore_index": -1}])
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_binary_new(name, kwargs, kind, extra, seed):
    kwargs = {**kwargs, **extra}
    ours, ref = getattr(syncfree, name)(**kwargs), getattr(tmc, name)(**kwargs)
    _close(*_run(ours, ref, _bin_batches(seed, kind, kwargs.get("ignore_index")), forward=seed == 1))


def test_binary_all_negative_zero_division():
    preds, target = torch.zeros(6), torch.zeros(6, dtype=torch.long)
    for name, kwargs in BINARY_NEW:
        ours, ref = getattr(syncfree, name)(**kwargs), getattr(tmc, name)(**kwargs)
        _close(*_run(ours, ref, [(preds, target)]))


MC_NEW = [("MulticlassSpecificity", {}), ("MulticlassStatScores", {}), ("MulticlassFBetaScore", {"beta": 0.5}),
          ("MulticlassFBetaScore", {"beta": 2.0, "zero_division": 1})]


@pytest.mark.parametrize("name,kwargs", MC_NEW)
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none", None])
@pytest.mark.parametrize("top_k", [1, 2])
@pytest.mark.parametrize("kind", ["scores", "multidim"])
def test_multiclass_new_scores(name, kwargs, average, top_k, kind):
    ours = getattr(syncfree, name)(num_classes=C, average=average, top_k=top_k, **kwargs)
    ref = getattr(tmc, name)(num_classes=C, average=average, top_k=top_k, **kwargs)
    for seed in SEEDS:
        _close(*_run(ours, ref, _mc_batches(seed, kind), forward=seed == 2))


@pytest.mark.parametrize("name,kwargs", MC_NEW + [("MulticlassJaccardIndex", {}),
                                                  ("MulticlassJaccardIndex", {"zero_division": 1})])
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none"])
@pytest.mark.parametrize("ignore_index", [None, 1, -100])
@pytest.mark.parametrize("kind", ["labels", "scores"])
def test_multiclass_new_ignore_index(name, kwargs, average, ignore_index, kind):
    ours = getattr(syncfree, name)(num_classes=C, average=average, ignore_index=ignore_index, **kwargs)
    ref = getattr(tmc, name)(num_classes=C, average=average, ignore_index=ignore_index, **kwargs)
    for seed in SEEDS:
        _close(*_run(ours, ref, _mc_batches(seed, kind, ignore_index)))


@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none"])
def test_multiclass_jaccard_many_classes(average):
    """Above 128 classes the confusion matrix is updated with masks instead of lookup tables."""
    ours = syncfree.MulticlassJaccardIndex(200, average=average, ignore_index=3)
    ref = tmc.MulticlassJaccardIndex(200, average=average, ignore_index=3)
    _close(*_run(ours, ref, _mc_batches(0, "scores", 3, num_classes=200)))


@pytest.mark.parametrize("name,kwargs", MC_NEW)
def test_multiclass_new_many_classes(name, kwargs):
    """Above 128 classes stat scores keep per-class tp/fp/tn/fn instead of a confusion matrix."""
    ours = getattr(syncfree, name)(num_classes=200, average="macro", **kwargs)
    ref = getattr(tmc, name)(num_classes=200, average="macro", **kwargs)
    _close(*_run(ours, ref, _mc_batches(1, "scores", num_classes=200)))


# ---- multilabel -------------------------------------------------------------------------------
def _ml_batches(seed, kind, ignore_index=None, extra_dim=False):
    g = _gen(seed)
    out = []
    for n in SIZES:
        shape = (n, L, 2) if extra_dim else (n, L)
        if kind == "prob":
            preds = torch.rand(shape, generator=g)
        elif kind == "logit":
            preds = torch.randn(shape, generator=g) * 3
        else:
            preds = torch.randint(0, 2, shape, generator=g)
        target = torch.randint(0, 2, shape, generator=g)
        if n > 3:
            target[:, 3] = 0  # a label that is never positive
            if ignore_index is not None:
                target[1::3, 0] = ignore_index
        out.append((preds, target))
    return out


ML = [("MultilabelAccuracy", {}), ("MultilabelPrecision", {}), ("MultilabelRecall", {}),
      ("MultilabelF1Score", {}), ("MultilabelSpecificity", {}), ("MultilabelStatScores", {}),
      ("MultilabelFBetaScore", {"beta": 2.0}), ("MultilabelJaccardIndex", {}),
      ("MultilabelF1Score", {"zero_division": 1})]


@pytest.mark.parametrize("name,kwargs", ML)
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none", None])
@pytest.mark.parametrize("kind", ["prob", "logit", "int"])
@pytest.mark.parametrize("extra", [{}, {"threshold": 0.7}, {"ignore_index": -1}])
def test_multilabel(name, kwargs, average, kind, extra):
    kwargs = {**kwargs, **extra}
    ours = getattr(syncfree, name)(num_labels=L, average=average, **kwargs)
    ref = getattr(tmc, name)(num_labels=L, average=average, **kwargs)
    for seed in SEEDS[:2]:
        _close(*_run(ours, ref, _ml_batches(seed, kind, kwargs.get("ignore_index")), forward=seed == 1))


@pytest.mark.parametrize("name,kwargs", ML)
@pytest.mark.parametrize("ignore_index", [0, 1, 2])
def test_multilabel_extra_dims_and_ignore_inside_01(name, kwargs, ignore_index):
    """(N, L, ...) inputs; ignore_index 0/1 ignores those targets (and is no label index)."""
    ours = getattr(syncfree, name)(num_labels=L, ignore_index=ignore_index, **kwargs)
    ref = getattr(tmc, name)(num_labels=L, ignore_index=ignore_index, **kwargs)
    _close(*_run(ours, ref, _ml_batches(2, "logit", ignore_index, extra_dim=True)))


@pytest.mark.parametrize("name", ["Accuracy", "Precision", "Recall", "F1Score", "Specificity",
                                  "StatScores", "FBetaScore", "JaccardIndex"])
@pytest.mark.parametrize("task", ["binary", "multiclass", "multilabel"])
def test_task_wrappers_new(name, task):
    kwargs = {"task": task, "num_classes": C, "num_labels": L}
    if name == "FBetaScore":
        kwargs["beta"] = 2.0
    ours, ref = getattr(syncfree, name)(**kwargs), getattr(torchmetrics, name)(**kwargs)
    assert type(ours).__name__ == type(ref).__name__
    batches = {"binary": _bin_batches(0, "logit"), "multiclass": _mc_batches(0, "scores"),
               "multilabel": _ml_batches(0, "prob")}[task]
    _close(*_run(ours, ref, batches))


def test_multilabel_bad_values_are_counted_and_excluded():
    """Targets outside {0, 1} and integer preds outside {0, 1} (torchmetrics raises at update) are
    excluded: equal to torchmetrics with those entries ignored."""
    ours = syncfree.MultilabelAccuracy(L, average="none", validate_args=False)
    ref = tmc.MultilabelAccuracy(L, average="none", ignore_index=99)
    preds, target = _ml_batches(0, "int")[2]
    bad_p = torch.cat([preds, torch.tensor([[2, 0, 1, 0]])])
    bad_t = torch.cat([target, torch.tensor([[1, -1, 0, 1]])])  # 2 bad entries (label 0 and 1), 2 good
    ours.update(bad_p, bad_t)
    ref.update(torch.cat([preds, torch.tensor([[0, 0, 1, 0]])]), torch.cat([target, torch.tensor([[99, 99, 0, 1]])]))
    with pytest.warns(UserWarning, match="2 value"):
        value = syncfree.to_host(ours)
    _close(value, ref.compute())
    strict = syncfree.MultilabelF1Score(L)
    strict.update(torch.rand(2, L), torch.tensor([[0, 1, 2, 0], [1, 1, 0, 0]]))
    with pytest.raises(ValueError, match="MultilabelF1Score: 1 value"):
        syncfree.to_host(strict)
    floats = syncfree.MultilabelRecall(L)
    floats.update(torch.rand(2, L), torch.tensor([[0.0, 1.0, 0.5, 0.0], [1.0, 1.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="MultilabelRecall: 1 value"):
        syncfree.to_host(floats)


# ---- binned curves ----------------------------------------------------------------------------
def _curve_batches(seed, kind, ignore_index=None, nan=False):
    g = _gen(seed)
    out = []
    for n in SIZES:
        target = torch.randint(0, 2, (n, 3), generator=g)
        if kind == "prob":
            preds = (torch.rand(n, 3, generator=g) + 0.3 * target).clamp(0, 1)
        else:
            preds = torch.randn(n, 3, generator=g) + target
        if n > 3:
            preds[0, 0] = 0.5  # exactly on a threshold of linspace(0, 1, 5)
            if nan:
                preds[2, 1] = math.nan
            if ignore_index is not None:
                target[1::2, 2] = ignore_index
                preds[1, 2] = 7.0  # a logit among the ignored entries only: still probabilities
        out.append((preds, target))
    return out


CURVES = ["BinaryROC", "BinaryPrecisionRecallCurve", "BinaryAUROC", "BinaryAveragePrecision"]
THRESHOLDS = [5, 101, [0.0, 0.25, 0.5, 0.75, 1.0], [0.9, 0.1, 0.5, 0.5, 0.3], "tensor64"]


@pytest.mark.parametrize("name", CURVES)
@pytest.mark.parametrize("thresholds", THRESHOLDS, ids=str)
@pytest.mark.parametrize("kind", ["prob", "logit"])
@pytest.mark.parametrize("ignore_index", [None, -1, 0])
def test_binned_curves(name, thresholds, kind, ignore_index):
    if thresholds == "tensor64":
        thresholds = torch.linspace(0, 1, 11, dtype=torch.float64)
    for seed in SEEDS[:2]:
        ours = getattr(syncfree, name)(thresholds=thresholds, ignore_index=ignore_index)
        ref = getattr(tmc, name)(thresholds=thresholds, ignore_index=ignore_index)
        _close(*_run(ours, ref, _curve_batches(seed, kind, ignore_index), forward=seed == 1))


@pytest.mark.parametrize("name", CURVES)
def test_binned_curves_nan_preds_and_one_class_only(name):
    ours, ref = getattr(syncfree, name)(thresholds=7), getattr(tmc, name)(thresholds=7)
    _close(*_run(ours, ref, _curve_batches(0, "prob", nan=True)))
    ours, ref = getattr(syncfree, name)(thresholds=7), getattr(tmc, name)(thresholds=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(*_run(ours, ref, [(torch.rand(9), torch.zeros(9, dtype=torch.long))]))


@pytest.mark.parametrize("name", ["BinaryROC", "BinaryPrecisionRecallCurve"])
def test_curves_without_thresholds_are_exact(name):  # parity: test_exact_curve_points.py
    for metric in (getattr(syncfree, name)(), getattr(syncfree, name)(thresholds=None)):
        assert metric.capacity is not None and metric.thresholds is None


def test_binned_curve_errors():
    with pytest.raises(TypeError, match="max_fpr"):
        syncfree.BinaryAUROC(max_fpr=0.5, thresholds=10)
    with pytest.raises(ValueError, match="larger than 1"):
        syncfree.BinaryROC(thresholds=1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        syncfree.BinaryROC(thresholds=[0.5, 2.0])
    m = syncfree.BinaryAUROC(thresholds=10)
    with pytest.raises(ValueError, match="floating point"):
        m.update(torch.tensor([0, 1]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="integer"):
        m.update(torch.tensor([0.2, 0.9]), torch.tensor([0.0, 1.0]))
    m.update(torch.tensor([0.2, 0.9, 0.4]), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="BinaryAUROC: 1 target value"):
        syncfree.to_host(m)
