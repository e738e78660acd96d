"""MetricCollection behaves like a dict of metrics updated together."""

import torch
import torchmetrics

import syncfree


def test_dict_like_with_prefix_and_postfix():
    c = syncfree.MetricCollection({"acc": syncfree.MulticlassAccuracy(3), "f1": syncfree.MulticlassF1Score(3)},
                                  prefix="val_", postfix="_x")
    assert c.keys() == ["val_acc_x", "val_f1_x"] and c.keys(keep_base=True) == ["acc", "f1"]
    assert len(c) == 2 and "val_acc_x" in c and "acc" in c
    assert c["acc"] is c["val_acc_x"]
    assert list(c) == c.keys()


def test_names_from_a_list_and_nested_collections():
    inner = syncfree.MetricCollection([syncfree.SumMetric()], prefix="in_")
    c = syncfree.MetricCollection([syncfree.MeanMetric(), inner], syncfree.MaxMetric())
    assert c.keys() == ["MeanMetric", "in_SumMetric", "MaxMetric"]


def test_update_compute_forward_match_torchmetrics():
    ours = syncfree.MetricCollection([syncfree.MulticlassAccuracy(3), syncfree.MulticlassPrecision(3)])
    ref = torchmetrics.MetricCollection([torchmetrics.classification.MulticlassAccuracy(3),
                                         torchmetrics.classification.MulticlassPrecision(3)])
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        preds, target = torch.randn(7, 3, generator=g), torch.randint(0, 3, (7,), generator=g)
        batch_ours, batch_ref = ours(preds, target), ref(preds, target)
        for k in batch_ref:
            assert torch.allclose(batch_ours[k], batch_ref[k])
    final = syncfree.to_host(ours)
    for k, v in ref.compute().items():
        assert abs(final[k] - v.item()) < 1e-6


def test_keyword_arguments_are_filtered_per_member():
    c = syncfree.MetricCollection({"mean": syncfree.MeanMetric(), "sum": syncfree.SumMetric()})
    c.update(torch.tensor([1.0, 3.0]), weight=torch.tensor([1.0, 3.0]))
    assert syncfree.to_host(c) == {"mean": 2.5, "sum": 4.0}


def test_reset_and_to():
    c = syncfree.MetricCollection([syncfree.MeanMetric()])
    c.update(torch.tensor([1.0]))
    c.reset()
    c.to("cpu")
    c.update(torch.tensor([5.0]))
    assert syncfree.to_host(c) == {"MeanMetric": 5.0}


def test_metric_inside_a_module_is_not_in_the_model_state_dict():
    model = torch.nn.Module()
    model.lin = torch.nn.Linear(2, 2)
    model.acc = syncfree.MulticlassAccuracy(3)
    model.metrics = syncfree.MetricCollection([syncfree.MeanMetric()])
    assert set(model.state_dict()) == {"lin.weight", "lin.bias"}
    model.load_state_dict(model.state_dict())
