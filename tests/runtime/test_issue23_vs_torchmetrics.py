"""Issue 23 additions equal torchmetrics itself on seeded random batches of uneven sizes (an empty
one among them): the multilabel confusion matrix, binned multiclass AUROC, average precision, ROC
and precision-recall curves and their task wrappers, ``higher_is_better``, ``update_called`` and
``MetricCollection.clone``."""

import pytest
import torch
import torchmetrics
import torchmetrics.classification as tmc
from test_new_metrics_vs_torchmetrics import C, SEEDS, _bin_batches, _close, _mc_batches, _ml_batches, _run

import syncfree

L = 4


@pytest.mark.parametrize("normalize", [None, "none", "true", "pred", "all"])
@pytest.mark.parametrize("kind", ["prob", "logit", "int"])
@pytest.mark.parametrize("extra", [{}, {"threshold": 0.7}, {"ignore_index": -1}, {"ignore_index": 1}])
def test_multilabel_confusion_matrix(normalize, kind, extra):
    ours = syncfree.MultilabelConfusionMatrix(num_labels=L, normalize=normalize, **extra)
    ref = tmc.MultilabelConfusionMatrix(num_labels=L, normalize=normalize, **extra)
    for seed in SEEDS:
        _close(*_run(ours, ref, _ml_batches(seed, kind, extra.get("ignore_index")), forward=seed == 1))
        ours.reset()
        ref.reset()


def test_multilabel_confusion_matrix_extra_dims_and_task_wrapper():
    ours = syncfree.ConfusionMatrix(task="multilabel", num_labels=L)
    ref = torchmetrics.ConfusionMatrix(task="multilabel", num_labels=L)
    assert type(ours).__name__ == type(ref).__name__
    _close(*_run(ours, ref, _ml_batches(2, "logit", extra_dim=True)))


def test_multilabel_confusion_matrix_counts_bad_values():
    m = syncfree.MultilabelConfusionMatrix(num_labels=L)
    m.update(torch.tensor([[0, 1, 0, 1]]), torch.tensor([[0, 1, 2, 1]]))
    with pytest.raises(ValueError, match=r"1 value\(s\) outside \{0, 1\}"):
        syncfree.to_host(m)
    with pytest.raises(ValueError, match="normalize must be one of"):
        syncfree.MultilabelConfusionMatrix(num_labels=L, normalize="rows")


def _tm_class(name):
    for mod in (tmc, torchmetrics.regression, torchmetrics.text, torchmetrics.aggregation, torchmetrics):
        if hasattr(mod, name):
            return getattr(mod, name)
    return None


def test_higher_is_better_equals_torchmetrics_for_every_metric():
    compared = 0
    for name in syncfree.__all__:
        ours = getattr(syncfree, name)
        ref = _tm_class(name)
        if not isinstance(ours, type) or not issubclass(ours, syncfree.Metric) or ref is None:
            continue
        assert ours.higher_is_better == ref.higher_is_better, name
        compared += 1
    assert compared >= 40
    assert syncfree.MulticlassAccuracy(3).higher_is_better is True
    assert syncfree.MeanSquaredError().higher_is_better is False


@pytest.mark.parametrize("seed", SEEDS)
def test_update_called_follows_torchmetrics_through_random_calls(seed):
    g = torch.Generator().manual_seed(seed)
    ours, ref = syncfree.MulticlassAccuracy(3), tmc.MulticlassAccuracy(3)
    assert ours.update_called is ref.update_called is False
    for _ in range(20):
        op = int(torch.randint(0, 3, (1,), generator=g))
        n = int(torch.randint(1, 6, (1,), generator=g))
        batch = (torch.randn(n, 3, generator=g), torch.randint(0, 3, (n,), generator=g))
        if op == 0:
            ours.update(*batch)
            ref.update(*batch)
        elif op == 1:
            ours(*batch)
            ref(*batch)
        else:
            ours.reset()
            ref.reset()
        assert ours.update_called == ref.update_called, op


def _coll(lib):
    classes = tmc if lib is torchmetrics else syncfree
    return lib.MetricCollection({"acc": classes.MulticlassAccuracy(3), "rec": classes.MulticlassRecall(3),
                                 "cm": classes.MulticlassConfusionMatrix(3)}, prefix="train_")


@pytest.mark.parametrize("seed", SEEDS)
def test_collection_clone_with_prefix_equals_torchmetrics(seed):
    g = torch.Generator().manual_seed(seed)

    def batch():
        n = int(torch.randint(1, 9, (1,), generator=g))
        return torch.randn(n, 3, generator=g), torch.randint(0, 3, (n,), generator=g)

    ours, ref = _coll(syncfree), _coll(torchmetrics)
    for _ in range(3):
        b = batch()
        ours.update(*b)
        ref.update(*b)
    ours_val, ref_val = ours.clone(prefix="val_"), ref.clone(prefix="val_")
    ours_pf, ref_pf = ours.clone(postfix="_x"), ref.clone(postfix="_x")
    for _ in range(3):  # the copies go on independently
        b, c = batch(), batch()
        ours.update(*b)
        ref.update(*b)
        ours_val.update(*c)
        ref_val.update(*c)
    for mine, theirs in ((ours, ref), (ours_val, ref_val), (ours_pf, ref_pf)):
        got, want = syncfree.to_host(mine), theirs.compute()
        assert sorted(got) == sorted(want)
        for key in want:
            _close(got[key], want[key])
    assert ours_val.compute_groups == ours.compute_groups
    with pytest.raises(ValueError, match="prefix must be a string"):
        ours.clone(prefix=3)


def _mc_prob_batches(seed):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(n, C, generator=g).softmax(1), torch.randint(0, C, (n,), generator=g)) for n in (7, 0, 13, 1, 32)]


@pytest.mark.parametrize("name", ["MulticlassAUROC", "MulticlassAveragePrecision"])
@pytest.mark.parametrize("average", ["macro", "weighted", "none", None])
@pytest.mark.parametrize("thresholds", [11, [0.9, 0.1, 0.5, 0.3], torch.linspace(0, 1, 50)])
@pytest.mark.parametrize("kind,ignore_index", [("scores", None), ("scores", -1), ("scores", 2), ("multidim", None),
                                               ("prob", None)])
def test_binned_multiclass_curves(name, average, thresholds, kind, ignore_index):
    kwargs = {"num_classes": C, "average": average, "thresholds": thresholds, "ignore_index": ignore_index}
    ours, ref = getattr(syncfree, name)(**kwargs), getattr(tmc, name)(**kwargs)
    for seed in SEEDS:
        batches = _mc_prob_batches(seed) if kind == "prob" else _mc_batches(seed, kind, ignore_index)
        _close(*_run(ours, ref, batches, forward=seed == 1))
        ours.reset()
        ref.reset()


@pytest.mark.parametrize("name", ["MulticlassAUROC", "MulticlassAveragePrecision"])
@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_binned_multiclass_curves_with_absent_classes(name, average):
    """A class never seen as target: AUROC 0 / AP 0 for it, as torchmetrics (and left in the average)."""
    g = torch.Generator().manual_seed(3)
    preds, target = torch.randn(20, C, generator=g), torch.randint(0, 2, (20,), generator=g)
    ours = getattr(syncfree, name)(C, average=average, thresholds=20)
    ref = getattr(tmc, name)(C, average=average, thresholds=20)
    _close(*_run(ours, ref, [(preds, target)]))


def test_binned_multiclass_curves_count_bad_targets_and_need_thresholds():
    m = syncfree.MulticlassAUROC(3, thresholds=5)
    m.update(torch.rand(4, 3), torch.tensor([0, 1, 3, -2]))
    with pytest.raises(ValueError, match=r"MulticlassAUROC: 2 target value\(s\) outside"):
        syncfree.to_host(m)
    with pytest.raises(ValueError, match="capacity= is the sample buffer"):
        syncfree.MulticlassAveragePrecision(3, thresholds=5, capacity=10)
    with pytest.raises(ValueError, match="average must be one of"):
        syncfree.MulticlassAUROC(3, average="micro", thresholds=5)


@pytest.mark.parametrize("name", ["MulticlassROC", "MulticlassPrecisionRecallCurve"])
@pytest.mark.parametrize("thresholds", [11, [0.9, 0.1, 0.5, 0.3], torch.linspace(0, 1, 50)])
@pytest.mark.parametrize("kind,ignore_index", [("scores", None), ("scores", -1), ("scores", 2), ("multidim", None),
                                               ("prob", None)])
@pytest.mark.parametrize("average", [None, "macro"])
def test_binned_multiclass_roc_and_pr_curves(name, thresholds, kind, ignore_index, average):
    """(C, T) rates per class (PR: (C, T + 1)) and the thresholds, as torchmetrics' binned curves;
    with ``macro``, the class curves interpolated onto one grid and averaged."""
    kwargs = {"num_classes": C, "thresholds": thresholds, "ignore_index": ignore_index, "average": average}
    ours, ref = getattr(syncfree, name)(**kwargs), getattr(tmc, name)(**kwargs)
    for seed in SEEDS:
        batches = _mc_prob_batches(seed) if kind == "prob" else _mc_batches(seed, kind, ignore_index)
        _close(*_run(ours, ref, batches, forward=seed == 1))  # shapes too
        ours.reset()
        ref.reset()


@pytest.mark.parametrize("name,functional", [("MulticlassROC", "multiclass_roc"),
                                             ("MulticlassPrecisionRecallCurve", "multiclass_precision_recall_curve")])
@pytest.mark.parametrize("thresholds", [11, [0.9, 0.1, 0.5, 0.3], torch.linspace(0, 1, 50)])
@pytest.mark.parametrize("kind,ignore_index", [("scores", None), ("scores", -1), ("scores", 2), ("multidim", None),
                                               ("prob", None)])
def test_binned_multiclass_micro_curves(name, functional, thresholds, kind, ignore_index):
    """One curve of every (sample, class) entry. torchmetrics' class fails to update with
    ``average="micro"`` and binned thresholds (its state keeps the per-class shape), so the reference
    is its functional form over all the batches at once."""
    kwargs = {"num_classes": C, "thresholds": thresholds, "ignore_index": ignore_index, "average": "micro"}
    ours = getattr(syncfree, name)(**kwargs)
    for seed in SEEDS:
        batches = _mc_prob_batches(seed) if kind == "prob" else _mc_batches(seed, kind, ignore_index)
        for preds, target in batches:
            ours.update(preds, target)
        preds = torch.cat([p for p, _ in batches])
        target = torch.cat([t for _, t in batches])
        want = getattr(torchmetrics.functional.classification, functional)(preds, target, **kwargs)
        _close(syncfree.to_host(ours), want)
        ours.reset()


def test_multiclass_curves_check_average_and_count_bad_targets():
    with pytest.raises(ValueError, match="average must be one of None, 'micro', 'macro'"):
        syncfree.MulticlassPrecisionRecallCurve(3, thresholds=5, average="weighted")
    m = syncfree.MulticlassROC(3, thresholds=5)
    m.update(torch.rand(4, 3), torch.tensor([0, 1, 3, -2]))
    with pytest.raises(ValueError, match=r"MulticlassROC: 2 target value\(s\) outside"):
        syncfree.to_host(m)


def _ml_score_batches(seed, ignore_index):
    """(N, L, 3) scores, probabilities or logits by batch, and 0/1 targets, some ignored."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i, n in enumerate((7, 0, 13, 1, 32)):
        scores = torch.randn(n, L, 3, generator=g)
        preds = scores * 3 if i % 2 else torch.sigmoid(scores)
        target = torch.randint(0, 2, (n, L, 3), generator=g)
        if ignore_index is not None:
            target = torch.where(torch.rand(n, L, 3, generator=g) < 0.2, torch.full_like(target, ignore_index), target)
        out.append((preds, target))
    return out


@pytest.mark.parametrize("name,average", [("MultilabelAUROC", a) for a in ("micro", "macro", "weighted", "none", None)]
                         + [("MultilabelAveragePrecision", a) for a in ("micro", "macro", "weighted", "none", None)]
                         + [("MultilabelROC", "-"), ("MultilabelPrecisionRecallCurve", "-")])
@pytest.mark.parametrize("thresholds", [11, [0.9, 0.1, 0.5, 0.3], torch.linspace(0, 1, 50)])
@pytest.mark.parametrize("ignore_index", [None, -1, 2])
def test_binned_multilabel_curves(name, average, thresholds, ignore_index):
    kwargs = {"num_labels": L, "thresholds": thresholds, "ignore_index": ignore_index}
    if average != "-":
        kwargs["average"] = average
    ours, ref = getattr(syncfree, name)(**kwargs), getattr(tmc, name)(**kwargs)
    for seed in SEEDS:
        _close(*_run(ours, ref, _ml_score_batches(seed, ignore_index), forward=seed == 1))
        ours.reset()
        ref.reset()


@pytest.mark.parametrize("name", ["MultilabelAUROC", "MultilabelAveragePrecision"])
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none", None])
@pytest.mark.parametrize("ignore_index", [None, -1])
def test_exact_multilabel_curves(name, average, ignore_index):
    """thresholds=None (torchmetrics' default): the exact value, from the sample buffer."""
    kwargs = {"num_labels": L, "average": average, "ignore_index": ignore_index}
    ours, ref = getattr(syncfree, name)(**kwargs), getattr(tmc, name)(**kwargs)
    for seed in SEEDS:
        _close(*_run(ours, ref, _ml_score_batches(seed, ignore_index), forward=seed == 1))
        ours.reset()
        ref.reset()


def test_exact_multilabel_overflow_is_reported():
    m = syncfree.MultilabelAUROC(2, capacity=4)
    m.update(torch.rand(6, 2), torch.randint(0, 2, (6, 2)))
    with pytest.raises(ValueError, match="capacity="):
        syncfree.to_host(m)


def test_multilabel_curves_check_average_and_count_bad_targets():
    with pytest.raises(ValueError, match="average must be one of"):
        syncfree.MultilabelAveragePrecision(3, average="samples", thresholds=5)
    m = syncfree.MultilabelROC(2, thresholds=5)
    m.update(torch.rand(3, 2), torch.tensor([[0, 1], [2, 1], [1, -1]]))
    with pytest.raises(ValueError, match=r"MultilabelROC: 2 target value\(s\) not 0, 1 or ignore_index"):
        syncfree.to_host(m)


@pytest.mark.parametrize("name", ["AUROC", "AveragePrecision", "ROC", "PrecisionRecallCurve"])
@pytest.mark.parametrize("task", ["binary", "multiclass", "multilabel"])
def test_curve_task_wrappers(name, task):
    kwargs = {"task": task, "num_classes": C, "num_labels": L, "thresholds": 25, "ignore_index": -1}
    ours, ref = getattr(syncfree, name)(**kwargs), getattr(torchmetrics, name)(**kwargs)
    assert type(ours).__name__ == type(ref).__name__
    if task == "binary":
        batches = _bin_batches(0, "logit", -1)
    elif task == "multiclass":
        batches = _mc_batches(0, "scores", -1)
    else:
        batches = _ml_score_batches(0, -1)
    _close(*_run(ours, ref, batches))


WRAPPERS = ["Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity", "StatScores", "JaccardIndex",
            "ConfusionMatrix", "AUROC", "AveragePrecision", "ROC", "PrecisionRecallCurve"]


@pytest.mark.parametrize("name", WRAPPERS)
def test_task_wrappers_have_torchmetrics_signature_and_build_the_same_class(name):
    """One factory (syncfree.tasks) for every wrapper: torchmetrics' parameters, in its order, with its
    defaults, and the same task class for each task, positional arguments included."""
    import inspect

    ours = inspect.signature(getattr(syncfree, name))
    ref = inspect.signature(getattr(torchmetrics, name).__new__)
    assert [(p.name, p.default) for p in ours.parameters.values()] == [
        (p.name, p.default) for p in ref.parameters.values() if p.name != "cls"]
    curve = name in ("AUROC", "AveragePrecision", "ROC", "PrecisionRecallCurve")
    for task in ("binary", "multiclass", "multilabel"):
        args = (task, 10) if curve else (task,)  # thresholds=10 positionally
        kwargs = {"num_classes": 3, "num_labels": 3}
        built, want = getattr(syncfree, name)(*args, **kwargs), getattr(torchmetrics, name)(*args, **kwargs)
        assert type(built).__name__ == type(want).__name__, task


def test_task_wrapper_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="task must be 'binary', 'multiclass' or 'multilabel'"):
        syncfree.Accuracy(task="multi", num_classes=3)
    with pytest.raises(TypeError, match="Accuracy: "):
        syncfree.Accuracy("multiclass", 0.5, 3, None, "micro", "global", 1, None, True, 7)
    m = syncfree.Accuracy("multiclass", num_classes=3, top_k=None, sync_on_compute=False)
    assert m.top_k == 1 and m.sync_on_compute is False
