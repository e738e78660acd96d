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


@pytest.mark.parametrize("make", [
    lambda: syncfree.BinaryAccuracy(),
    lambda: syncfree.MulticlassRecall(3),
    lambda: syncfree.MulticlassConfusionMatrix(3),
])
def test_float_target_labels(make):
    with pytest.raises(TypeError, match="target must hold integer class labels"):
        make().update(torch.rand(4), torch.rand(4))


@pytest.mark.parametrize("make,match", [
    (lambda: syncfree.MeanMetric(compute_on_cpu=True), "compute_on_cpu"),
    (lambda: syncfree.MeanMetric(dist_sync_on_step=True), "dist_sync_on_step"),
    (lambda: syncfree.MeanMetric(dist_sync_fn=lambda x: x), "dist_sync_fn"),
    (lambda: syncfree.SumMetric(distributed_available_fn=lambda: True), "distributed_available_fn"),
    (lambda: syncfree.MeanMetric(bogus=1), "unexpected keyword"),
    (lambda: syncfree.BinaryAccuracy(multidim_average="samplewise"), "samplewise"),
    (lambda: syncfree.MulticlassAccuracy(3, multidim_average="samplewise"), "samplewise"),
    (lambda: syncfree.Accuracy(task="multilabel", num_labels=3), "multilabel"),
    (lambda: syncfree.ConfusionMatrix(task="multilabel", num_labels=3), "multilabel"),
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
