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
