"""The metric author's contract: ``_accumulate(S, ...)`` writes every state in place through ``S``.

A metric that breaks it would get ``forward`` (the batch value) silently wrong; it is rejected with
an error that says what to write instead.
"""
import pytest
import torch

import syncfree
from syncfree.metric import Metric
from syncfree.state import StateContractError, StateView


class _Total(Metric):
    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", (), torch.float64, "sum")

    def _compute(self, states):
        return states["total"].clone()


class GoodTotal(_Total):
    def _accumulate(self, S: StateView, x: torch.Tensor) -> None:
        S.total.add_(x.sum())


class WritesSelf(_Total):
    def _accumulate(self, S: StateView, x: torch.Tensor) -> None:
        self.total.add_(x.sum())  # the metric's own state, not the S it was given


class AssignsState(_Total):
    def _accumulate(self, S: StateView, x: torch.Tensor) -> None:
        S.total = S.total + x.sum()


def test_a_metric_that_keeps_the_contract_works():
    m = GoodTotal()
    assert m(torch.tensor([1.0, 2.0])).item() == 3.0
    m.update(torch.tensor([4.0]))
    assert syncfree.to_host(m) == 7.0


def test_writing_the_metrics_own_states_is_rejected_by_forward():
    m = WritesSelf()
    m.update(torch.tensor([1.0]))  # S is the metric's own view here: nothing can tell
    with pytest.raises(StateContractError, match=r"wrote the metric's own states.*S\.total\.add_"):
        m(torch.tensor([2.0]))


def test_assigning_a_state_is_rejected_at_update_and_forward():
    m = AssignsState()
    with pytest.raises(StateContractError, match=r"assigned the state 'total'.*S\.total\.add_\(x\)"):
        m.update(torch.tensor([1.0]))
    with pytest.raises(StateContractError, match="assigned the state 'total'"):
        m(torch.tensor([1.0]))
    assert isinstance(StateContractError("x"), TypeError)


def test_an_empty_batch_that_writes_nothing_is_fine():
    m = syncfree.MaxMetric()
    m(torch.tensor([2.0]))
    assert torch.isinf(m(torch.tensor([]))) and syncfree.to_host(m) == 2.0


def test_reading_a_missing_state_names_the_states():
    class Misspelt(_Total):
        def _accumulate(self, S: StateView, x: torch.Tensor) -> None:
            S.totl.add_(x.sum())

    with pytest.raises(AttributeError, match=r"no metric state named 'totl'; the states are \[.*'total'"):
        Misspelt().update(torch.tensor([1.0]))


@pytest.mark.parametrize("make", [
    lambda: syncfree.MeanMetric(), lambda: syncfree.MaxMetric(), lambda: syncfree.MulticlassAccuracy(4),
    lambda: syncfree.BinaryAUROC(thresholds=5), lambda: syncfree.MultilabelF1Score(3),
    lambda: syncfree.Perplexity(), lambda: syncfree.R2Score(), lambda: syncfree.MulticlassStatScores(200),
])
def test_every_shipped_metric_keeps_the_contract(make):
    inputs = {
        "MeanMetric": (torch.tensor([1.0, 2.0]),), "MaxMetric": (torch.tensor([1.0, 2.0]),),
        "MulticlassAccuracy": (torch.randn(6, 4), torch.randint(0, 4, (6,))),
        "BinaryAUROC": (torch.rand(6), torch.randint(0, 2, (6,))),
        "MultilabelF1Score": (torch.rand(6, 3), torch.randint(0, 2, (6, 3))),
        "Perplexity": (torch.randn(2, 3, 5), torch.randint(0, 5, (2, 3))),
        "R2Score": (torch.randn(6), torch.randn(6)),
        "MulticlassStatScores": (torch.randn(6, 200), torch.randint(0, 200, (6,))),
    }
    m = make()
    m(*inputs[type(m).__name__])  # forward checks the contract
    m(*inputs[type(m).__name__])
