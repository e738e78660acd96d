"""Bad use fails at once, with a message that says what to do."""

import pytest
import torch

import syncfree


@pytest.mark.parametrize("make,args,match", [
    (lambda: syncfree.BinaryAccuracy(), (torch.rand(4), torch.randint(0, 2, (5,))), "same shape"),
    (lambda: syncfree.MulticlassAccuracy(3), (torch.randn(4, 3), torch.randint(0, 3, (5,))), r"\(N, num_classes"),
    (lambda: syncfree.MulticlassAccuracy(3), (torch.randn(4, 2), torch.randint(0, 3, (4,))), r"\(N, num_classes"),
    (lambda: syncfree.MulticlassF1Score(3), (torch.randint(0, 3, (4,)), torch.randint(0, 3, (5,))), "same shape"),
    (lambda: syncfree.MulticlassAccuracy(3, top_k=2), (torch.randint(0, 3, (4,)), torch.randint(0, 3, (4,))), "top_k"),
    (lambda: syncfree.MeanSquaredError(), (torch.randn(4), torch.randn(5)), "same shape"),
    (lambda: syncfree.MeanSquaredError(num_outputs=2), (torch.randn(4, 3), torch.randn(4, 3)), r"\(N, 2\)"),
    (lambda: syncfree.MeanMetric(), (torch.randn(4), torch.randn(3)), "does not broadcast"),
])
def test_shape_mismatch(make, args, match):
    with pytest.raises(ValueError, match=match):
        make().update(*args)


CLASSIFIERS = {
    "BinaryAccuracy": (lambda **kw: syncfree.BinaryAccuracy(**kw), 2, False),
    "BinaryConfusionMatrix": (lambda **kw: syncfree.BinaryConfusionMatrix(**kw), 2, False),
    "MulticlassRecall": (lambda **kw: syncfree.MulticlassRecall(3, **kw), 3, True),
    "MulticlassConfusionMatrix": (lambda **kw: syncfree.MulticlassConfusionMatrix(3, **kw), 3, True),
    "MulticlassAccuracy-many": (lambda **kw: syncfree.MulticlassAccuracy(200, **kw), 200, True),
}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_float_target_labels_are_accepted_like_torchmetrics(name):
    """torchmetrics accepts float targets holding labels (0./1. for binary): so does syncfree."""
    make, c, scores = CLASSIFIERS[name]
    target = torch.tensor([0, 1, 1, 0, 1])
    preds = torch.randn(5, c) if scores else torch.rand(5)
    as_int, as_float = make(), make()
    as_int.update(preds, target)
    as_float.update(preds, target.float())
    assert syncfree.to_host(as_float) == syncfree.to_host(as_int)


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_float_target_values_that_are_not_labels_are_deferred(name):
    """A float target like 0.5 is a value error (torchmetrics finds it with a host sync): counted
    on the device, excluded, and reported by to_host / compute(check=True)."""
    make, c, scores = CLASSIFIERS[name]
    preds = torch.randn(4, c) if scores else torch.rand(4)
    target = torch.tensor([0.0, 1.0, 0.5, float("nan")])
    strict = make()
    strict.update(preds, target)  # no raise here: update never syncs
    with pytest.raises(ValueError, match="2 value"):
        syncfree.to_host(strict)
    with pytest.raises(ValueError, match="2 value"):
        strict.compute(check=True)
    lenient, clean = make(validate_args=False), make()
    lenient.update(preds, target)
    clean.update(preds[:2], target[:2].long())
    with pytest.warns(UserWarning, match="2 value"):
        assert syncfree.to_host(lenient) == syncfree.to_host(clean)


@pytest.mark.parametrize("name", ["MulticlassRecall", "MulticlassConfusionMatrix", "MulticlassAccuracy-many"])
def test_multiclass_float_preds_shaped_like_target_are_labels(name):
    make, _, _ = CLASSIFIERS[name]
    target = torch.tensor([0, 1, 2, 2, 1])
    a, b = make(), make()
    a.update(torch.tensor([0, 1, 1, 2, 0]), target)
    b.update(torch.tensor([0.0, 1.0, 1.0, 2.0, 0.0]), target)
    assert syncfree.to_host(a) == syncfree.to_host(b)


@pytest.mark.parametrize("make,args", [
    (lambda: syncfree.BinaryAccuracy(), (torch.randn(4, dtype=torch.cfloat), torch.randint(0, 2, (4,)))),
    (lambda: syncfree.BinaryConfusionMatrix(), (torch.rand(4), torch.randint(0, 2, (4,)).to(torch.cfloat))),
    (lambda: syncfree.MulticlassF1Score(3), (torch.randn(4, 3, dtype=torch.cfloat), torch.randint(0, 3, (4,)))),
    (lambda: syncfree.MulticlassConfusionMatrix(3), (torch.randint(0, 3, (4,)), torch.randint(0, 3, (4,)).to(torch.cfloat))),
    (lambda: syncfree.MeanSquaredError(), (torch.randn(4, dtype=torch.cfloat), torch.randn(4, dtype=torch.cfloat))),
    (lambda: syncfree.MeanAbsoluteError(), (torch.randn(4), torch.randn(4, dtype=torch.cfloat))),
])
def test_complex_inputs_raise_at_update(make, args):
    with pytest.raises(TypeError, match="complex"):
        make().update(*args)


@pytest.mark.parametrize("make", [lambda: syncfree.MeanSquaredError(), lambda: syncfree.MeanAbsoluteError()])
def test_regression_bool_inputs_raise_at_update_like_torchmetrics(make):
    flags = torch.tensor([True, False, True])
    with pytest.raises(TypeError, match=r"\.float\(\)"):
        make().update(flags, flags)
    m = make()
    m.update(flags, flags.float())  # torchmetrics accepts one bool side; so does syncfree
    assert syncfree.to_host(m) == 0.0


def test_integer_preds_with_a_class_dimension_say_to_pass_float_scores():
    with pytest.raises(ValueError, match="float"):
        syncfree.MulticlassAccuracy(3).update(torch.randint(0, 3, (4, 3)), torch.randint(0, 3, (4,)))


@pytest.mark.parametrize("make,match", [
    (lambda: syncfree.MeanMetric(compute_on_cpu=True), "compute_on_cpu"),
    (lambda: syncfree.MeanMetric(dist_sync_on_step=True), "dist_sync_on_step"),
    (lambda: syncfree.MeanMetric(dist_sync_fn=lambda x: x), "dist_sync_fn"),
    (lambda: syncfree.SumMetric(distributed_available_fn=lambda: True), "distributed_available_fn"),
    (lambda: syncfree.MeanMetric(bogus=1), "unexpected keyword"),
    (lambda: syncfree.BinaryAccuracy(multidim_average="samplewise"), "samplewise"),
    (lambda: syncfree.MulticlassAccuracy(3, multidim_average="samplewise"), "samplewise"),
    (lambda: syncfree.Accuracy(task="multilabel"), "num_labels is required"),
    (lambda: syncfree.ConfusionMatrix(task="multilabel"), "num_labels is required"),
    (lambda: syncfree.MulticlassAccuracy(), "num_classes is required"),
    (lambda: syncfree.Accuracy(task="multiclass"), "num_classes is required"),
])
def test_unsupported_arguments_raise_type_error(make, match):
    with pytest.raises(TypeError, match=match):
        make()


@pytest.mark.parametrize("make", [
    lambda: syncfree.MeanMetric(nan_strategy="bad"),
    lambda: syncfree.MulticlassAccuracy(3, average="median"),
    lambda: syncfree.MulticlassAccuracy(3, top_k=4),
    lambda: syncfree.MulticlassAccuracy(1),
    lambda: syncfree.BinaryF1Score(zero_division=2),
    lambda: syncfree.MulticlassConfusionMatrix(3, normalize="rows"),
    lambda: syncfree.Accuracy(task="regression"),
    lambda: syncfree.MeanSquaredError(num_outputs=0),
])
def test_invalid_values_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_harmless_arguments_are_accepted():
    group = object()
    m = syncfree.MulticlassAccuracy(
        3, validate_args=False, sync_on_compute=False, dist_sync_on_step=False, process_group=group,
        compute_with_cache=False, compute_on_cpu=False, dist_sync_fn=None,
    )
    assert m._default_group is group
    syncfree.MetricCollection([syncfree.MeanMetric()], compute_groups=False, prefix="val_")


def test_positional_order_matches_torchmetrics():
    m = syncfree.MulticlassF1Score(5, 2, "weighted", "global", 3, False, 1)
    assert (m.num_classes, m.top_k, m.average, m.ignore_index, m.validate_args, m.zero_division) == (
        5, 2, "weighted", 3, False, 1.0)
    b = syncfree.BinaryConfusionMatrix(0.3, 2, "true")
    assert (b.threshold, b.ignore_index, b.normalize) == (0.3, 2, "true")
    w = syncfree.Accuracy("multiclass", 0.5, 4, None, "macro", "global", 2)
    assert (w.num_classes, w.average, w.top_k) == (4, "macro", 2)


def test_collection_rejects_duplicates_and_foreign_objects():
    with pytest.raises(ValueError, match="two metrics are named"):
        syncfree.MetricCollection([syncfree.MeanMetric(), syncfree.MeanMetric()])
    with pytest.raises(TypeError, match="not a syncfree metric"):
        syncfree.MetricCollection([object()])
