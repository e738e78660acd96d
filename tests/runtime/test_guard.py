"""syncfree.guard on the CPU stand-in accelerator (no GPU needed)."""

import re
import warnings

import pytest

torch = pytest.importorskip("torch")

from syncfree import guard as sg  # noqa: E402
from syncfree.guard import (  # noqa: E402
    STAND_IN,
    HostSyncError,
    SyncEvent,
    SyncWarning,
    no_host_sync,
    on_stand_in,
    stand_in,
)


@pytest.fixture(autouse=True)
def _stand_in_by_default(monkeypatch):
    """These tests exercise the CPU stand-in, also on a machine with CUDA."""
    if torch.cuda.is_available():
        from syncfree import guard

        monkeypatch.setattr(guard, "accelerator_device", lambda: guard.STAND_IN)


with open(__file__, encoding="utf-8") as _f:
    _SOURCE = _f.read().splitlines()


def line_of(tag: str) -> int:
    """Line number of the unique source line ending with the comment ``# <tag>``."""
    found = [i + 1 for i, text in enumerate(_SOURCE) if re.search(rf"#\s*{re.escape(tag)}\s*$", text)]
    assert len(found) == 1, (tag, found)
    return found[0]


def kinds_and_lines(events):
    return [(ev.kind, ev.lineno) for ev in events]


@pytest.fixture
def dev():
    with stand_in() as d:
        yield d


def test_accelerator_device_is_the_stand_in_without_cuda():
    assert sg.accelerator_device() == STAND_IN == torch.device("cpu", 0)
    assert no_host_sync().device == STAND_IN


def test_loop_reports_every_sync_at_its_line(dev):
    x = torch.randn(6, device=dev)
    with no_host_sync() as g:
        for _ in range(2):
            y = x * 2 + 1
            v = y.sum().item()  # s:item
            if y.max() > 0:  # s:if
                v += 1
            h = y.cpu()  # s:cpu
            print(y)  # s:print
            m = y[y > 0]  # s:mask
            nz = torch.nonzero(y)  # s:nonzero
            u = torch.unique(y)  # s:unique
            t = torch.tensor([1.0, 2.0], device=dev)  # s:tensor
            f = float(y[0])  # s:float
            w = y.masked_fill(y < 0, 0.0)  # no sync
    expected = [
        ("item", line_of("s:item")),
        ("item", line_of("s:if")),
        ("d2h", line_of("s:cpu")),
        ("d2h", line_of("s:print")),
        ("dynamic-shape", line_of("s:mask")),
        ("dynamic-shape", line_of("s:nonzero")),
        ("dynamic-shape", line_of("s:unique")),
        ("h2d", line_of("s:tensor")),
        ("item", line_of("s:float")),
    ]
    assert kinds_and_lines(g.events) == expected * 2
    assert all(ev.filename == __file__ for ev in g.events)
    ops = [ev.op for ev in g.events[: len(expected)]]
    assert ops == [
        "Tensor.item", "Tensor.__bool__", "Tensor.cpu", "Tensor.__repr__",
        "Tensor.__getitem__", "torch.nonzero", "torch.unique", "torch.tensor", "Tensor.__float__",
    ]
    assert str(g.events[0]) == f"{__file__}:{line_of('s:item')}: item (Tensor.item)"
    del v, h, m, nz, u, t, f, w


def test_cpu_tensors_and_python_numbers_report_nothing(dev):
    c = torch.randn(5)  # plain CPU tensor, never put on the stand-in
    with no_host_sync() as g:
        a = c.sum().item()
        if c.max() > 0:
            a += 1
        print(c)
        c[c > 0]
        torch.nonzero(c)
        torch.unique(c)
        c.cpu().numpy()
        c.tolist()
        t = torch.tensor([1.0, 2.0])
        b = float(3.5) * 2 + int("4")
        n = torch.as_tensor(2.0)  # a Python number as a CPU 0-d tensor
        s = torch.randn(3, device=dev) * n  # ... used by a device op: no copy
    assert g.events == []
    del a, t, b, s


def test_training_step_records_nothing(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 4)
    ).to(dev)
    assert all(on_stand_in(p) for p in model.parameters())
    assert all(on_stand_in(b) for b in model.buffers())
    x = torch.randn(32, 8, device=dev)
    y = torch.randint(0, 4, (32,), device=dev)
    for opt in (
        torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
        torch.optim.Adam(model.parameters(), lr=1e-3),
    ):
        with no_host_sync() as g:
            for _ in range(3):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
        assert g.events == [], g.report()
        assert all(on_stand_in(p.grad) for p in model.parameters())
        assert all(on_stand_in(p) for p in model.parameters())
    with no_host_sync() as g:
        loss.item()  # s:loss
    assert kinds_and_lines(g.events) == [("item", line_of("s:loss"))]


def test_module_created_on_the_device_and_parameters(dev):
    lin = torch.nn.Linear(3, 2, device=dev)
    assert all(on_stand_in(p) for p in lin.parameters())
    p = torch.nn.Parameter(torch.zeros(3, device=dev))
    assert on_stand_in(p)  # the tag lives on the storage, shared by the Parameter
    cpu_lin = torch.nn.Linear(3, 2)
    assert not any(on_stand_in(q) for q in cpu_lin.parameters())
    cpu_lin.to(dev)
    assert all(on_stand_in(q) for q in cpu_lin.parameters())


def test_tags_follow_ops_views_and_moves(dev):
    x = torch.arange(6.0, device=dev)
    c = torch.ones(6)
    assert on_stand_in(x) and not on_stand_in(c)
    assert on_stand_in(x.view(2, 3)) and on_stand_in(x[1:]) and on_stand_in(x.data)
    assert on_stand_in(x + c) and on_stand_in(x.detach()) and on_stand_in(x.clone())
    assert on_stand_in(torch.zeros_like(x)) and on_stand_in(x.new_zeros(3))
    assert on_stand_in(x.double()) and on_stand_in(x.sum(0))
    assert x.device == STAND_IN and c.device == torch.device("cpu")
    assert on_stand_in(torch.zeros(2, device=x.device))
    assert x.to(dev) is x  # already there
    moved = c.to(dev)
    assert moved is not c and on_stand_in(moved) and not on_stand_in(c)
    back = x.to("cpu", non_blocking=True)
    assert back is not x and not on_stand_in(back)
    assert not on_stand_in(torch.zeros_like(x, device="cpu"))
    c.add_(x)  # in-place with a device operand
    assert on_stand_in(c)
    z = torch.zeros(6)
    z.copy_(x, non_blocking=True)
    assert not on_stand_in(z)  # a copy_ keeps the destination's device
    assert on_stand_in(torch.stack([x, x])) and on_stand_in(torch.cat([z, x]))


def test_device_to_host_and_host_to_device_copies(dev):
    x = torch.arange(4.0, device=dev)
    host = torch.zeros(4)
    pinned_like = torch.zeros(4)
    with no_host_sync() as g:
        x.to("cpu")  # s:to_cpu
        x.numpy()  # s:numpy
        x.tolist()  # s:tolist
        host.copy_(x)  # s:copy_d2h
        x.to("cpu", non_blocking=True)
        host.copy_(x, non_blocking=True)
        host.to(dev)  # s:to_dev
        pinned_like.to(dev, non_blocking=True)
        x.copy_(host)  # s:copy_h2d
        torch.as_tensor([1, 2], device=dev)  # s:as_tensor
        x.new_tensor([1.0])  # s:new_tensor
        torch.as_tensor(x, device=dev)  # data already on the device: no copy
        torch.zeros(3, device=dev)
        torch.full((2,), 7.0, device=dev)
    assert kinds_and_lines(g.events) == [
        ("d2h", line_of("s:to_cpu")),
        ("d2h", line_of("s:numpy")),
        ("d2h", line_of("s:tolist")),
        ("d2h", line_of("s:copy_d2h")),
        ("h2d", line_of("s:to_dev")),
        ("h2d", line_of("s:copy_h2d")),
        ("h2d", line_of("s:as_tensor")),
        ("h2d", line_of("s:new_tensor")),
    ]


def test_more_data_dependent_ops(dev):
    x = torch.tensor([0.0, 1.0, 2.0, 0.0, 3.0], device=dev)
    i = torch.tensor([0, 2, 2, 1], device=dev)
    mask = x > 0
    with no_host_sync() as g:
        torch.masked_select(x, mask)  # s:masked_select
        torch.bincount(i)  # s:bincount
        torch.repeat_interleave(i, i)  # s:repeat
        torch.repeat_interleave(i, i, output_size=5)
        torch.repeat_interleave(x, 2)
        x[mask] = 0.0  # s:index_put
        torch.equal(x, x + 0)  # s:equal
        torch.equal(x, x)  # the same view: CUDA answers True without reading the data
        torch.equal(x, x[:2])  # sizes differ: False without reading
        torch.allclose(x, x)  # s:allclose
        torch.unique_consecutive(i)  # s:unique_consecutive
        x.nonzero()  # s:nonzero_method
        torch.where(mask, x, 0.0)
        x.masked_fill_(mask, 1.0)
        torch.nonzero_static(x, size=5)
        x[i]  # integer index: no sync
        x.argmax()
        torch.topk(x, 2)
    assert kinds_and_lines(g.events) == [
        ("dynamic-shape", line_of("s:masked_select")),
        ("dynamic-shape", line_of("s:bincount")),
        ("dynamic-shape", line_of("s:repeat")),
        ("dynamic-shape", line_of("s:index_put")),
        ("item", line_of("s:equal")),
        ("item", line_of("s:allclose")),
        ("dynamic-shape", line_of("s:unique_consecutive")),
        ("dynamic-shape", line_of("s:nonzero_method")),
    ]


def test_nested_syncs_of_one_call_are_reported_once(dev):
    x = torch.randn(3, 4, device=dev)
    s = torch.tensor(1.5, device=dev)
    a = torch.tensor(2.0, device=dev)
    with no_host_sync() as g:
        print(x)  # s:print_once
        text = f"{s:.2f}"  # s:format
        r = repr(x)  # s:repr
        both = a.item() + s.item()  # s:two
    assert kinds_and_lines(g.events) == [
        ("d2h", line_of("s:print_once")),
        ("d2h", line_of("s:format")),
        ("d2h", line_of("s:repr")),
        ("item", line_of("s:two")),
        ("item", line_of("s:two")),
    ]
    del text, r, both


def _helper_reading(t):
    return t.sum().item()  # s:helper


def test_user_frame_is_the_innermost_outside_torch(dev):
    x = torch.ones(3, device=dev)
    with no_host_sync() as g:
        _helper_reading(x)
    assert kinds_and_lines(g.events) == [("item", line_of("s:helper"))]


def test_warn_mode_issues_sync_warnings(dev):
    x = torch.ones(3, device=dev)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with no_host_sync(mode="warn") as g:
            x.sum().item()  # s:warn
    sync_warnings = [w for w in caught if issubclass(w.category, SyncWarning)]
    assert len(sync_warnings) == 1 and len(g.events) == 1
    w = sync_warnings[0]
    assert w.filename == __file__ and w.lineno == line_of("s:warn")
    assert "Tensor.item" in str(w.message)


def test_error_mode_raises_at_the_sync(dev):
    x = torch.ones(3, device=dev)
    with pytest.raises(HostSyncError) as info:
        with no_host_sync(mode="error"):
            y = x * 2
            y.sum().item()  # s:error
            pytest.fail("not reached")
    message = str(info.value)
    assert f"{__file__}:{line_of('s:error')}" in message
    assert "item (Tensor.item)" in message and "syncfree.to_host" in message
    assert [ev.lineno for ev in info.value.events] == [line_of("s:error")]


def test_error_mode_stops_before_the_op_runs(dev):
    x = torch.tensor([1.0, -1.0], device=dev)
    with pytest.raises(HostSyncError, match="dynamic-shape"):
        with no_host_sync(mode="error"):
            x[x > 0] = 5.0
    assert x.tolist() == [1.0, -1.0]


def test_report_and_check(dev):
    x = torch.ones(2, device=dev)
    with no_host_sync() as g:
        pass
    g.check()
    assert g.report() == "no host sync"
    with no_host_sync() as g:
        x.sum().item()  # s:check
    assert g.report().startswith("1 host sync:")
    with pytest.raises(HostSyncError, match=f":{line_of('s:check')}: item"):
        g.check()
    g.clear()
    g.check()


def test_nested_guards_report_to_the_innermost(dev):
    x = torch.ones(2, device=dev)
    with no_host_sync() as outer:
        x.sum().item()  # s:outer
        with no_host_sync() as inner:
            x.sum().item()  # s:inner
    assert kinds_and_lines(outer.events) == [("item", line_of("s:outer"))]
    assert kinds_and_lines(inner.events) == [("item", line_of("s:inner"))]


def test_guard_enters_the_stand_in_itself():
    with no_host_sync() as g:
        x = torch.ones(3, device=STAND_IN)
        x.sum().item()  # s:self
    assert kinds_and_lines(g.events) == [("item", line_of("s:self"))]


def test_nothing_stays_active_after_exit(dev):
    from torch.overrides import _get_current_function_mode
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    before = (_get_current_function_mode(), _get_current_dispatch_mode())
    with no_host_sync():
        pass
    assert (_get_current_function_mode(), _get_current_dispatch_mode()) == before
    x = torch.ones(2, device=dev)
    assert on_stand_in(x)
    with no_host_sync() as g:
        pass
    x.sum().item()  # outside any guard: not recorded anywhere
    assert g.events == []


def test_no_modes_outside_any_context():
    from torch.overrides import _get_current_function_mode
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    with stand_in():
        with no_host_sync():
            pass
    assert _get_current_function_mode() is None and _get_current_dispatch_mode() is None
    assert torch._C._group_tensors_by_device_and_dtype is not sg._group_tensors_by_device_and_dtype


def test_invalid_arguments():
    with pytest.raises(ValueError, match="mode"):
        no_host_sync(mode="loud")
    with pytest.raises(ValueError, match="device"):
        no_host_sync(device="meta")


def test_sync_event_str():
    ev = SyncEvent("item", "Tensor.item", "train.py", 12, "detail")
    assert str(ev) == "train.py:12: item (Tensor.item)"
