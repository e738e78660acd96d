"""The CUDA back end of syncfree.guard, exercised without a GPU: torch's sync debug mode and the
explicit synchronizations are replaced by fakes that do what the real ones do (the real thing runs
in tests/gpu)."""

import re
import warnings

import pytest

torch = pytest.importorskip("torch")

from syncfree import guard as sg  # noqa: E402
from syncfree.guard import HostSyncError, SyncWarning, no_host_sync  # noqa: E402

with open(__file__, encoding="utf-8") as _f:
    _SOURCE = _f.read().splitlines()


def line_of(tag: str) -> int:
    found = [i + 1 for i, t in enumerate(_SOURCE) if re.search(rf"#\s*{re.escape(tag)}\s*$", t)]
    assert len(found) == 1, (tag, found)
    return found[0]


# Fake "torch" operations: code objects whose file name is inside torch, so that the guard
# treats them as library frames, as it does for the real ones.
_FAKE_OPS = """
import warnings

def item():
    # what .item() does on CUDA under the debug mode "warn": it warns once the op returned
    warnings.warn("called a synchronizing CUDA operation (Triggered internally)", UserWarning)
    return 0.0

WAITED = []

def device_synchronize():
    # torch.cuda.synchronize() itself: the debug mode does not report it
    WAITED.append(True)

def raise_sync():
    # what an op does under set_sync_debug_mode("error")
    raise RuntimeError("called a synchronizing CUDA operation")

def many():
    for _ in range(3):
        item()
"""
_fake = {}
exec(compile(_FAKE_OPS, torch.__file__, "exec"), _fake)


@pytest.fixture
def fake_cuda(monkeypatch):
    state = {"mode": 0}
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: state["mode"])

    def set_mode(mode):
        state["mode"] = {"default": 0, "warn": 1, "error": 2}.get(mode, mode)

    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", set_mode)
    return state


@pytest.fixture
def callbacks():
    _fake["WAITED"].clear()
    return {"device": sg._explicit_sync(_fake["device_synchronize"], "synchronize", "torch.cuda.synchronize")}


def test_debug_mode_set_and_restored(fake_cuda):
    fake_cuda["mode"] = 0
    with no_host_sync(device="cuda") as g:
        assert fake_cuda["mode"] == 1
        with no_host_sync(device="cuda", mode="error"):
            assert fake_cuda["mode"] == 1  # torch's "warn": the guard raises from the warning
        assert fake_cuda["mode"] == 1
    assert fake_cuda["mode"] == 0
    assert g.device.type == "cuda" and g.events == []


def test_events_at_the_user_line_and_merged(fake_cuda, callbacks):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with no_host_sync(device="cuda") as g:
            _fake["item"]()  # c:item
            callbacks["device"]()  # c:sync
            _fake["many"]()  # c:many
            warnings.warn("something else")  # c:other
            warnings.warn("called a synchronizing CUDA operation")  # c:direct
    assert [(ev.kind, ev.lineno) for ev in g.events] == [
        ("sync", line_of("c:item")),
        ("synchronize", line_of("c:sync")),
        ("sync", line_of("c:many")),
        ("sync", line_of("c:direct")),
    ], g.report()
    # torch's warnings are consumed; other warnings still reach the outer handler
    messages = [str(w.message) for w in caught]
    assert messages == ["something else"]


def test_no_recorder_outside_the_guard(fake_cuda, callbacks):
    with no_host_sync(device="cuda") as g:
        pass
    callbacks["device"]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("called a synchronizing CUDA operation")
    assert g.events == [] and len(caught) == 1


def test_warn_mode(fake_cuda, callbacks):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with no_host_sync(device="cuda", mode="warn") as g:
            _fake["item"]()  # c:warn
    ours = [w for w in caught if issubclass(w.category, SyncWarning)]
    assert len(g.events) == 1 and len(ours) == 1
    assert (ours[0].filename, ours[0].lineno) == (__file__, line_of("c:warn"))


def test_error_mode_converts_torch_error(fake_cuda):
    with pytest.raises(HostSyncError) as info:
        with no_host_sync(device="cuda", mode="error"):
            _fake["raise_sync"]()  # c:error
    assert f"{__file__}:{line_of('c:error')}" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_error_mode_raises_before_an_explicit_wait(fake_cuda, callbacks):
    with pytest.raises(HostSyncError, match=r"synchronize \(torch.cuda.synchronize\)") as info:
        with no_host_sync(device="cuda", mode="error"):
            callbacks["device"]()  # c:explicit
    assert f"{__file__}:{line_of('c:explicit')}" in str(info.value)
    assert _fake["WAITED"] == []


def test_explicit_syncs_wrapped_only_while_a_guard_is_active(fake_cuda):
    before = (torch.cuda.synchronize, torch.cuda.Stream.synchronize, torch.cuda.Event.synchronize)
    with no_host_sync(device="cuda"):
        with no_host_sync(device="cuda"):
            inside = (torch.cuda.synchronize, torch.cuda.Stream.synchronize, torch.cuda.Event.synchronize)
        assert torch.cuda.synchronize is inside[0]  # the outer guard still watches
    assert all(a is not b for a, b in zip(before, inside))
    assert (torch.cuda.synchronize, torch.cuda.Stream.synchronize, torch.cuda.Event.synchronize) == before
    with no_host_sync(device="cuda", cuda_trace=False):
        assert torch.cuda.synchronize is before[0]


def test_error_mode_raises_at_the_op_from_the_debug_mode_warning(fake_cuda):
    # .item(): torch's warning comes once the op returned; the guard raises there, at the user's
    # line, not at the end of the block
    reached = []
    with pytest.raises(HostSyncError) as info:
        with no_host_sync(device="cuda", mode="error"):
            _fake["item"]()  # c:item-error
            reached.append(True)
    assert not reached
    assert f"{__file__}:{line_of('c:item-error')}" in str(info.value)


def test_other_errors_pass_through(fake_cuda):
    with pytest.raises(ValueError):
        with no_host_sync(device="cuda", mode="error"):
            raise ValueError("unrelated")
