"""Issue 23: value errors (labels out of range or fractional, NaN under nan_strategy="error") are
reported wherever the host reads a value anyway, and raise at ``update`` in the eager mode."""

import warnings

import pytest
import torch

import syncfree

BAD = (torch.randn(4, 3), torch.tensor([0, 1, 5, 7]))  # two labels outside [0, 3)
FRACTIONAL = (torch.tensor([0.0, 1.0, 2.0]), torch.tensor([0.0, 1.5, 2.0]))  # integer-valued float preds


def test_to_host_raises_naming_the_metric_and_the_count():
    m = syncfree.MulticlassAccuracy(3)
    m.update(*BAD)
    with pytest.raises(ValueError, match=r"MulticlassAccuracy: 2 value\(s\)"):
        syncfree.to_host(m)


def test_to_host_names_the_collection_member():
    c = syncfree.MetricCollection({"acc": syncfree.MulticlassAccuracy(3), "mean": syncfree.MeanMetric(nan_strategy="error")})
    c["acc"].update(*BAD)
    c["mean"].update(torch.tensor([1.0, float("nan")]))
    with pytest.raises(ValueError, match=r"'acc'.*2 value\(s\).*'mean'.*1 NaN"):
        syncfree.to_host(c)


def test_deferred_by_default_update_and_compute_do_not_raise():
    m = syncfree.MulticlassAccuracy(3)
    m.update(*BAD)
    m.compute()
    assert syncfree.validation_mode() == "deferred"


@pytest.mark.parametrize("make, batch, match", [
    (lambda: syncfree.MulticlassAccuracy(3), BAD, r"MulticlassAccuracy: 2 value\(s\) with a label outside"),
    (lambda: syncfree.MulticlassConfusionMatrix(3), BAD, r"MulticlassConfusionMatrix: 2 value\(s\)"),
    (lambda: syncfree.MulticlassAccuracy(3), FRACTIONAL, r"MulticlassAccuracy: 1 value\(s\)"),
    (lambda: syncfree.MeanMetric(nan_strategy="error"), (torch.tensor([1.0, float("nan")]),), r"MeanMetric: 1 NaN"),
    (lambda: syncfree.MaxMetric(nan_strategy="error"), (torch.tensor([float("nan")]),), r"MaxMetric: 1 NaN"),
])
def test_eager_mode_raises_at_update_and_leaves_the_states(make, batch, match):
    m = make()
    before = {k: v.clone() for k, v in m.local_states().items()}
    with syncfree.validate("eager"):
        assert syncfree.validation_mode() == "eager"
        with pytest.raises(ValueError, match=match):
            m.update(*batch)
        with pytest.raises(ValueError, match=match):
            m(*batch)  # forward
    assert syncfree.validation_mode() == "deferred"
    for k, v in m.local_states().items():
        assert torch.equal(v, before[k]), k
    m.update(*batch)  # deferred again: counted, not raised


def test_eager_mode_as_a_global_switch_and_in_a_collection():
    c = syncfree.MetricCollection({"acc": syncfree.MulticlassAccuracy(3), "rec": syncfree.MulticlassRecall(3)})
    good = (torch.tensor([[2.0, 0, 0], [0, 2, 0], [2, 0, 0], [0, 0, 2]]), torch.tensor([0, 1, 2, 1]))
    syncfree.validate("eager")
    try:
        c.update(*good)  # good data passes
        with pytest.raises(ValueError, match=r"2 value\(s\)"):
            c.update(*BAD)
        with pytest.raises(ValueError, match=r"2 value\(s\)"):
            c(*BAD)
    finally:
        syncfree.validate("deferred")
    # only the good batch was counted: per-class recall 1, 1/2, 0 -> macro accuracy 0.5
    assert syncfree.to_host(c) == {"acc": pytest.approx(0.5), "rec": pytest.approx(0.5)}
    assert c["acc"].update_count == 1


def test_eager_mode_warns_for_warn_policies():
    m = syncfree.MeanMetric()  # nan_strategy="warn"
    with syncfree.validate("eager"), pytest.warns(UserWarning, match="1 NaN"):
        m.update(torch.tensor([1.0, float("nan")]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert syncfree.to_host(m) == 1.0


def test_validate_rejects_unknown_modes():
    with pytest.raises(ValueError, match="'eager' or 'deferred'"):
        syncfree.validate("strict")
