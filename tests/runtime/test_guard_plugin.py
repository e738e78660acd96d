"""The syncfree pytest plugin (marker ``no_host_sync``, fixtures ``no_host_sync`` and
``accelerator_device``), driven through pytest's own ``pytester``."""

import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

torch = pytest.importorskip("torch")
# pytester's in-process runs restore sys.modules afterwards: import what the inner runs import
# (entering torch modes imports torch._dynamo) so that it is not imported twice.
import torch._dynamo  # noqa: E402,F401,F811
import syncfree.guard  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _stand_in_by_default(monkeypatch):
    """These tests exercise the CPU stand-in, also on a machine with CUDA."""
    if torch.cuda.is_available():
        from syncfree import guard

        monkeypatch.setattr(guard, "accelerator_device", lambda: guard.STAND_IN)


def _line(source: str, marker: str) -> int:
    for i, text in enumerate(textwrap.dedent(source).strip().splitlines(), start=1):
        if text.rstrip().endswith(marker):
            return i
    raise AssertionError(marker)


MARKED = """
import pytest
import torch


@pytest.mark.no_host_sync
def test_reads_a_value(accelerator_device):
    x = torch.randn(4, device=accelerator_device)
    y = x * 2
    value = y.sum().item()  # SYNC-1
    if y.max() > 0:  # SYNC-2
        value += 1


@pytest.fixture
def model(accelerator_device):
    # set-up in a fixture: not guarded (moving a model is a host-to-device copy)
    return torch.nn.Linear(4, 2).to(accelerator_device)


@pytest.mark.no_host_sync
def test_clean_step(model, accelerator_device):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4, device=accelerator_device)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    host = torch.ones(3)
    assert host.sum().item() == 3.0  # CPU-only tensor: not a sync


@pytest.mark.no_host_sync
def test_without_fixture():
    x = torch.ones(3, device="cpu:0")
    x.tolist()  # SYNC-3


@pytest.mark.no_host_sync(mode="error")
def test_error_mode(accelerator_device):
    x = torch.ones(3, device=accelerator_device)
    x.sum().item()  # SYNC-4
    raise AssertionError("not reached")
"""


def test_marker_fails_tests_that_sync_and_shows_the_lines(pytester):
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=3)
    path = "test_marked.py"  # reported relative to the rootdir
    out = result.stdout.str()
    assert f"{path}:{_line(MARKED, '# SYNC-1')}: item (Tensor.item)" in out
    assert f"{path}:{_line(MARKED, '# SYNC-2')}: item (Tensor.__bool__)" in out
    assert f"{path}:{_line(MARKED, '# SYNC-3')}: d2h (Tensor.tolist)" in out
    assert "HostSyncError" in out and f"{path}:{_line(MARKED, '# SYNC-4')}: item" in out
    assert f" {path}:{_line(MARKED, '# SYNC-1')}: item" in out  # not an absolute path
    assert "made host syncs" in out
    result.stdout.fnmatch_lines(["*PASSED*test_clean_step*"])


def test_marker_is_registered(pytester):
    pytester.makepyfile(test_m="def test_x(): pass")
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.no_host_sync*"])
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_fixtures(pytester):
    pytester.makepyfile(
        test_fixture="""
        import torch
        from syncfree.guard import STAND_IN, on_stand_in

        def test_record(no_host_sync, accelerator_device):
            assert accelerator_device == STAND_IN
            x = torch.randn(4, device=accelerator_device)
            assert on_stand_in(x)
            with no_host_sync() as g:
                y = x + 1
                y.cpu()
            assert [ev.kind for ev in g.events] == ["d2h"]
            with no_host_sync() as g:
                y = x + 1
            assert g.events == []

        def test_stand_in_ends_with_the_test():
            from torch.utils._python_dispatch import _get_current_dispatch_mode
            assert _get_current_dispatch_mode() is None
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_loading_the_plugin_does_not_import_torch(pytester):
    pytester.makepyfile(
        test_light="""
        import sys

        def test_torch_not_imported(request):
            assert request.config.pluginmanager.hasplugin("syncfree")
            assert "syncfree.pytest_plugin" in sys.modules
            assert "torch" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_importing_the_plugin_module_does_not_import_torch():
    code = "import sys, syncfree.pytest_plugin; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
