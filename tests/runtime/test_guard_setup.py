"""Issue 11's guard items: a warning when a stand-in guard saw no tensor on the device, and a
pytest marker that guards the step (``host_sync_step``), not the test's set-up."""

import warnings

import pytest

pytest_plugins = ["pytester"]

torch = pytest.importorskip("torch")
# imported once, before pytester's in-process runs
import torch._dynamo  # noqa: E402,F401,F811

from syncfree.guard import STAND_IN, StandInUnusedWarning, no_host_sync, stand_in  # noqa: E402


def test_warns_when_the_model_was_set_up_outside_the_stand_in():
    model = torch.nn.Linear(4, 1)  # never put on the device
    with pytest.warns(StandInUnusedWarning, match="none of them on the stand-in device"):
        with no_host_sync(device=STAND_IN) as g:
            loss = model(torch.randn(2, 4)).sum()
            loss.item()
    assert g.events == []  # the reason for the warning: the sync could not be seen


def test_no_warning_when_the_block_uses_the_device():
    with stand_in() as dev:
        model = torch.nn.Linear(4, 1).to(dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StandInUnusedWarning)
        with no_host_sync(device=STAND_IN) as g:
            model(torch.randn(2, 4, device=dev)).sum().item()
    assert [ev.kind for ev in g.events] == ["item"]


def test_no_warning_for_a_block_without_tensor_ops():
    with warnings.catch_warnings():
        warnings.simplefilter("error", StandInUnusedWarning)
        with no_host_sync(device=STAND_IN):
            sum(range(10))


STEP_TESTS = """
import pytest
import torch


@pytest.mark.no_host_sync
def test_set_up_in_the_body(host_sync_step, accelerator_device):
    model = torch.nn.Linear(4, 2).to(accelerator_device)  # set-up: a host-to-device copy
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.tensor([[1.0, 2.0, 3.0, 4.0]], device=accelerator_device)
    for _ in range(2):
        with host_sync_step():
            model(batch).square().mean().backward()
            opt.step()
            opt.zero_grad()
    assert model.weight.grad is None or model.weight.grad.sum().item() == 0.0  # after: set-up


@pytest.mark.no_host_sync
def test_sync_in_the_step(host_sync_step, accelerator_device):
    model = torch.nn.Linear(4, 2).to(accelerator_device)
    with host_sync_step():
        loss = model(torch.randn(3, 4, device=accelerator_device)).sum()
        loss.item()  # STEP-SYNC


@pytest.mark.no_host_sync
def test_step_never_entered(host_sync_step):
    pass


def test_fixture_without_marker(host_sync_step):
    pass
"""


def test_marker_guards_only_the_step(pytester):
    pytester.makepyfile(test_steps=STEP_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    out = result.stdout.str()
    line = next(i for i, t in enumerate(STEP_TESTS.strip().splitlines(), 1) if t.endswith("# STEP-SYNC"))
    assert f"test_steps.py:{line}: item (Tensor.item)" in out
    assert "never entered `with host_sync_step():`" in out
    assert "add the marker" in out
    result.stdout.fnmatch_lines(["*PASSED*test_set_up_in_the_body*"])
