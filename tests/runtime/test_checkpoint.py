"""state_dict/load_state_dict: resume equals uninterrupted; wrong checkpoints fail clearly."""

import io

import pytest
import torch

import syncfree
from torch.distributed.checkpoint.stateful import Stateful

C = 4


def _batches(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(5, C, generator=g), torch.randint(0, C, (5,), generator=g)) for _ in range(n)]


def _collection():
    return syncfree.MetricCollection({
        "acc": syncfree.MulticlassAccuracy(C, average="none"),
        "cm": syncfree.MulticlassConfusionMatrix(C),
        "max": syncfree.MaxMetric(),
        "mean": syncfree.MeanMetric(),
    })


def _update(c, preds, target):
    c["acc"].update(preds, target)
    c["cm"].update(preds, target)
    c["max"].update(preds[:, 0])
    c["mean"].update(preds[:, 1])


def _roundtrip(sd):
    buffer = io.BytesIO()
    torch.save(sd, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_stateful_protocol():
    assert isinstance(syncfree.MeanMetric(), Stateful)
    assert isinstance(_collection(), Stateful)


def test_resume_equals_uninterrupted():
    batches = _batches(6)
    straight = _collection()
    for b in batches:
        _update(straight, *b)
    first = _collection()
    for b in batches[:3]:
        _update(first, *b)
    sd = _roundtrip(first.state_dict())
    assert sd["_version"] == 2 and sd["_class"] == "MetricCollection"
    assert sd["metrics"]["acc"]["_class"] == "MulticlassAccuracy"
    resumed = _collection()
    resumed.load_state_dict(sd)
    for b in batches[3:]:
        _update(resumed, *b)
    assert syncfree.to_host(resumed) == syncfree.to_host(straight)


def test_state_dict_is_a_snapshot():
    m = syncfree.SumMetric()
    m.update(torch.tensor([1.0]))
    sd = m.state_dict()
    m.update(torch.tensor([1.0]))
    assert sd["states"]["sum_value"].item() == 1.0


def test_wrong_class():
    sd = syncfree.MeanMetric().state_dict()
    with pytest.raises(ValueError, match="holds a 'MeanMetric'; it cannot be loaded into a SumMetric"):
        syncfree.SumMetric().load_state_dict(sd)


def test_missing_state():
    sd = syncfree.MeanMetric().state_dict()
    del sd["states"]["weight"]
    with pytest.raises(ValueError, match=r"missing states \['weight'\]"):
        syncfree.MeanMetric().load_state_dict(sd)


def test_missing_version():
    with pytest.raises(ValueError, match="no '_version' field"):
        syncfree.MeanMetric().load_state_dict({"states": {}})


def test_newer_version():
    sd = syncfree.MeanMetric().state_dict()
    sd["_version"] = 3
    with pytest.raises(ValueError, match="version 3"):
        syncfree.MeanMetric().load_state_dict(sd)


def test_wrong_shape():
    sd = syncfree.MulticlassAccuracy(3).state_dict()
    with pytest.raises(ValueError, match=r"state 'confmat' has shape \(3, 3\), the metric expects \(4, 4\)"):
        syncfree.MulticlassAccuracy(4).load_state_dict(sd)


def test_version_1_checkpoints():
    # Same states as version 2: loads.
    sd = syncfree.MeanMetric().state_dict()
    sd["_version"] = 1
    sd["states"]["mean_value"].fill_(3.0)
    sd["states"]["weight"].fill_(2.0)
    m = syncfree.MeanMetric()
    m.load_state_dict(sd)
    assert syncfree.to_host(m) == 1.5
    # A version-1 stat score (tp/fp/tn/fn): a clear error.
    old = {"_version": 1, "_class": "MulticlassAccuracy", "_rank": 0, "_world_size": 1,
           "reductions": {n: "sum" for n in ("tp", "fp", "tn", "fn", "_bad_label_count")},
           "states": {**{n: torch.zeros(4, dtype=torch.int64) for n in ("tp", "fp", "tn", "fn")},
                      "_bad_label_count": torch.zeros((), dtype=torch.int64)}}
    with pytest.raises(ValueError, match="version 1.*cannot be rebuilt"):
        syncfree.MulticlassAccuracy(4).load_state_dict(old)


def test_collection_missing_member():
    sd = _collection().state_dict()
    del sd["metrics"]["cm"]
    with pytest.raises(ValueError, match=r"missing metrics \['cm'\]"):
        _collection().load_state_dict(sd)


def test_merge_state_dicts_reduces_by_op():
    parts = []
    for rank in range(3):
        m = syncfree.MaxMetric()
        m.update(torch.tensor([float(rank)]))
        s = syncfree.SumMetric()
        s.update(torch.tensor([float(rank)]))
        parts.append((m.state_dict(), s.state_dict()))
    merged_max = syncfree.merge_state_dicts([p[0] for p in parts])
    merged_sum = syncfree.merge_state_dicts([p[1] for p in parts])
    assert merged_max["states"]["max_value"].item() == 2.0
    assert merged_sum["states"]["sum_value"].item() == 3.0
    m = syncfree.MaxMetric()
    m.load_state_dict([p[0] for p in parts])  # a list is merged (rank 0 when not distributed)
    assert syncfree.to_host(m) == 2.0


def test_merge_rejects_mixed_classes():
    with pytest.raises(ValueError, match="cannot be loaded into"):
        syncfree.merge_state_dicts([syncfree.MeanMetric().state_dict(), syncfree.SumMetric().state_dict()])


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_torch_distributed_checkpoint_roundtrip(tmp_path):
    import torch.distributed.checkpoint as dcp

    batches = _batches(4)
    saved = _collection()
    for b in batches:
        _update(saved, *b)
    dcp.save({"metrics": saved}, checkpoint_id=str(tmp_path))
    loaded = _collection()
    dcp.load({"metrics": loaded}, checkpoint_id=str(tmp_path))
    assert syncfree.to_host(loaded) == syncfree.to_host(saved)
