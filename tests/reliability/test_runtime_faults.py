"""Runtime fault injection: a rank that never joins, layouts that differ, hostile values,
bad checkpoints. Never a hang, never a crash, never a silently wrong or lost value.

Distributed cases run 2 forked gloo processes on the CPU (as tests/runtime/test_distributed.py).
Every child reports ``(rank, status, payload)`` on a queue; the parent waits with a timeout and
terminates stragglers, so a hang fails the test instead of blocking CI.
"""
import datetime
import math
import queue
import socket
import time
import traceback
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import syncfree

OUTER_TIMEOUT = 60
FAULTS = {"injected": 0}


def _fault():
    FAULTS["injected"] += 1


@pytest.fixture(scope="module", autouse=True)
def _report_faults():
    yield
    print(f"\n[runtime faults] faults injected: {FAULTS['injected']}")


# ---- harness -------------------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(rank, world, port, scenario, pg_timeout, done, results):
    try:
        torch.set_num_threads(1)
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
            timeout=datetime.timedelta(seconds=pg_timeout),
        )
        results.put((rank, "ok", SCENARIOS[scenario](rank, world, done)))
    except BaseException:  # noqa: BLE001 - everything goes back to the parent
        results.put((rank, "error", traceback.format_exc()))
    finally:
        done.set()
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except BaseException:  # noqa: BLE001
            pass


def _launch(scenario, world=2, pg_timeout=30, outer=OUTER_TIMEOUT):
    _fault()
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    done = ctx.Event()
    port = _free_port()
    procs = [ctx.Process(target=_child, args=(r, world, port, scenario, pg_timeout, done, results))
             for r in range(world)]
    for p in procs:
        p.start()
    out = {}
    deadline = time.monotonic() + outer
    try:
        while len(out) < world:
            rank, status, payload = results.get(timeout=max(0.1, deadline - time.monotonic()))
            out[rank] = (status, payload)
    except queue.Empty:
        pass
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    assert len(out) == world, f"only ranks {sorted(out)} reported within {outer}s (a hang): {out}"
    errors = {r: payload for r, (status, payload) in out.items() if status != "ok"}
    assert not errors, "\n".join(f"rank {r}:\n{tb}" for r, tb in errors.items())
    return {r: payload for r, (_, payload) in out.items()}


def _attempt(fn):
    """('ok', value, seconds) or ('raised', 'Type: message', seconds)."""
    started = time.monotonic()
    try:
        value = fn()
        return ("ok", value, time.monotonic() - started)
    except Exception as exc:  # noqa: BLE001
        return ("raised", f"{type(exc).__name__}: {exc}", time.monotonic() - started)


def _collection(c=4):
    return syncfree.MetricCollection({"mean": syncfree.MeanMetric(), "acc": syncfree.MulticlassAccuracy(c)})


def _feed(col, rank):
    col["mean"].update(torch.arange(3.0) + rank)
    col["acc"].update(torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1 + rank]))


# ---- scenarios: a rank that never joins ------------------------------------------------------
def scenario_absent_first_sync(rank, world, done):
    col = _collection()
    _feed(col, rank)
    if rank == 1:
        done.wait(40)  # never joins; stays alive so the failure is a timeout, not a reset
        return None

    def sync():
        col.trigger_sync()
        col.wait_sync(timeout=3)
    return _attempt(sync)


def scenario_absent_later_sync(rank, world, done):
    col = _collection()
    _feed(col, rank)
    col.sync(timeout=20)  # the layout is verified and cached
    if rank == 1:
        done.wait(40)
        return None

    def sync():
        col.trigger_sync()
        col.wait_sync(timeout=3)
    return _attempt(sync)


def scenario_absent_pg_timeout(rank, world, done):
    col = _collection()
    _feed(col, rank)
    col.sync(timeout=20)
    if rank == 1:
        done.wait(40)
        return None
    return _attempt(lambda: col.sync())  # no wait timeout: the process group's (3 s) applies


def test_rank_never_joins_first_sync_wait_timeout():
    out = _launch("absent_first_sync", pg_timeout=12)
    status, message, seconds = out[0]
    assert status == "raised", out[0]
    assert seconds < 10, f"wait_sync(timeout=3) took {seconds:.1f}s to fail: {message}"


def test_rank_never_joins_later_sync_wait_timeout():
    out = _launch("absent_later_sync", pg_timeout=30)
    status, message, seconds = out[0]
    assert status == "raised", out[0]
    assert seconds < 10, (seconds, message)
    assert "timed out" in message.lower() or "timeout" in message.lower(), message


def test_rank_never_joins_process_group_timeout():
    out = _launch("absent_pg_timeout", pg_timeout=3)
    status, message, seconds = out[0]
    assert status == "raised", out[0]
    assert seconds < 20, (seconds, message)


# ---- scenarios: layouts that differ between ranks --------------------------------------------
def scenario_members_differ(rank, world, done):
    members = {"mean": syncfree.MeanMetric()}
    if rank == 1:
        members["sum"] = syncfree.SumMetric()
    return _attempt(lambda: syncfree.MetricCollection(members).sync(timeout=20))


def scenario_shapes_differ(rank, world, done):
    return _attempt(lambda: _collection(3 + rank).sync(timeout=20))


def scenario_dtypes_differ(rank, world, done):
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if rank == 1 else torch.float32)
    try:
        m = syncfree.MeanMetric()
    finally:
        torch.set_default_dtype(old)
    return _attempt(lambda: m.sync(timeout=20))


def scenario_single_metric_differs(rank, world, done):
    m = syncfree.MulticlassAccuracy(3 + rank)
    return _attempt(lambda: m.sync(timeout=20))


def scenario_order_differs(rank, world, done):
    pairs = [("mean", syncfree.MeanMetric()), ("acc", syncfree.MulticlassAccuracy(4))]
    col = syncfree.MetricCollection(dict(pairs if rank == 0 else pairs[::-1]))
    _feed(col, rank)
    col.sync(timeout=20)
    return syncfree.to_host(col)


def scenario_layout_changes_after_verified_sync(rank, world, done):
    col = _collection()
    _feed(col, rank)
    col.sync(timeout=20)
    if rank == 1:
        col.add_metrics({"extra": syncfree.SumMetric()})
    return _attempt(lambda: col.sync(timeout=5))


def scenario_recover_after_layout_change(rank, world, done):
    """After the mismatch error the group is still aligned: fix the layout and sync again."""
    col = _collection()
    _feed(col, rank)
    col.sync(timeout=20)
    if rank == 1:
        col.add_metrics({"extra": syncfree.SumMetric()})
    failed = _attempt(lambda: col.sync(timeout=10))
    if rank == 0:
        col.add_metrics({"extra": syncfree.SumMetric()})
    col["extra"].update(torch.tensor([float(rank + 1)]))
    started = []
    real = dist.all_reduce

    def counting(*args, **kwargs):
        started.append(1)
        return real(*args, **kwargs)

    dist.all_reduce = counting
    try:
        col.sync(timeout=20)  # first sync of the new layout: all_reduces issued by wait_sync
        buckets = len(started)
        col.trigger_sync()
        in_trigger = len(started) - buckets  # verified layout: all_reduces start in trigger_sync
        col.wait_sync(timeout=20)
    finally:
        dist.all_reduce = real
    return failed[0], failed[1], syncfree.to_host(col), (buckets, in_trigger)


@pytest.mark.parametrize("scenario", ["members_differ", "shapes_differ", "dtypes_differ", "single_metric_differs"])
def test_layout_mismatch_detected_on_every_rank(scenario):
    out = _launch(scenario, pg_timeout=20)
    for rank, (status, message, _) in out.items():
        assert status == "raised", (rank, out)
        assert message.startswith("RuntimeError") and "different layout" in message, (rank, message)


def test_member_order_does_not_matter():
    out = _launch("order_differs", pg_timeout=20)
    assert out[0] == out[1]
    assert out[0]["mean"] == pytest.approx(1.5)  # values 0,1,2 and 1,2,3


def test_layout_change_after_verified_sync_detected_on_every_rank():
    out = _launch("layout_changes_after_verified_sync", pg_timeout=6, outer=45)
    for rank, (status, message, _) in out.items():
        assert status == "raised", (rank, out)
        assert "different layout" in message, (rank, message)


def test_group_usable_after_layout_change_error():
    out = _launch("recover_after_layout_change", pg_timeout=10, outer=45)
    for rank, (status, message, values, (buckets, in_trigger)) in out.items():
        assert status == "raised" and "different layout" in message, (rank, message)
        assert "only on rank 1: ['extra._nan_count', 'extra.sum_value']" in message, (rank, message)
        assert values["extra"] == 3.0 and values["mean"] == pytest.approx(1.5), (rank, values)
        assert buckets > 0 and in_trigger == buckets, (buckets, in_trigger)


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


# ---- hostile values (one process) ------------------------------------------------------------
def _host(metric):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = syncfree.to_host(metric)
    return value, [str(w.message) for w in caught]


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("value,weight,expected", [
    ([1.0, NAN, 3.0], None, 2.0),        # NaN dropped under "warn"
    ([1.0, 2.0], [NAN, 1.0], 2.0),       # NaN weight drops the pair
    ([1.0, INF], None, INF),
    ([1.0, 2.0], [0.0, 0.0], NAN),       # zero total weight
    ([], None, NAN),                      # empty
])
def test_mean_hostile_values(value, weight, expected):
    _fault()
    m = syncfree.MeanMetric()
    m.update(torch.tensor(value), None if weight is None else torch.tensor(weight))
    got, caught = _host(m)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected
    has_nan = any(math.isnan(v) for v in value + (weight or []))
    assert bool(caught) == has_nan, caught


def test_mean_never_updated_is_nan_not_a_crash():
    _fault()
    got, _ = _host(syncfree.MeanMetric())
    assert math.isnan(got)


def test_nan_strategy_error_raises_at_to_host_only():
    _fault()
    m = syncfree.MeanMetric(nan_strategy="error")
    m.update(torch.tensor([1.0, NAN]))  # no raise here: update never syncs
    with pytest.raises(ValueError, match="1 NaN"):
        syncfree.to_host(m)


@pytest.mark.parametrize("cls,expected", [(syncfree.MaxMetric, -INF), (syncfree.MinMetric, INF)])
def test_extrema_empty_and_all_nan(cls, expected):
    _fault()
    m = cls()
    m.update(torch.tensor([]))
    assert _host(m)[0] == expected
    m.update(torch.tensor([NAN, NAN]))
    got, caught = _host(m)
    assert got == expected and caught


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bfloat16, torch.float16, torch.float64, torch.bool])
def test_aggregators_accept_any_numeric_dtype(dtype):
    _fault()
    values = torch.tensor([1, 2, 3]).to(dtype)
    expect = values.double()
    for cls, ref in [(syncfree.MeanMetric, expect.mean()), (syncfree.SumMetric, expect.sum()),
                     (syncfree.MaxMetric, expect.max()), (syncfree.MinMetric, expect.min())]:
        m = cls()
        m.update(values)
        assert _host(m)[0] == pytest.approx(ref.item()), (cls.__name__, dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_classification_and_regression(dtype):
    _fault()
    acc = syncfree.MulticlassAccuracy(3, average="micro")
    acc.update(torch.tensor([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]], dtype=dtype), torch.tensor([1, 2]))
    assert _host(acc)[0] == pytest.approx(0.5)
    mse = syncfree.MeanSquaredError()
    mse.update(torch.tensor([300.0], dtype=dtype), torch.tensor([0.0], dtype=dtype))  # 90000 > fp16 max
    assert _host(mse)[0] == pytest.approx(90000.0)


def test_labels_outside_num_classes_are_counted_and_reported():
    _fault()
    strict = syncfree.MulticlassAccuracy(3)
    strict.update(torch.tensor([0, 1, 5]), torch.tensor([0, 7, -1]))
    with pytest.raises(ValueError, match="2 value"):
        syncfree.to_host(strict)
    lenient = syncfree.MulticlassAccuracy(3, validate_args=False)
    lenient.update(torch.tensor([0, 1, 5]), torch.tensor([0, 7, -1]))
    got, caught = _host(lenient)
    assert got == 1.0 and any("2 value" in c for c in caught), (got, caught)
    ignored = syncfree.MulticlassAccuracy(3, ignore_index=-1)
    ignored.update(torch.tensor([0, 1]), torch.tensor([0, -1]))
    assert _host(ignored) == (1.0, [])


def test_empty_classification_batch():
    _fault()
    for m in (syncfree.MulticlassAccuracy(3), syncfree.MulticlassF1Score(3, average="macro"),
              syncfree.MulticlassConfusionMatrix(3)):
        m.update(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long))
        _host(m)
    b = syncfree.BinaryAccuracy()
    b.update(torch.zeros(0), torch.zeros(0, dtype=torch.long))
    assert _host(b)[0] == 0.0


@pytest.mark.slow  # about 10-20 s: 4 x 2**24 elements per metric
def test_huge_counts_match_torchmetrics():
    import torchmetrics

    _fault()
    n = 2 ** 24
    ours_mean, ref_mean = syncfree.MeanMetric(), torchmetrics.MeanMetric()
    ours_acc = syncfree.MulticlassAccuracy(4, average="micro")
    ref_acc = torchmetrics.classification.MulticlassAccuracy(4, average="micro", validate_args=False)
    ones = torch.ones(n)
    target = torch.arange(n) % 4
    preds = torch.where(target == 3, torch.zeros_like(target), target)
    for _ in range(4):
        ours_mean.update(ones)
        ref_mean.update(ones)
        ours_acc.update(preds, target)
        ref_acc.update(preds, target)
    ours_mean.update(torch.tensor([3.0]))
    ref_mean.update(torch.tensor([3.0]))
    assert _host(ours_mean)[0] == pytest.approx(ref_mean.compute().item(), rel=1e-6)
    assert _host(ours_acc)[0] == pytest.approx(ref_acc.compute().item(), rel=1e-9)
    confmat = syncfree.MulticlassConfusionMatrix(4)
    for _ in range(4):
        confmat.update(preds, target)
    counts = _host(confmat)[0]
    assert counts[0][0] == 4 * n // 4 and counts[3][0] == 4 * n // 4


def test_to_host_keeps_int64_counts_exact():
    _fault()
    cm = syncfree.MulticlassConfusionMatrix(3)
    sd = cm.state_dict()
    sd["states"]["confmat"][0, 0] = 2 ** 53 + 1
    cm.load_state_dict(sd)
    assert cm.compute()[0, 0].item() == 2 ** 53 + 1
    assert syncfree.to_host(cm)[0][0] == 2 ** 53 + 1


# ---- checkpoints ---------------------------------------------------------------------------
def test_checkpoint_into_wrong_class_is_a_clear_error():
    _fault()
    sd = syncfree.MeanMetric().state_dict()
    with pytest.raises(ValueError, match="MeanMetric.*cannot be loaded into a SumMetric"):
        syncfree.SumMetric().load_state_dict(sd)
    with pytest.raises(ValueError, match="MetricCollection"):
        syncfree.MeanMetric().load_state_dict(_collection().state_dict())
    with pytest.raises(TypeError):
        syncfree.MeanMetric().load_state_dict("not a dict")
    with pytest.raises(ValueError, match="_version"):
        syncfree.MeanMetric().load_state_dict({"mean_value": torch.tensor(1.0)})  # a torchmetrics-style dict


def test_checkpoint_with_wrong_shapes_is_a_clear_error():
    _fault()
    sd = syncfree.MulticlassAccuracy(4).state_dict()
    with pytest.raises(ValueError, match="shape"):
        syncfree.MulticlassAccuracy(3).load_state_dict(sd)
    sd = syncfree.MeanMetric().state_dict()
    sd["states"]["weight"] = torch.zeros(2)
    with pytest.raises(ValueError, match="weight.*shape"):
        syncfree.MeanMetric().load_state_dict(sd)
    sd["states"]["weight"] = 1.0
    with pytest.raises(TypeError, match="not a tensor"):
        syncfree.MeanMetric().load_state_dict(sd)


def _unknown_versions():
    from syncfree import checkpoint

    readable = set(getattr(checkpoint, "READABLE", (checkpoint.VERSION,)))
    return [v for v in (0, -1, checkpoint.VERSION + 1, 99, str(checkpoint.VERSION), None, 1.5) if v not in readable]


@pytest.mark.parametrize("version", _unknown_versions())
def test_checkpoint_unknown_version_fails_clearly(version):
    _fault()
    m = syncfree.MeanMetric()
    m.update(torch.tensor([5.0]))
    sd = m.state_dict()
    sd["_version"] = version
    fresh = syncfree.MeanMetric()
    with pytest.raises(ValueError, match="version"):
        fresh.load_state_dict(sd)
    assert math.isnan(_host(fresh)[0])  # nothing half-loaded


@pytest.mark.parametrize("make", [
    lambda: syncfree.MeanMetric(), lambda: syncfree.MaxMetric(), lambda: syncfree.MulticlassAccuracy(3),
    lambda: syncfree.BinaryF1Score(), lambda: syncfree.MulticlassConfusionMatrix(3), lambda: syncfree.MeanSquaredError(),
], ids=["mean", "max", "acc", "binary_f1", "confmat", "mse"])
def test_checkpoint_older_readable_version_loads_or_fails_clearly(make):
    """A checkpoint marked with an older version this syncfree still reads: same value or a clear error."""
    from syncfree import checkpoint

    older = [v for v in getattr(checkpoint, "READABLE", ()) if v != checkpoint.VERSION]
    if not older:
        pytest.skip("this syncfree reads only its own checkpoint version")
    _fault()
    m = make()
    if isinstance(m, (syncfree.MeanMetric, syncfree.MaxMetric)):
        m.update(torch.tensor([1.0, 4.0]))
    elif isinstance(m, syncfree.MeanSquaredError):
        m.update(torch.tensor([1.0, 4.0]), torch.tensor([0.0, 0.0]))
    elif "Binary" in type(m).__name__:
        m.update(torch.tensor([0, 1, 1]), torch.tensor([0, 1, 0]))
    else:
        m.update(torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1]))
    want = _host(m)
    for version in older:
        sd = m.state_dict()
        sd["_version"] = version
        fresh = make()
        try:
            fresh.load_state_dict(sd)
        except ValueError as exc:
            assert "version" in str(exc), exc
            continue
        assert _host(fresh) == want, version


def test_failed_load_leaves_metric_untouched():
    _fault()
    m = syncfree.MulticlassAccuracy(3)
    m.update(torch.tensor([0, 1]), torch.tensor([0, 0]))
    before = _host(m)
    with pytest.raises(ValueError):
        m.load_state_dict(syncfree.MulticlassAccuracy(4).state_dict())
    assert _host(m) == before


def test_failed_collection_load_leaves_collection_untouched():
    _fault()
    col = syncfree.MetricCollection({"a": syncfree.MeanMetric(), "b": syncfree.MulticlassAccuracy(3)})
    col["a"].update(torch.tensor([1.0, 2.0]))
    other = syncfree.MetricCollection({"a": syncfree.MeanMetric(), "b": syncfree.MulticlassAccuracy(4)})
    other["a"].update(torch.tensor([100.0]))
    before = _host(col)
    with pytest.raises(ValueError, match="shape"):
        col.load_state_dict(other.state_dict())
    assert _host(col) == before


def test_checkpoint_round_trip_through_torch_save(tmp_path):
    _fault()
    col = _collection()
    _feed(col, 0)
    path = tmp_path / "metrics.pt"
    torch.save(col.state_dict(), path)
    fresh = _collection()
    fresh.load_state_dict(torch.load(path, weights_only=True))
    assert _host(fresh) == _host(col)
