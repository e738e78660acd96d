"""Every update compiles under torch.compile without a graph break."""

import pytest
import torch
import torch._dynamo

import syncfree

C = 4
SCORES = (torch.randn(6, C), torch.randint(0, C, (6,)))
LABELS = (torch.randint(0, C, (6,)), torch.randint(0, C, (6,)))
BINARY = (torch.randn(6), torch.randint(0, 2, (6,)))
REGRESSION = (torch.randn(6), torch.randn(6))

CASES = [
    (lambda: syncfree.MeanMetric(), (torch.randn(5),)),
    (lambda: syncfree.MeanMetric(), (torch.randn(5), torch.rand(5))),
    (lambda: syncfree.MeanMetric(nan_strategy=0.0), (torch.randn(5), 2.0)),
    (lambda: syncfree.SumMetric(nan_strategy="ignore"), (torch.randn(5),)),
    (lambda: syncfree.MaxMetric(), (torch.randn(5),)),
    (lambda: syncfree.MinMetric(nan_strategy="error"), (torch.randn(5),)),
    (lambda: syncfree.BinaryAccuracy(), BINARY),
    (lambda: syncfree.BinaryPrecision(ignore_index=0), BINARY),
    (lambda: syncfree.BinaryRecall(), BINARY),
    (lambda: syncfree.BinaryF1Score(), BINARY),
    (lambda: syncfree.BinaryConfusionMatrix(), BINARY),
    (lambda: syncfree.MulticlassAccuracy(C), SCORES),
    (lambda: syncfree.MulticlassAccuracy(C, top_k=2), SCORES),
    (lambda: syncfree.MulticlassPrecision(C, average="none"), LABELS),
    (lambda: syncfree.MulticlassRecall(C, ignore_index=1), LABELS),
    (lambda: syncfree.MulticlassF1Score(C, average="weighted"), SCORES),
    (lambda: syncfree.MulticlassConfusionMatrix(C, normalize="true"), SCORES),
    (lambda: syncfree.MeanSquaredError(), REGRESSION),
    (lambda: syncfree.MeanAbsoluteError(), REGRESSION),
    (lambda: syncfree.MetricCollection([syncfree.MulticlassAccuracy(C), syncfree.MulticlassF1Score(C)]), SCORES),
]


@pytest.mark.parametrize("make,args", CASES, ids=lambda x: "" if callable(x) else None)
def test_update_has_no_graph_break(make, args):
    torch._dynamo.reset()
    metric = make()
    explanation = torch._dynamo.explain(metric.update)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count >= 1


def test_compiled_update_matches_eager():
    torch._dynamo.reset()
    eager, compiled = syncfree.MulticlassF1Score(C), syncfree.MulticlassF1Score(C)
    step = torch.compile(compiled.update, backend="eager")
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        preds, target = torch.randn(6, C, generator=g), torch.randint(0, C, (6,), generator=g)
        eager.update(preds, target)
        step(preds, target)
    assert torch.equal(eager.compute(), compiled.compute())


def _sized(kind, n, g):
    if kind == "values":
        return (torch.randn(n, generator=g),)
    if kind == "weighted":
        return (torch.randn(n, generator=g), torch.rand(n, generator=g))
    if kind == "binary":
        return (torch.randn(n, generator=g), torch.randint(0, 2, (n,), generator=g))
    if kind == "scores":
        return (torch.randn(n, C, generator=g), torch.randint(0, C, (n,), generator=g))
    if kind == "labels":
        return (torch.randint(0, C, (n,), generator=g), torch.randint(0, C, (n,), generator=g))
    return (torch.randn(n, generator=g), torch.randn(n, generator=g))


SIZED_CASES = {
    "MeanMetric": (lambda: syncfree.MeanMetric(), "values"),
    "MeanMetric-weighted": (lambda: syncfree.MeanMetric(), "weighted"),
    "SumMetric": (lambda: syncfree.SumMetric(), "values"),
    "MaxMetric": (lambda: syncfree.MaxMetric(), "values"),
    "BinaryAccuracy": (lambda: syncfree.BinaryAccuracy(), "binary"),
    "BinaryConfusionMatrix-ignore": (lambda: syncfree.BinaryConfusionMatrix(ignore_index=0), "binary"),
    "MulticlassAccuracy": (lambda: syncfree.MulticlassAccuracy(C), "scores"),
    "MulticlassF1Score-labels": (lambda: syncfree.MulticlassF1Score(C, ignore_index=1), "labels"),
    "MulticlassConfusionMatrix": (lambda: syncfree.MulticlassConfusionMatrix(C), "scores"),
    "MeanSquaredError": (lambda: syncfree.MeanSquaredError(), "regression"),
    "MeanAbsoluteError": (lambda: syncfree.MeanAbsoluteError(), "regression"),
    "MetricCollection": (lambda: syncfree.MetricCollection(
        [syncfree.MulticlassAccuracy(C), syncfree.MulticlassConfusionMatrix(C)]), "scores"),
}


@pytest.mark.parametrize("name", sorted(SIZED_CASES))
def test_fullgraph_compile_over_16_batch_sizes(name):
    """Default dynamo settings (recompile limit 8): per-size caches must not key the graphs."""
    torch._dynamo.reset()
    make, kind = SIZED_CASES[name]
    eager, compiled = make(), make()
    step = torch.compile(compiled.update, fullgraph=True, backend="eager")
    g = torch.Generator().manual_seed(0)
    for n in range(1, 17):
        args = _sized(kind, n, g)
        eager.update(*args)
        step(*args)  # raises FailOnRecompileLimitHit when every size compiles a new graph
    want, got = eager.compute(), compiled.compute()
    if isinstance(want, dict):
        assert all(torch.allclose(got[k].double(), want[k].double()) for k in want)
    else:
        assert torch.allclose(got.double(), want.double(), atol=1e-5)
