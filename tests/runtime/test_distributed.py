"""Distributed sync with gloo in 2 and 3 forked processes.

Each child runs a scenario and puts ``(rank, "ok", result)`` or ``(rank, "error", traceback)`` on a
queue; the parent asserts. Every wait has a timeout, so a hang fails the test instead of blocking.
"""

import datetime
import os
import queue
import socket
import traceback

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import syncfree

C = 4
N_BATCHES = 7
TIMEOUT = 60


# ---- data and metrics (identical in parent and children) --------------------------------------
def _batches(seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(N_BATCHES):
        n = 3 + 2 * i  # uneven batch sizes
        out.append((torch.randn(n, C, generator=g), torch.randint(0, C, (n,), generator=g)))
    return out


def _collection(**kw):
    return syncfree.MetricCollection({
        "mean": syncfree.MeanMetric(**kw),
        "sum": syncfree.SumMetric(**kw),
        "max": syncfree.MaxMetric(**kw),
        "min": syncfree.MinMetric(**kw),
        "acc": syncfree.MulticlassAccuracy(C, **kw),
        "prec": syncfree.MulticlassPrecision(C, average="none", **kw),
        "rec": syncfree.MulticlassRecall(C, average="weighted", **kw),
        "f1": syncfree.MulticlassF1Score(C, average="micro", **kw),
        "cm": syncfree.MulticlassConfusionMatrix(C, **kw),
        "mse": syncfree.MeanSquaredError(**kw),
    })


def _update(c, preds, target):
    for name, m in c.items():
        if name in ("mean", "sum", "max", "min"):
            m.update(preds[:, 0])
        elif name == "mse":
            m.update(preds[:, 1], preds[:, 2])
        else:
            m.update(preds, target)


def _expected(batches):
    c = _collection()
    for b in batches:
        _update(c, *b)
    return syncfree.to_host(c)


def _assert_close(got, want, tol=1e-5):
    assert set(got) == set(want)
    for k in want:
        a = torch.tensor(got[k], dtype=torch.float64)
        b = torch.tensor(want[k], dtype=torch.float64)
        assert torch.allclose(a, b, rtol=tol, atol=tol), (k, got[k], want[k])


# ---- process harness ----------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(rank, world, port, scenario, kwargs, results, pg_timeout=None):
    try:
        torch.set_num_threads(1)
        extra = {} if pg_timeout is None else {"timeout": datetime.timedelta(seconds=pg_timeout)}
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                **extra)
        fn = scenario if callable(scenario) else SCENARIOS[scenario]  # a name here, or any function (fork)
        results.put((rank, "ok", fn(rank, world, **kwargs)))
    except BaseException:  # noqa: BLE001 - everything goes back to the parent
        results.put((rank, "error", traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _launch(scenario, world, pg_timeout=None, **kwargs):
    """Run ``scenario`` (a name in SCENARIOS, or a function: other test modules pass their own) on
    ``world`` forked gloo ranks; return ``{rank: (status, payload)}``. ``pg_timeout`` (seconds): the
    process group's timeout, so that a rank stalled in a collective fails fast."""
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_child, args=(r, world, port, scenario, kwargs, results, pg_timeout)) for r in range(world)]
    for p in procs:
        p.start()
    out = {}
    try:
        for _ in range(world):
            rank, status, payload = results.get(timeout=TIMEOUT)
            out[rank] = (status, payload)
    except queue.Empty:
        pass
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    assert len(out) == world, f"only ranks {sorted(out)} reported within {TIMEOUT}s: {out}"
    return out


def _ok(out):
    errors = {r: payload for r, (status, payload) in out.items() if status != "ok"}
    assert not errors, "\n".join(f"rank {r}:\n{tb}" for r, tb in errors.items())
    return {r: payload for r, (_, payload) in out.items()}


# ---- scenarios (run in the children) ------------------------------------------------------
def _count_all_reduce():
    calls = []
    real = dist.all_reduce

    def counting(tensor, *args, **kwargs):
        calls.append((str(tensor.dtype), tensor.numel()))
        return real(tensor, *args, **kwargs)

    dist.all_reduce = counting
    return calls


def scenario_uneven(rank, world):
    calls = _count_all_reduce()
    batches = _batches()
    mine = batches[rank::world]
    c = _collection(sync_on_compute=False)  # compute is local unless synced explicitly
    for b in mine:
        _update(c, *b)
    local = syncfree.to_host(c)
    c.trigger_sync()
    c.wait_sync(timeout=30)
    synced = syncfree.to_host(c)
    reduces_in_one_sync = len(calls)
    c.unsync()
    local_again = syncfree.to_host(c)
    # Local accumulation goes on after a sync; a second sync sees everything once.
    for b in mine:
        _update(c, *b)
    c.sync()
    twice = syncfree.to_host(c)
    return {"synced": synced, "local": local, "local_again": local_again, "twice": twice,
            "reduces": reduces_in_one_sync, "calls": calls[:reduces_in_one_sync]}


def scenario_single_metric(rank, world):
    batches = _batches()
    # sync_on_compute=False: compute reads the synced copy (a sync_on_compute metric all_reduces its
    # local states again at compute, so it would count the update made after trigger_sync).
    mean, mx = syncfree.MeanMetric(sync_on_compute=False), syncfree.MaxMetric(sync_on_compute=False)
    for preds, _ in batches[rank::world]:
        mean.update(preds[:, 0])
        mx.update(preds[:, 0])
    mean.trigger_sync()
    mx.trigger_sync()
    mean.update(torch.tensor([1000.0]))  # after trigger: not part of this sync
    mean.wait_sync()
    mx.wait_sync()
    return {"mean": syncfree.to_host(mean), "max": syncfree.to_host(mx)}


def scenario_save(rank, world, directory, split):
    batches = _batches()
    c = _collection()
    for b in batches[:split][rank::world]:
        _update(c, *b)
    torch.save(c.state_dict(), os.path.join(directory, f"rank{rank}.pt"))
    return None


def scenario_resume_same_world(rank, world, directory, split):
    batches = _batches()
    c = _collection()
    c.load_state_dict(torch.load(os.path.join(directory, f"rank{rank}.pt"), weights_only=True))
    for b in batches[split:][rank::world]:
        _update(c, *b)
    c.sync()
    return syncfree.to_host(c)


def scenario_resume_other_world(rank, world, directory, split, old_world):
    batches = _batches()
    c = _collection()
    old = [torch.load(os.path.join(directory, f"rank{r}.pt"), weights_only=True) for r in range(old_world)]
    c.load_state_dict(old)  # merged into rank 0, neutral states elsewhere
    for b in batches[split:][rank::world]:
        _update(c, *b)
    c.sync()
    return syncfree.to_host(c)


def scenario_mismatch(rank, world):
    c = _collection()
    if rank == 1:
        c.add_metrics({"extra": syncfree.SumMetric()})
    c.sync()
    return "synced without error"


def scenario_shape_mismatch(rank, world):
    m = syncfree.MulticlassAccuracy(3 + rank)
    m.sync()
    return "synced without error"


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


# ---- tests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("world", [2, 3])
def test_uneven_shards_equal_single_process(world):
    results = _ok(_launch("uneven", world))
    expected = _expected(_batches())
    for rank, r in results.items():
        _assert_close(r["synced"], expected)
        _assert_close(r["local_again"], r["local"])
        _assert_close(r["twice"], _expected(_batches() + _batches()))


def test_one_all_reduce_per_bucket_for_ten_metrics():
    results = _ok(_launch("uneven", 2))
    for r in results.values():
        # float32 sums, int64 sums (counts and checks), float32 max with the float32 min (negated)
        assert r["reduces"] == 3, r["calls"]
        assert sorted(dtype for dtype, _ in r["calls"]) == ["torch.float32"] * 2 + ["torch.int64"]


def test_single_metric_sync_and_async_window():
    results = _ok(_launch("single_metric", 3))
    values = torch.cat([p[:, 0] for p, _ in _batches()])
    for r in results.values():
        assert abs(r["mean"] - values.mean().item()) < 1e-5
        assert r["max"] == pytest.approx(values.max().item())


def test_save_restore_mid_epoch(tmp_path):
    split = 3
    _ok(_launch("save", 2, directory=str(tmp_path), split=split))
    results = _ok(_launch("resume_same_world", 2, directory=str(tmp_path), split=split))
    for r in results.values():
        _assert_close(r, _expected(_batches()))


def test_world_size_3_checkpoint_restores_on_2(tmp_path):
    split = 4
    _ok(_launch("save", 3, directory=str(tmp_path), split=split))
    results = _ok(_launch("resume_other_world", 2, directory=str(tmp_path), split=split, old_world=3))
    for r in results.values():
        _assert_close(r, _expected(_batches()))


@pytest.mark.parametrize("scenario,world", [("mismatch", 2), ("mismatch", 3), ("shape_mismatch", 2)])
def test_layout_mismatch_fails_on_every_rank(scenario, world):
    out = _launch(scenario, world)
    for rank, (status, payload) in out.items():
        assert status == "error", f"rank {rank}: {payload}"
        assert "RuntimeError" in payload and "different layout on different ranks" in payload, payload
    if scenario == "mismatch":
        assert "only on rank 1: ['extra._nan_count', 'extra.sum_value']" in out[0][1]


def test_not_distributed_sync_is_a_no_op():
    m = syncfree.SumMetric()
    m.update(torch.tensor([2.0]))
    m.sync()
    assert syncfree.to_host(m) == 2.0


def test_nccl_group_stages_cpu_buckets_through_cuda(monkeypatch):
    from syncfree import distributed

    monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert distributed.transport_device(None, torch.device("cpu")) == torch.device("cuda", 1)
    monkeypatch.setattr(dist, "get_backend", lambda group=None: "gloo")
    assert distributed.transport_device(None, torch.device("cpu")) == torch.device("cpu")
