"""Where metric states live: not module buffers (DDP must not broadcast them), moved by ``.to``,
kept in their dtype by ``.half()``/``.double()``/``model.half()`` (``set_dtype`` changes it), and
intact through pickle / deepcopy / ``torch.save`` of the whole object."""

import copy
import io
import math
import pickle

import pytest
import syncfree
import torch
from syncfree.guard import on_stand_in, stand_in
from test_guard_metrics import METRICS, _inputs

CPU = torch.device("cpu")


def _batch(name, seed, n=16):
    return _inputs(METRICS[name][1], CPU, n=n, seed=seed)


def _equal(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, tuple):  # curves: (x, y, thresholds)
        return isinstance(b, tuple) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        torch.nan_to_num(a.double(), nan=-7.0), torch.nan_to_num(b.double(), nan=-7.0))


def _pickle(m):
    return pickle.loads(pickle.dumps(m))


def _torch_save(m):
    buffer = io.BytesIO()
    torch.save(m, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


COPIES = {"pickle": _pickle, "deepcopy": copy.deepcopy, "torch.save": _torch_save}


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("name", sorted(METRICS))
def test_copied_metric_keeps_accumulating_resetting_and_computing(name, how):
    make = METRICS[name][0]
    original = make()
    original.update(*_batch(name, 0))
    copied = COPIES[how](original)
    twin = make()
    twin.update(*_batch(name, 0))
    before = original.compute()
    for m in (copied, twin):
        m.update(*_batch(name, 1))
    assert _equal(copied.compute(), twin.compute())
    assert _equal(copied.local_states(), twin.local_states())
    assert _equal(original.compute(), before)  # the copy does not share the original's states
    for m in (copied, twin):
        m.reset()
    assert _equal(copied.local_states(), make().local_states())
    for m in (copied, twin):
        m.update(*_batch(name, 2))
        m(*_batch(name, 3))  # forward too
    assert _equal(copied.compute(), twin.compute())


@pytest.mark.parametrize("how", sorted(COPIES))
def test_copied_collection(how):
    def make():
        return syncfree.MetricCollection({
            "acc": syncfree.MulticlassAccuracy(5), "cm": syncfree.MulticlassConfusionMatrix(5),
            "f1": syncfree.MulticlassF1Score(5, average="none")})

    batch = [_batch("MulticlassAccuracy", s) for s in range(3)]
    original, twin = make(), make()
    original.update(*batch[0])
    twin.update(*batch[0])
    copied = COPIES[how](original)
    for c in (copied, twin):
        c.update(*batch[1])
    assert _equal(copied.compute(), twin.compute())
    for c in (copied, twin):
        c.reset()
        c.update(*batch[2])
    assert _equal(copied.compute(), twin.compute())
    assert syncfree.to_host(copied) == syncfree.to_host(twin)


def _model():
    model = torch.nn.Module()
    model.lin = torch.nn.Linear(2, 2)
    model.seen = syncfree.SumMetric()
    model.metrics = syncfree.MetricCollection({"acc": syncfree.MulticlassAccuracy(3),
                                               "mse": syncfree.MeanSquaredError()})
    return model


def test_states_are_not_module_buffers():
    """DDP broadcasts ``module.buffers()`` from rank 0 before every forward (broadcast_buffers=True)."""
    model = _model()
    assert [name for name, _ in model.named_buffers()] == []
    assert set(model.state_dict()) == {"lin.weight", "lin.bias"}  # as torchmetrics' default


@pytest.mark.parametrize("cast", ["half", "double", "bfloat16", "float", "to_dtype", "type"])
def test_casts_keep_the_state_dtype(cast):
    model = _model()
    if cast == "to_dtype":
        model.to(torch.float16)
    elif cast == "type":
        model.type(torch.float16)
    else:
        getattr(model, cast)()
    seen = model.seen
    assert seen.sum_value.dtype == torch.float32 and seen.dtype == torch.float32
    assert model.metrics["mse"].sum_squared_error.dtype == torch.float32
    assert model.metrics["acc"].confmat.dtype == torch.int64
    seen.update(torch.ones(100_000))
    assert syncfree.to_host(seen) == 100_000.0  # float16 would give inf


def test_half_sum_of_many_ones_is_exact():
    m = syncfree.SumMetric().half()
    m.update(torch.ones(100_000))
    assert m.compute().dtype == torch.float32 and m.compute().item() == 100_000.0


def test_set_dtype_changes_floating_states_only():
    m = syncfree.MeanMetric()
    assert m.set_dtype(torch.float64) is m
    assert m.mean_value.dtype == torch.float64 and m.weight.dtype == torch.float64
    assert m._nan_count.dtype == torch.int64 and m.dtype == torch.float64
    m.update(torch.tensor([1.0, 2.0 ** -30]))
    assert m.compute().dtype == torch.float64
    assert m.compute().item() == (1.0 + 2.0 ** -30) / 2
    m.half()  # still kept
    assert m.mean_value.dtype == torch.float64
    cm = syncfree.MulticlassConfusionMatrix(3).set_dtype(torch.float16)
    assert cm.confmat.dtype == torch.int64


def test_to_device_moves_states_and_keeps_dtype():
    model = _model()
    with stand_in() as dev:
        model.to(dev, torch.float16)
        for m in (model.seen, model.metrics["acc"], model.metrics["mse"]):
            assert all(on_stand_in(t) for t in m.local_states().values()), type(m).__name__
        assert model.seen.sum_value.dtype == torch.float32
        model.seen.update(torch.ones(3, device=dev))
        model.metrics["acc"].update(torch.randn(4, 3, device=dev), torch.tensor([0, 1, 2, 1], device=dev))
        assert syncfree.to_host(model.seen) == 3.0
        model.to("cpu")
        assert not any(on_stand_in(t) for t in model.seen.local_states().values())
        assert model.seen.compute().item() == 3.0


def test_metric_checkpoint_after_to_and_cast():
    m = syncfree.MulticlassAccuracy(3).half()
    m.update(torch.randn(6, 3), torch.tensor([0, 1, 2, 0, 1, 2]))
    sd = m.state_dict()
    other = syncfree.MulticlassAccuracy(3)
    other.load_state_dict(sd)
    assert _equal(other.local_states(), m.local_states())


def test_persistent_states_go_into_the_model_state_dict():
    model = _model()
    model.seen.persistent(True)
    model.seen.update(torch.tensor([2.0, 3.0]))
    sd = model.state_dict()
    assert {"seen.sum_value", "seen._nan_count"} <= set(sd)
    assert sd["seen.sum_value"].item() == 5.0
    fresh = _model()
    fresh.seen.persistent(True)
    fresh.load_state_dict(sd)
    assert fresh.seen.compute().item() == 5.0
    fresh.seen.update(torch.tensor([1.0]))
    assert fresh.seen.compute().item() == 6.0
    assert sd["seen.sum_value"].item() == 5.0  # the state dict was a snapshot
    assert not math.isnan(fresh.seen.compute().item())
