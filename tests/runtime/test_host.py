"""to_host: one device-to-host read for everything, results mirror the input, checks reported."""

import math
import warnings

import pytest
import torch

import syncfree
from syncfree import host


def _ten_metrics():
    return syncfree.MetricCollection({
        "mean": syncfree.MeanMetric(),
        "sum": syncfree.SumMetric(),
        "max": syncfree.MaxMetric(),
        "min": syncfree.MinMetric(),
        "acc": syncfree.MulticlassAccuracy(4),
        "prec": syncfree.MulticlassPrecision(4, average="none"),
        "rec": syncfree.MulticlassRecall(4, average="weighted"),
        "f1": syncfree.MulticlassF1Score(4, average="micro"),
        "cm": syncfree.MulticlassConfusionMatrix(4),
        "mse": syncfree.MeanSquaredError(),
    })


@pytest.fixture
def reads(monkeypatch):
    calls = []
    original = host._read_host

    def counting(flat):
        calls.append(flat.numel())
        return original(flat)

    monkeypatch.setattr(host, "_read_host", counting)
    # Any other path to the host would go through these: fail loudly if used.
    for name in ("item", "tolist", "cpu", "numpy"):
        real = getattr(torch.Tensor, name)

        def guarded(self, *a, _real=real, _name=name, **k):
            import inspect

            caller = inspect.stack()[1]
            assert caller.function == "counting" or caller.function == "_read_host", (
                f"unexpected Tensor.{_name} in {caller.filename}:{caller.lineno}"
            )
            return _real(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, guarded)
    return calls


def _feed(collection):
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        scores = torch.randn(8, 4, generator=g)
        labels = torch.randint(0, 4, (8,), generator=g)
        for name, m in collection.items():
            if name in ("mean", "sum", "max", "min"):
                m.update(scores[:, 0])
            elif name == "mse":
                m.update(scores[:, 1], scores[:, 2])
            else:
                m.update(scores, labels)


def test_collection_of_ten_metrics_is_one_read(reads):
    collection = _ten_metrics()
    _feed(collection)
    result = syncfree.to_host(collection)
    assert len(reads) == 1
    assert set(result) == set(collection.keys())
    assert isinstance(result["acc"], float)
    assert isinstance(result["prec"], list) and len(result["prec"]) == 4
    assert isinstance(result["cm"], list) and all(isinstance(v, int) for row in result["cm"] for v in row)


def test_nested_structures_are_one_read(reads):
    collection = _ten_metrics()
    _feed(collection)
    extra = syncfree.MeanMetric()
    extra.update(torch.tensor([1.0, 3.0]))
    tree = {"val": collection, "more": [extra, torch.tensor([1, 2]), 7, "x"], "t": torch.tensor(0.5)}
    result = syncfree.to_host(tree)
    assert len(reads) == 1
    assert result["more"] == [2.0, [1, 2], 7, "x"]
    assert result["t"] == 0.5
    assert set(result["val"]) == set(collection.keys())


def test_values_match_compute():
    collection = _ten_metrics()
    _feed(collection)
    on_device = collection.compute()
    on_host = syncfree.to_host(collection)
    for key, tensor in on_device.items():
        assert torch.allclose(torch.tensor(on_host[key], dtype=torch.float64), tensor.double()), key


def test_compute_returns_device_tensors():
    collection = _ten_metrics()
    _feed(collection)
    assert all(isinstance(v, torch.Tensor) for v in collection.compute().values())


def test_checks_ride_along_in_the_same_read(reads):
    mean = syncfree.MeanMetric(nan_strategy="error")
    acc = syncfree.MulticlassAccuracy(3, validate_args=False)
    mean.update(torch.tensor([1.0, math.nan]))
    acc.update(torch.tensor([0, 1]), torch.tensor([0, 5]))
    with pytest.raises(ValueError, match="MeanMetric: 1 NaN"):
        with pytest.warns(UserWarning, match="MulticlassAccuracy: 1 value"):
            syncfree.to_host({"mean": mean, "acc": acc})
    assert len(reads) == 1


def test_compute_check_true_raises_now():
    mean = syncfree.MeanMetric(nan_strategy="error")
    mean.update(torch.tensor([math.nan]))
    assert torch.isnan(mean.compute())
    with pytest.raises(ValueError, match="1 NaN"):
        mean.compute(check=True)


def test_collection_compute_check_true():
    c = syncfree.MetricCollection([syncfree.MeanMetric(), syncfree.SumMetric()])
    c.update(torch.tensor([1.0, math.nan]))
    with pytest.warns(UserWarning, match="NaN"):
        c.compute(check=True)


def test_reset_clears_counters():
    mean = syncfree.MeanMetric(nan_strategy="error")
    mean.update(torch.tensor([math.nan]))
    mean.reset()
    mean.update(torch.tensor([2.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert syncfree.to_host(mean) == 2.0


def test_plain_values_pass_through():
    assert syncfree.to_host({"a": [1, 2.5, None]}) == {"a": [1, 2.5, None]}
    assert syncfree.to_host(torch.arange(6).reshape(2, 3)) == [[0, 1, 2], [3, 4, 5]]
