"""The torchmetrics tables of ``knowledge/metric_api.py`` checked against the real packages: the classes exist, the
runtime map names what ``syncfree`` exports with the arguments it takes, and the classes said to skip input checks
update without a read of the device (the sync guard's CPU stand-in plays the accelerator)."""
from __future__ import annotations

import inspect

import libcst as cst
import pytest

from syncfree_lint.analysis.metric_sites import MetricSite, update_reads
from syncfree_lint.knowledge.metric_api import (
    AGGREGATORS, CLASSIFICATION_BASES, INPUTS_UNCHECKED, RUNTIME_BASE_KWARGS, RUNTIME_CLASS_KWARGS, SYNCFREE,
)

torch = pytest.importorskip("torch")
torchmetrics = pytest.importorskip("torchmetrics")
syncfree = pytest.importorskip("syncfree")


def _site(class_name: str, source: str) -> MetricSite:
    call = cst.parse_expression(source)
    assert isinstance(call, cst.Call)
    return MetricSite(name="m", class_name=class_name, call=call, statement=None)


@pytest.mark.parametrize("name", sorted(AGGREGATORS))
def test_aggregators_are_torchmetrics_aggregation_classes_with_a_nan_strategy(name: str) -> None:
    cls = getattr(torchmetrics.aggregation, name)
    assert issubclass(cls, torchmetrics.Metric)
    assert "nan_strategy" in inspect.signature(cls.__init__).parameters


@pytest.mark.parametrize("base", CLASSIFICATION_BASES)
def test_classification_bases_are_torchmetrics_classes(base: str) -> None:
    assert issubclass(getattr(torchmetrics.classification, base), torchmetrics.Metric)


@pytest.mark.parametrize("name", sorted(INPUTS_UNCHECKED))
def test_unchecked_classes_update_without_a_read_and_are_not_reported(name: str) -> None:
    from syncfree.guard import no_host_sync, stand_in

    metric_type = getattr(torchmetrics.classification, name)
    parent = metric_type.__mro__[1]
    preds, target = torch.rand(16), torch.randint(0, 2, (16,))
    with stand_in() as dev:
        syncs = {}
        for cls in (metric_type, parent):
            metric = cls().to(dev)
            inputs = preds.to(dev), target.to(dev)
            with no_host_sync(device=dev) as guard:
                metric.update(*inputs)
            syncs[cls] = bool(guard.events)
    assert syncs == {metric_type: False, parent: True}  # the parent, left validating, reads the device
    assert update_reads(_site(name, f"{name}()")) is None
    assert update_reads(_site(parent.__name__, f"{parent.__name__}()")) == "validation"


@pytest.mark.parametrize("name", sorted(SYNCFREE))
def test_runtime_map_names_syncfree_exports_with_the_arguments_they_take(name: str) -> None:
    cls = getattr(syncfree, name)
    family = SYNCFREE[name]
    if family == "collection":
        return
    base_values = {"sync_on_compute": True, "compute_with_cache": True, "process_group": None,
                   "dist_sync_on_step": False, "compute_on_cpu": False}
    assert set(base_values) == RUNTIME_BASE_KWARGS
    required = {"task": {"task": "multiclass", "num_classes": 3}, "multiclass": {"num_classes": 3}}.get(family, {})
    cls(**required, **base_values)  # every base argument is accepted
    # an argument of the family that torchmetrics' class takes, syncfree's takes too
    module = next(m for m in (torchmetrics, torchmetrics.classification, torchmetrics.regression) if hasattr(m, name))
    theirs = _parameters(getattr(module, name))
    ours = _parameters(cls) if family != "task" else {p for p, _ in cls.params}
    assert (RUNTIME_CLASS_KWARGS[family] & theirs) - {"task"} <= ours, (RUNTIME_CLASS_KWARGS[family] & theirs) - ours


def _parameters(cls: type) -> set:
    method = cls.__dict__.get("__new__") if "__new__" in cls.__dict__ else cls.__init__
    return set(inspect.signature(method).parameters) - {"self", "cls", "args", "kwargs"}


_CONSTRUCTIONS = [
    "BinaryAccuracy()", "BinaryAccuracy(validate_args=False)", "BinaryF1Score()", "BinaryJaccardIndex(validate_args=False)",
    "BinaryConfusionMatrix(validate_args=False)", "BinaryAveragePrecision()", "BinaryAUROC()",
    "MulticlassAccuracy(num_classes=5)", "MulticlassAccuracy(num_classes=5, validate_args=False)",
    "MulticlassAccuracy(num_classes=5, average='micro')", "MulticlassF1Score(num_classes=5, average=None)",
    "MulticlassPrecision(num_classes=5, average='weighted', validate_args=False)",
    "MulticlassRecall(num_classes=5, average='micro', validate_args=False)",
    "MulticlassConfusionMatrix(num_classes=5, validate_args=False)", "MulticlassCohenKappa(num_classes=5)",
    "MulticlassAUROC(num_classes=5)", "MulticlassAUROC(num_classes=5, validate_args=False)",
    "MultilabelAccuracy(num_labels=3)", "MultilabelAccuracy(num_labels=3, validate_args=False)",
    "MultilabelJaccardIndex(num_labels=3, validate_args=False)",
    "Accuracy(task='multiclass', num_classes=5)", "Accuracy(task='multiclass', num_classes=5, average='micro')",
    "F1Score('binary', validate_args=False)", "Accuracy(task='multiclass', num_classes=5, top_k=2)",
    "MulticlassAccuracy(num_classes=5, top_k=3, average='micro', validate_args=False)",
]


@pytest.mark.parametrize("source,labels", [(source, labels) for source in _CONSTRUCTIONS for labels in (False, True)
                                           if not (labels and ("AUROC" in source or "AveragePrecision" in source or "top_k" in source))])
def test_what_an_update_reads_is_what_the_stand_in_sees(source: str, labels: bool) -> None:
    """``update_reads`` of a construction says whether its update syncs, given float scores or (``labels``) integer
    labels: each answer checked on the sync guard's stand-in against torchmetrics itself."""
    from syncfree.guard import no_host_sync, stand_in

    call = cst.parse_expression(source)
    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
    name = call.func.value
    reads = update_reads(MetricSite(name="m", class_name=name, call=call, statement=None))
    metric_type = getattr(torchmetrics.classification, name, None) or getattr(torchmetrics, name)
    metric = eval(source, {name: metric_type})  # noqa: S307  (our own literal constructions)
    family = "binary" if "Binary" in source or "binary" in source else "multilabel" if "Multilabel" in source \
        else "multiclass"
    if family == "binary":
        preds, target = (torch.randint(0, 2, (16,)) if labels else torch.rand(16)), torch.randint(0, 2, (16,))
    elif family == "multilabel":
        preds, target = (torch.randint(0, 2, (16, 3)) if labels else torch.rand(16, 3)), torch.randint(0, 2, (16, 3))
    else:
        preds = torch.randint(0, 5, (16,)) if labels else torch.randn(16, 5).softmax(-1)
        target = torch.randint(0, 5, (16,))
    with stand_in() as dev:
        metric = metric.to(dev)
        inputs = preds.to(dev), target.to(dev)
        with no_host_sync(device=dev) as guard:
            metric.update(*inputs)
    expected = reads in ("validation", "counting", "top_k") or (reads == "labels" and labels)  # curves take scores only
    assert bool(guard.events) is expected, (reads, guard.report())
