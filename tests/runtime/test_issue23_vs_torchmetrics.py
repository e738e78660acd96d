"""Issue 23 additions equal torchmetrics itself on seeded random batches of uneven sizes (an empty
one among them): the multilabel confusion matrix, and the MetricCollection attributes."""

import pytest
import torch
import torchmetrics
import torchmetrics.classification as tmc
from test_new_metrics_vs_torchmetrics import SEEDS, _close, _ml_batches, _run

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
