"""MetricCollection compute groups: members that fill their states alike share them, values unchanged."""
import copy
import pickle

import pytest
import torch
import torchmetrics

import syncfree
from syncfree.classification import _MulticlassStatScores


def _four(lib, num_classes, average="macro"):
    kw = {"task": "multiclass", "num_classes": num_classes, "average": average}
    return lib.MetricCollection([lib.Accuracy(**kw), lib.Precision(**kw), lib.Recall(**kw), lib.F1Score(**kw)])


def _close(ours, ref):
    assert set(ours) == set(ref)
    for k, v in ref.items():
        assert ours[k] == pytest.approx(v.tolist(), abs=1e-6), k


@pytest.mark.parametrize("num_classes", [10, 1000])
@pytest.mark.parametrize("average", ["macro", "micro", "weighted", "none"])
def test_acc_prec_rec_f1_share_one_state_and_equal_torchmetrics(num_classes, average):
    ours, ref = _four(syncfree, num_classes, average), _four(torchmetrics, num_classes, average)
    assert ours.compute_groups == {0: ["MulticlassAccuracy", "MulticlassPrecision", "MulticlassRecall",
                                       "MulticlassF1Score"]}
    states = {id(m.state) for m in ours.values()}
    assert len(states) == 1
    g = torch.Generator().manual_seed(num_classes)
    for step in range(6):
        n = int(torch.randint(1, 300, (), generator=g))
        preds = torch.randn(n, num_classes, generator=g)
        target = torch.randint(0, num_classes, (n,), generator=g)
        if step % 2:
            _close(syncfree.to_host(ours(preds, target)), ref(preds, target))
        else:
            ours.update(preds, target)
            ref.update(preds, target)
    _close(syncfree.to_host(ours), ref.compute())
    ours.reset()
    ref.reset()
    preds, target = torch.randn(5, num_classes, generator=g), torch.randint(0, num_classes, (5,), generator=g)
    ours.update(preds, target)
    ref.update(preds, target)
    _close(syncfree.to_host(ours), ref.compute())


def test_a_group_is_updated_once_per_update(monkeypatch):
    calls = []
    original = _MulticlassStatScores._accumulate

    def counting(self, S, preds, target):
        calls.append(type(self).__name__)
        original(self, S, preds, target)

    monkeypatch.setattr(_MulticlassStatScores, "_accumulate", counting)
    c = _four(syncfree, 1000)
    preds, target = torch.randn(8, 1000), torch.randint(0, 1000, (8,))
    c.update(preds, target)
    assert calls == ["MulticlassAccuracy"]
    c(preds, target)
    assert calls == ["MulticlassAccuracy", "MulticlassAccuracy"]
    assert syncfree.to_host(c["MulticlassRecall"].state.local()["tp"]) == syncfree.to_host(
        c["MulticlassAccuracy"].local_states()["tp"])
    assert all(m.update_count == 2 for m in c.values())


def test_members_with_other_update_arguments_keep_their_own_states():
    c = syncfree.MetricCollection({
        "acc": syncfree.MulticlassAccuracy(5),
        "acc_top2": syncfree.MulticlassAccuracy(5, top_k=2),
        "prec_ignore": syncfree.MulticlassPrecision(5, ignore_index=0),
        "rec": syncfree.MulticlassRecall(5, average="micro"),
        "prec6": syncfree.MulticlassPrecision(6),
        "cm": syncfree.MulticlassConfusionMatrix(5),
        "jac": syncfree.MulticlassJaccardIndex(5),
        "mean": syncfree.MeanMetric(),
        "sum": syncfree.SumMetric(),
        "bin_acc": syncfree.BinaryAccuracy(),
        "bin_f1": syncfree.BinaryF1Score(),
        "bin_f1_t": syncfree.BinaryF1Score(threshold=0.3),
        "bin_cm": syncfree.BinaryConfusionMatrix(),
    })
    assert list(c.compute_groups.values()) == [
        ["acc", "rec"], ["acc_top2"], ["prec_ignore"], ["prec6"], ["cm", "jac"], ["mean"], ["sum"],
        ["bin_acc", "bin_f1"], ["bin_f1_t"], ["bin_cm"]]


def test_multilabel_members_share():
    c = syncfree.MetricCollection({"acc": syncfree.MultilabelAccuracy(4), "f1": syncfree.MultilabelF1Score(4),
                                   "f1_t": syncfree.MultilabelF1Score(4, threshold=0.7)}, compute_groups=True)
    assert c.compute_groups == {0: ["acc", "f1"], 1: ["f1_t"]}
    ref = torchmetrics.MetricCollection({"acc": torchmetrics.classification.MultilabelAccuracy(4),
                                         "f1": torchmetrics.classification.MultilabelF1Score(4),
                                         "f1_t": torchmetrics.classification.MultilabelF1Score(4, threshold=0.7)})
    g = torch.Generator().manual_seed(1)
    preds, target = torch.rand(20, 4, generator=g), torch.randint(0, 2, (20, 4), generator=g)
    c.update(preds, target)
    ref.update(preds, target)
    got = syncfree.to_host(c)
    for k, v in ref.compute().items():
        assert got[k] == pytest.approx(v.item(), abs=1e-6)


def test_compute_groups_false_and_explicit_lists():
    separate = _four(syncfree, 3).__class__(
        [syncfree.MulticlassAccuracy(3), syncfree.MulticlassRecall(3)], compute_groups=False)
    assert len({id(m.state) for m in separate.values()}) == 2
    explicit = syncfree.MetricCollection(
        {"a": syncfree.MulticlassAccuracy(3), "b": syncfree.MulticlassRecall(3), "c": syncfree.MulticlassF1Score(3)},
        compute_groups=[["a", "c"]])
    assert explicit.compute_groups == {0: ["a", "c"], 1: ["b"]}
    assert explicit["a"].state is explicit["c"].state and explicit["b"].state is not explicit["a"].state
    with pytest.raises(ValueError, match="cannot share states"):
        syncfree.MetricCollection({"a": syncfree.MulticlassAccuracy(3), "m": syncfree.MeanMetric()},
                                  compute_groups=[["a", "m"]])
    with pytest.raises(ValueError, match="unknown or repeated"):
        syncfree.MetricCollection({"a": syncfree.MulticlassAccuracy(3)}, compute_groups=[["a", "zz"]])
    with pytest.raises(ValueError, match="list of lists"):
        syncfree.MetricCollection({"a": syncfree.MulticlassAccuracy(3)}, compute_groups="yes")


def test_an_updated_member_keeps_its_states():
    acc = syncfree.MulticlassAccuracy(3, average="micro")
    acc.update(torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1]))
    c = syncfree.MetricCollection({"acc": acc, "rec": syncfree.MulticlassRecall(3, average="micro")})
    assert c.compute_groups == {0: ["acc"], 1: ["rec"]}
    c.update(torch.tensor([0]), torch.tensor([0]))
    assert syncfree.to_host(c) == {"acc": pytest.approx(0.75), "rec": pytest.approx(1.0)}


def test_sharing_survives_pickle_deepcopy_move_and_checkpoint():
    c = _four(syncfree, 4)
    preds, target = torch.randn(9, 4), torch.randint(0, 4, (9,))
    c.update(preds, target)
    expected = syncfree.to_host(c)
    for other in (pickle.loads(pickle.dumps(c)), copy.deepcopy(c), c.to("cpu").half()):
        assert len({id(m.state) for m in other.values()}) == 1
        assert syncfree.to_host(other) == expected
    twin = _four(syncfree, 4)
    twin.load_state_dict(c.state_dict())
    assert syncfree.to_host(twin) == expected
    twin.update(preds, target)
    c.update(preds, target)
    assert syncfree.to_host(twin) == syncfree.to_host(c)


def test_a_member_updated_on_its_own_leaves_its_group_and_counts_once():
    kw = {"num_classes": 3, "average": "micro"}
    ours = syncfree.MetricCollection({"stats": syncfree.MulticlassStatScores(**kw),
                                      "acc": syncfree.MulticlassAccuracy(**kw),
                                      "cm": syncfree.MulticlassConfusionMatrix(3),
                                      "jac": syncfree.MulticlassJaccardIndex(3)})
    ref = torchmetrics.MetricCollection({"stats": torchmetrics.classification.MulticlassStatScores(**kw),
                                         "acc": torchmetrics.classification.MulticlassAccuracy(**kw),
                                         "cm": torchmetrics.classification.MulticlassConfusionMatrix(3),
                                         "jac": torchmetrics.classification.MulticlassJaccardIndex(3)},
                                        # torchmetrics re-links a group member's states to its leader's at the
                                        # next collection update, dropping what it accumulated alone: compare
                                        # with members that never share (what each would give alone).
                                        compute_groups=False)
    assert ours.compute_groups == {0: ["stats", "acc"], 1: ["cm", "jac"]}
    g = torch.Generator().manual_seed(3)
    batches = [(torch.randn(7, 3, generator=g), torch.randint(0, 3, (7,), generator=g)) for _ in range(3)]
    ours.update(*batches[0])
    ref.update(*batches[0])
    for name in ("stats", "acc", "cm", "jac"):  # the README's member-wise style: each counts its batch once
        ours[name].update(*batches[1])
        ref[name].update(*batches[1])
    assert ours.compute_groups == {0: ["stats"], 1: ["acc"], 2: ["cm"], 3: ["jac"]}
    ours["acc"](*batches[2])
    ref["acc"](*batches[2])
    ours["cm"].reset()
    ref["cm"].reset()
    ours.update(*batches[2])
    ref.update(*batches[2])
    got = syncfree.to_host(ours)
    for k, v in ref.compute().items():
        assert torch.allclose(torch.tensor(got[k], dtype=torch.float64), v.double(), atol=1e-6), k


def test_leaving_a_group_keeps_the_others_shared():
    c = _four(syncfree, 5)
    preds, target = torch.randn(6, 5), torch.randint(0, 5, (6,))
    c.update(preds, target)
    c["MulticlassAccuracy"].update(preds, target)
    assert c.compute_groups == {0: ["MulticlassAccuracy"],
                                1: ["MulticlassPrecision", "MulticlassRecall", "MulticlassF1Score"]}
    assert c["MulticlassPrecision"].state.owners == 3 and c["MulticlassAccuracy"].state.owners == 1
    assert int(c["MulticlassAccuracy"].local_states()["confmat"].sum()) == 12
    assert int(c["MulticlassRecall"].local_states()["confmat"].sum()) == 6
