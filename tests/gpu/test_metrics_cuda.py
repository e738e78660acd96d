"""syncfree metrics on CUDA: clean under ``torch.cuda.set_sync_debug_mode("error")`` (where
torchmetrics is not), and capturable in a CUDA graph."""

import pytest
import torch

import syncfree

pytestmark = pytest.mark.gpu

C = 5


def _inputs(kind, n=64, seed=0, device="cuda"):
    g = torch.Generator().manual_seed(seed)
    if kind == "values":
        args = (torch.randn(n, generator=g),)
    elif kind == "binary":
        args = (torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g))
    elif kind == "multiclass":
        args = (torch.randn(n, C, generator=g), torch.randint(0, C, (n,), generator=g))
    elif kind == "regression":
        args = (torch.randn(n, generator=g), torch.randn(n, generator=g))
    else:
        raise AssertionError(kind)
    return tuple(a.to(device) for a in args)


METRICS = {
    "MeanMetric": (lambda: syncfree.MeanMetric(), "values"),
    "SumMetric": (lambda: syncfree.SumMetric(), "values"),
    "MaxMetric": (lambda: syncfree.MaxMetric(), "values"),
    "MinMetric": (lambda: syncfree.MinMetric(), "values"),
    "BinaryAccuracy": (lambda: syncfree.BinaryAccuracy(), "binary"),
    "BinaryPrecision": (lambda: syncfree.BinaryPrecision(), "binary"),
    "BinaryRecall": (lambda: syncfree.BinaryRecall(), "binary"),
    "BinaryF1Score": (lambda: syncfree.BinaryF1Score(), "binary"),
    "BinaryConfusionMatrix": (lambda: syncfree.BinaryConfusionMatrix(), "binary"),
    "MulticlassAccuracy": (lambda: syncfree.MulticlassAccuracy(C), "multiclass"),
    "MulticlassAccuracy-top2": (lambda: syncfree.MulticlassAccuracy(C, top_k=2), "multiclass"),
    "MulticlassPrecision": (lambda: syncfree.MulticlassPrecision(C), "multiclass"),
    "MulticlassRecall": (lambda: syncfree.MulticlassRecall(C, average="weighted"), "multiclass"),
    "MulticlassF1Score": (lambda: syncfree.MulticlassF1Score(C, average="none"), "multiclass"),
    "MulticlassConfusionMatrix": (lambda: syncfree.MulticlassConfusionMatrix(C), "multiclass"),
    "Accuracy": (lambda: syncfree.Accuracy(task="multiclass", num_classes=C), "multiclass"),
    "Precision": (lambda: syncfree.Precision(task="binary"), "binary"),
    "Recall": (lambda: syncfree.Recall(task="multiclass", num_classes=C), "multiclass"),
    "F1Score": (lambda: syncfree.F1Score(task="multiclass", num_classes=C), "multiclass"),
    "ConfusionMatrix": (lambda: syncfree.ConfusionMatrix(task="multiclass", num_classes=C), "multiclass"),
    "MeanSquaredError": (lambda: syncfree.MeanSquaredError(), "regression"),
    "MeanAbsoluteError": (lambda: syncfree.MeanAbsoluteError(), "regression"),
}


@pytest.fixture(scope="module")
def group():
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    created = False
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        created = True
    yield dist.group.WORLD
    if created:
        dist.destroy_process_group()


class _SyncDebugError:
    def __enter__(self):
        torch.cuda.synchronize()
        self.prev = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")

    def __exit__(self, *exc):
        torch.cuda.set_sync_debug_mode(self.prev)
        return False


@pytest.mark.parametrize("name", sorted(METRICS))
def test_update_compute_sync_clean_under_sync_debug_error(name, group):
    make, kind = METRICS[name]
    metric = make().cuda()
    batches = [_inputs(kind, seed=s) for s in range(3)]
    with _SyncDebugError():
        metric.update(*batches[0])
        metric.update(*batches[1])
        metric(*batches[2])
        metric.compute()
        metric.trigger_sync(group)
        metric.wait_sync()
        metric.compute()
        metric.sync(group)
        metric.reset()
        metric.update(*batches[0])
        metric.compute()
    syncfree.to_host(metric)  # the one read, outside


def test_collection_clean_under_sync_debug_error_and_read_once(group):
    from syncfree.guard import no_host_sync

    coll = syncfree.MetricCollection({
        "acc": syncfree.MulticlassAccuracy(C), "prec": syncfree.MulticlassPrecision(C),
        "rec": syncfree.MulticlassRecall(C), "f1": syncfree.MulticlassF1Score(C),
        "cm": syncfree.MulticlassConfusionMatrix(C),
    }).cuda()
    batches = [_inputs("multiclass", seed=s) for s in range(3)]
    with _SyncDebugError():
        for preds, target in batches:
            coll.update(preds, target)
        coll.compute()
        coll.sync(group)
    with no_host_sync() as g:
        syncfree.to_host(coll)
    assert len(g.events) == 1, g.report()


def test_torchmetrics_mean_metric_does_sync():
    torchmetrics = pytest.importorskip("torchmetrics")
    metric = torchmetrics.MeanMetric().cuda()  # default nan_strategy="warn": checks on the host
    x = torch.randn(64, device="cuda")
    # torch's own detector in its "warn" mode, its warnings recorded
    import warnings

    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            metric.update(x)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert any("synchronizing CUDA operation" in str(w.message) for w in caught), [str(w.message) for w in caught]


GRAPH_METRICS = [
    "MeanMetric", "SumMetric", "MaxMetric", "MinMetric", "BinaryAccuracy", "BinaryF1Score",
    "MulticlassAccuracy", "MulticlassAccuracy-top2", "MulticlassPrecision", "MulticlassF1Score",
    "MulticlassConfusionMatrix", "MeanSquaredError", "MeanAbsoluteError",
]


@pytest.mark.parametrize("name", GRAPH_METRICS)
def test_update_captured_in_a_cuda_graph_replays_like_eager(name):
    make, kind = METRICS[name]
    n_replays = 5
    data = [_inputs(kind, seed=s) for s in range(n_replays)]

    eager = make().cuda()
    for args in data:
        eager.update(*args)

    graphed = make().cuda()
    static = tuple(a.clone() for a in data[0])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch recommends
        for _ in range(3):
            graphed.update(*static)
    torch.cuda.current_stream().wait_stream(side)
    graphed.reset()  # in place: the captured kernels keep pointing at the same states
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        graphed.update(*static)
    for args in data:
        for dst, src in zip(static, args):
            dst.copy_(src)
        graph.replay()
    torch.cuda.synchronize()

    ours, ref = syncfree.to_host(graphed), syncfree.to_host(eager)
    a = torch.tensor(ours, dtype=torch.float64)
    b = torch.tensor(ref, dtype=torch.float64)
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True), (ours, ref)


def test_training_step_updating_a_collection_captured_once_replays_100_times_like_eager():
    """A whole step (forward, loss, backward, optimizer step, then a MeanMetric of the loss and a
    MetricCollection of four classification metrics updated) captured in one CUDA graph and
    replayed 100 times on new batches: the metrics and the weights equal the same 100 steps run
    eagerly."""
    torch.manual_seed(0)
    steps, batch, features = 100, 32, 16
    xs = torch.randn(steps, batch, features, device="cuda")
    ys = torch.randint(0, C, (steps, batch), device="cuda")

    def build():
        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(features, 32), torch.nn.ReLU(), torch.nn.Linear(32, C)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        loss_mean = syncfree.MeanMetric().cuda()
        stats = syncfree.MetricCollection({
            "acc": syncfree.MulticlassAccuracy(C), "precision": syncfree.MulticlassPrecision(C),
            "recall": syncfree.MulticlassRecall(C), "f1": syncfree.MulticlassF1Score(C),
        }).cuda()

        def step(x, y):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
            loss_mean.update(loss.detach())
            stats.update(out.detach(), y)

        return model, step, loss_mean, stats

    model_e, step_e, mean_e, stats_e = build()
    for i in range(steps):
        step_e(xs[i], ys[i])

    model_g, step_g, mean_g, stats_g = build()
    static_x, static_y = xs[0].clone(), ys[0].clone()
    snapshot = {k: v.clone() for k, v in model_g.state_dict().items()}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture (grads allocated, kernels chosen)
        for _ in range(3):
            step_g(static_x, static_y)
    torch.cuda.current_stream().wait_stream(side)
    with torch.no_grad():  # undo the warm-up in place: the graph keeps pointing at these tensors
        for k, v in model_g.state_dict().items():
            v.copy_(snapshot[k])
    for p in model_g.parameters():
        p.grad.zero_()
    mean_g.reset()
    stats_g.reset()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step_g(static_x, static_y)
    with torch.no_grad():  # capture does not run the kernels, but be sure nothing moved
        for k, v in model_g.state_dict().items():
            v.copy_(snapshot[k])
    for i in range(steps):
        static_x.copy_(xs[i])
        static_y.copy_(ys[i])
        graph.replay()
    torch.cuda.synchronize()

    got = syncfree.to_host({"loss": mean_g, "stats": stats_g})
    want = syncfree.to_host({"loss": mean_e, "stats": stats_e})
    assert got["loss"] == pytest.approx(want["loss"], rel=1e-4)
    for name in ("acc", "precision", "recall", "f1"):
        assert got["stats"][name] == pytest.approx(want["stats"][name], rel=1e-4, abs=1e-6), name
    for (k, a), b in zip(model_g.state_dict().items(), model_e.state_dict().values()):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5), k
