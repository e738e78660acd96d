"""Every syncfree metric equals its torchmetrics namesake on the same (seeded, random) batches."""

import math
import warnings

import pytest
import torch
import torchmetrics
import torchmetrics.classification as tmc

import syncfree

C = 5


def _close(ours, ref, tol=1e-5):
    ref = ref.tolist() if isinstance(ref, torch.Tensor) else ref
    a = torch.tensor(ours, dtype=torch.float64)
    b = torch.tensor(ref, dtype=torch.float64)
    assert a.shape == b.shape, (ours, ref)
    assert torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=True), (ours, ref)


def _batches(kind, dtype=torch.float32, n_batches=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n_batches):
        n = 0 if i == 1 else 6 + 3 * i  # batch 1 is empty
        if kind == "binary_prob":
            out.append((torch.rand(n, 3, generator=g).to(dtype), torch.randint(0, 2, (n, 3), generator=g)))
        elif kind == "binary_logit":
            out.append((torch.randn(n, generator=g).to(dtype), torch.randint(0, 2, (n,), generator=g)))
        elif kind == "binary_int":
            out.append((torch.randint(0, 2, (n,), generator=g), torch.randint(0, 2, (n,), generator=g)))
        elif kind == "mc_scores":
            out.append((torch.randn(n, C, generator=g).to(dtype), torch.randint(0, C, (n,), generator=g)))
        elif kind == "mc_multidim":
            out.append((torch.randn(n, C, 4, generator=g).to(dtype), torch.randint(0, C, (n, 4), generator=g)))
        elif kind == "mc_int":
            out.append((torch.randint(0, C, (n,), generator=g), torch.randint(0, C, (n,), generator=g)))
        else:
            raise AssertionError(kind)
    return out


def _run(ours, ref, batches):
    for preds, target in batches:
        ours.update(preds, target)
        if target.numel():  # some torchmetrics metrics reject empty batches
            ref.update(preds, target)
    return syncfree.to_host(ours), ref.compute()


# ---- classification ------------------------------------------------------------------------
BINARY = ["Accuracy", "Precision", "Recall", "F1Score", "ConfusionMatrix"]
MULTICLASS_STATS = ["Accuracy", "Precision", "Recall", "F1Score"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("kind", ["binary_prob", "binary_logit", "binary_int"])
@pytest.mark.parametrize("kwargs", [{}, {"threshold": 0.3}, {"ignore_index": 0}])
def test_binary(name, kind, kwargs):
    ours = getattr(syncfree, "Binary" + name)(**kwargs)
    ref = getattr(tmc, "Binary" + name)(**kwargs)
    _close(*_run(ours, ref, _batches(kind)))


@pytest.mark.parametrize("name", MULTICLASS_STATS)
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none", None])
@pytest.mark.parametrize("top_k", [1, 2])
@pytest.mark.parametrize("kind", ["mc_scores", "mc_multidim"])
def test_multiclass_scores(name, average, top_k, kind):
    ours = getattr(syncfree, "Multiclass" + name)(C, top_k=top_k, average=average)
    ref = getattr(tmc, "Multiclass" + name)(C, top_k=top_k, average=average)
    _close(*_run(ours, ref, _batches(kind)))


@pytest.mark.parametrize("name", MULTICLASS_STATS)
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none"])
@pytest.mark.parametrize("ignore_index", [None, 1, -100])
def test_multiclass_labels(name, average, ignore_index):
    ours = getattr(syncfree, "Multiclass" + name)(C, average=average, ignore_index=ignore_index)
    ref = getattr(tmc, "Multiclass" + name)(C, average=average, ignore_index=ignore_index)
    batches = _batches("mc_int")
    if ignore_index == -100:
        batches = [(p, torch.where(p == 2, torch.full_like(t, -100), t)) for p, t in batches]
    _close(*_run(ours, ref, batches))


@pytest.mark.parametrize("normalize", [None, "none", "true", "pred", "all"])
@pytest.mark.parametrize("kind", ["mc_scores", "mc_int", "mc_multidim"])
def test_multiclass_confusion_matrix(normalize, kind):
    ours = syncfree.MulticlassConfusionMatrix(C, normalize=normalize)
    ref = tmc.MulticlassConfusionMatrix(C, normalize=normalize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics warns about 0/0 rows
        _close(*_run(ours, ref, _batches(kind)))


@pytest.mark.parametrize("name", ["Accuracy", "Precision", "Recall", "F1Score"])
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_task_wrappers(name, task):
    kwargs = {"task": task} if task == "binary" else {"task": task, "num_classes": C}
    ours = getattr(syncfree, name)(**kwargs)
    ref = getattr(torchmetrics, name)(**kwargs)
    assert type(ours).__name__ == type(ref).__name__
    kind = "binary_logit" if task == "binary" else "mc_scores"
    _close(*_run(ours, ref, _batches(kind)))


def test_confusion_matrix_wrapper():
    assert isinstance(syncfree.ConfusionMatrix(task="binary"), syncfree.BinaryConfusionMatrix)
    m = syncfree.ConfusionMatrix(task="multiclass", num_classes=3, normalize="all")
    assert isinstance(m, syncfree.MulticlassConfusionMatrix) and m.normalize == "all"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", MULTICLASS_STATS)
def test_low_precision_scores(dtype, name):
    ours = getattr(syncfree, "Multiclass" + name)(C, average="macro")
    ref = getattr(tmc, "Multiclass" + name)(C, average="macro")
    _close(*_run(ours, ref, _batches("mc_scores", dtype)))
    ours = getattr(syncfree, "Binary" + name)()
    ref = getattr(tmc, "Binary" + name)()
    _close(*_run(ours, ref, _batches("binary_logit", dtype)))


# ---- labels out of range: reported by to_host, excluded from the counts ----------------------
@pytest.mark.parametrize("name", MULTICLASS_STATS + ["ConfusionMatrix"])
def test_out_of_range_labels_error(name):
    ours = getattr(syncfree, "Multiclass" + name)(C)
    ours.update(torch.tensor([0, 1, 2]), torch.tensor([0, C, -1]))  # torchmetrics raises here
    with pytest.raises(ValueError, match=rf"Multiclass{name}: 2 value\(s\) with a label outside"):
        syncfree.to_host(ours)


@pytest.mark.parametrize("name", MULTICLASS_STATS + ["ConfusionMatrix"])
def test_out_of_range_labels_warn_and_excluded(name):
    ours = getattr(syncfree, "Multiclass" + name)(C, validate_args=False)
    ref = getattr(tmc, "Multiclass" + name)(C)
    preds, target = _batches("mc_int")[2]
    ours.update(torch.cat([preds, torch.tensor([0, 1, 7])]), torch.cat([target, torch.tensor([C, -1, 0])]))
    ref.update(preds, target)
    with pytest.warns(UserWarning, match="3 value"):
        value = syncfree.to_host(ours)
    _close(value, ref.compute())


def test_binary_out_of_range_preds_and_target():
    ours = syncfree.BinaryAccuracy()
    ours.update(torch.tensor([0, 1, 2, 1]), torch.tensor([0, 1, 1, 3]))
    with pytest.raises(ValueError, match="BinaryAccuracy: 2 value"):
        syncfree.to_host(ours)
    assert ours.compute(check=False).item() == 1.0  # the two valid entries are correct


# ---- aggregation -----------------------------------------------------------------------------
AGG = ["MeanMetric", "SumMetric", "MaxMetric", "MinMetric"]


def _values(dtype=torch.float32, nan=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = [torch.randn(7, generator=g), torch.randn(0), torch.randn(3, 2, generator=g), torch.randn(5, generator=g)]
    if nan:
        out[0][2] = math.nan
        out[2][1, 1] = math.nan
    return [v.to(dtype) for v in out] + [2.5]


@pytest.mark.parametrize("name", AGG)
@pytest.mark.parametrize("strategy", ["warn", "ignore", "disable", 0.5, "error"])
@pytest.mark.parametrize("nan", [False, True])
def test_aggregation(name, strategy, nan):
    ours = getattr(syncfree, name)(nan_strategy=strategy)
    ref = getattr(torchmetrics, name)(nan_strategy=strategy)
    values = _values(nan=nan)
    if nan and strategy == "error":
        for v in values:
            ours.update(v)
        with pytest.raises(ValueError, match=rf"{name}: 2 NaN"):
            syncfree.to_host(ours)
        with pytest.raises(RuntimeError):
            ref.update(values[0])
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for v in values:
            ours.update(v)
            ref.update(v)
        caught.clear()
        value = syncfree.to_host(ours)
    _close(value, ref.compute())
    reported = [w for w in caught if "NaN" in str(w.message)]
    assert len(reported) == (1 if nan and strategy == "warn" else 0)


@pytest.mark.parametrize("strategy", ["warn", "ignore", 2.0])
def test_mean_weighted_matches(strategy):
    ours = syncfree.MeanMetric(nan_strategy=strategy)
    ref = torchmetrics.MeanMetric(nan_strategy=strategy)
    g = torch.Generator().manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(3):
            value, weight = torch.randn(6, generator=g), torch.rand(6, generator=g)
            value[i] = math.nan
            weight[i + 2] = math.nan
            ours.update(value, weight)
            ref.update(value, weight)
        ours.update(3.0, 0.5)
        ref.update(3.0, 0.5)
        value = syncfree.to_host(ours)
    _close(value, ref.compute())


@pytest.mark.parametrize("name", AGG)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_aggregation_low_precision(name, dtype):
    ours = getattr(syncfree, name)()
    ref = getattr(torchmetrics, name)()
    for v in _values(dtype):
        ours.update(v)
        ref.update(v.float() if isinstance(v, torch.Tensor) else v)  # both accumulate in float32
    _close(syncfree.to_host(ours), ref.compute())


def test_empty_aggregation_is_neutral():
    assert syncfree.to_host(syncfree.MaxMetric()) == -math.inf
    assert syncfree.to_host(syncfree.MinMetric()) == math.inf
    assert syncfree.to_host(syncfree.SumMetric()) == 0.0
    assert math.isnan(syncfree.to_host(syncfree.MeanMetric()))


# ---- regression ------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs", [
    ("MeanSquaredError", {}),
    ("MeanSquaredError", {"squared": False}),
    ("MeanSquaredError", {"num_outputs": 3}),
    ("MeanAbsoluteError", {}),
    ("MeanAbsoluteError", {"num_outputs": 3}),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64])
def test_regression(name, kwargs, dtype):
    ours = getattr(syncfree, name)(**kwargs)
    ref = getattr(torchmetrics, name)(**kwargs)
    g = torch.Generator().manual_seed(2)
    cols = kwargs.get("num_outputs", 1)
    for n in (5, 0, 9):
        shape = (n, cols) if cols > 1 else (n,)
        preds = (torch.randn(shape, generator=g) * 3).to(dtype)
        target = (torch.randn(shape, generator=g) * 3).to(dtype)
        ours.update(preds, target)
        if n:
            ref.update(preds.float(), target.float())
    _close(syncfree.to_host(ours), ref.compute(), tol=1e-4)


# ---- forward returns the batch value and accumulates -----------------------------------------
@pytest.mark.parametrize("make_ours,make_ref,kind", [
    (lambda: syncfree.MulticlassAccuracy(C), lambda: tmc.MulticlassAccuracy(C), "mc_scores"),
    (lambda: syncfree.BinaryF1Score(), lambda: tmc.BinaryF1Score(), "binary_prob"),
    (lambda: syncfree.MulticlassConfusionMatrix(C), lambda: tmc.MulticlassConfusionMatrix(C), "mc_int"),
])
def test_forward(make_ours, make_ref, kind):
    ours, ref = make_ours(), make_ref()
    for preds, target in _batches(kind):
        if not target.numel():
            continue
        _close(syncfree.to_host(ours(preds, target)), ref(preds, target))
    _close(syncfree.to_host(ours), ref.compute())


def test_forward_aggregation():
    ours, ref = syncfree.MeanMetric(), torchmetrics.MeanMetric()
    for v in _values()[:1] + _values()[2:]:
        _close(syncfree.to_host(ours(v)), ref(v))
    _close(syncfree.to_host(ours), ref.compute())


# ---- ignore_index and the logits/probabilities decision --------------------------------------
@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("preds,target,ignore_index", [
    ([0.3, 2.0], [1, 0], 0),               # the example: only the ignored entry is a logit
    ([0.3, 0.9, -4.0, 0.6], [1, 0, -1, 1], -1),
    ([0.2, 0.7, 5.0, 0.4], [[1, 0], [1, 0]], 1),
    ([1.5, 0.7, 0.1, 0.4], [0, 1, 0, 1], 0),  # the only logit is ignored
    ([1.5, 0.7, 0.1, 0.4], [0, 1, 0, 1], 1),  # a kept logit: sigmoid for every entry
])
def test_binary_ignore_index_decides_logits_like_torchmetrics(name, preds, target, ignore_index):
    target = torch.tensor(target)
    preds = torch.tensor(preds).reshape(target.shape)
    ours = getattr(syncfree, "Binary" + name)(ignore_index=ignore_index)
    ref = getattr(tmc, "Binary" + name)(ignore_index=ignore_index)
    _close(*_run(ours, ref, [(preds, target)]))
