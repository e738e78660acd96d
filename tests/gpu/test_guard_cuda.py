"""syncfree.guard on CUDA: sync debug mode + wrapped explicit synchronizations."""

import re
import warnings

import pytest
import torch

from syncfree.guard import HostSyncError, SyncWarning, accelerator_device, no_host_sync

pytestmark = pytest.mark.gpu

with open(__file__, encoding="utf-8") as _f:
    _SOURCE = _f.read().splitlines()


def line_of(tag: str) -> int:
    found = [i + 1 for i, t in enumerate(_SOURCE) if re.search(rf"#\s*{re.escape(tag)}\s*$", t)]
    assert len(found) == 1, (tag, found)
    return found[0]


@pytest.fixture
def x():
    dev = accelerator_device()
    assert dev.type == "cuda"
    t = torch.randn(64, device=dev)
    torch.cuda.synchronize()
    return t


def test_guard_sees_item_and_explicit_synchronizations(x):
    with no_host_sync() as g:
        y = x * 2
        y.sum().item()  # s:item
        torch.cuda.synchronize()  # s:sync
        event = torch.cuda.Event()
        event.record()
        event.synchronize()  # s:event
        torch.cuda.current_stream().synchronize()  # s:stream
        z = y + 1  # no sync
    lines = [ev.lineno for ev in g.events]
    expected = [line_of("s:item"), line_of("s:sync"), line_of("s:event"), line_of("s:stream")]
    assert lines == expected, g.report()
    assert all(ev.filename == __file__ for ev in g.events)
    assert g.events[1].kind == "synchronize" and "synchronize" in g.events[1].op
    del z


def test_loop_and_nested_calls(x):
    with no_host_sync() as g:
        for _ in range(3):
            float(x.max())  # s:loop
        print(x)  # s:print
        x[x > 0]  # s:mask
        x.cpu()  # s:cpu
    assert [ev.lineno for ev in g.events] == [line_of("s:loop")] * 3 + [
        line_of("s:print"), line_of("s:mask"), line_of("s:cpu")], g.report()


def test_no_event_for_sync_free_work_and_debug_mode_restored(x):
    before = torch.cuda.get_sync_debug_mode()
    model = torch.nn.Linear(64, 8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with no_host_sync() as g:
        for _ in range(3):
            loss = model(x.unsqueeze(0)).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert g.events == [], g.report()
    assert torch.cuda.get_sync_debug_mode() == before


def test_warn_mode(x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with no_host_sync(mode="warn") as g:
            x.sum().item()  # s:warn
    ours = [w for w in caught if issubclass(w.category, SyncWarning)]
    assert len(g.events) == 1 and len(ours) == 1
    assert ours[0].filename == __file__ and ours[0].lineno == line_of("s:warn")
    # torch's own debug-mode warning is consumed by the guard, not passed on
    assert not any("called a synchronizing CUDA operation" in str(w.message) for w in caught)


def test_error_mode_raises_host_sync_error(x):
    with pytest.raises(HostSyncError) as info:
        with no_host_sync(mode="error"):
            x.sum().item()  # s:error
    assert f"{__file__}:{line_of('s:error')}" in str(info.value)
    with pytest.raises(HostSyncError, match="synchronize"):
        with no_host_sync(mode="error"):
            torch.cuda.synchronize()


def test_cpu_tensors_do_not_count(x):
    c = torch.randn(8)
    with no_host_sync() as g:
        c.sum().item()
        print(c)
    assert g.events == []


def test_after_a_guard_torch_errors_stay_what_they_are(x):
    """The guard leaves nothing active behind: torch's own "error" mode still raises its
    RuntimeError (with torch's CUDA trace hooks active, a tensor freed while that error unwinds
    turned it into SystemError), and torch.cuda.synchronize is torch's again."""
    original = torch.cuda.synchronize
    with no_host_sync(mode="error"):
        assert torch.cuda.synchronize is not original
    assert torch.cuda.synchronize is original
    torch.cuda.set_sync_debug_mode("error")
    try:
        with pytest.raises(RuntimeError, match="synchronizing CUDA operation"):
            (x * 2).sum().item()
    finally:
        torch.cuda.set_sync_debug_mode("default")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stand_in_divides_as_cuda_does(dtype):
    """The CPU stand-in's division of a device tensor by a host number gives CUDA's bits
    (guard/standin_numerics.py), so the fix programs' CPU harness sees what a GPU prints."""
    import torch
    from syncfree import guard

    values = [0.1 * k + 0.0137 * k * k for k in range(1, 400)]
    kind = getattr(torch, dtype)
    on_gpu = (torch.tensor(values, dtype=kind, device="cuda") / 7).cpu()
    with guard.stand_in() as device:
        on_stand_in = torch.tensor(values, dtype=kind, device=device) / 7
    assert on_gpu.tolist() == on_stand_in.tolist()
