"""pytest plugin of syncfree: assert that a test makes no host sync.

Loaded automatically (``pytest11`` entry point) wherever syncfree is installed, so it imports
neither torch nor syncfree.guard until a test asks for one of its fixtures or its marker.

Marker::

    @pytest.mark.no_host_sync            # or no_host_sync(mode="error", device=None)
    def test_step(accelerator_device):
        model = Net().to(accelerator_device)   # fixtures/set-up are not guarded
        ...                                    # the test body is: any host sync fails the test

Fixtures:

* ``accelerator_device``: the device to put tensors on (CUDA when available, else the CPU
  stand-in ``cpu:0``, which is kept active for the whole test so that tensors put on it are
  tagged).
* ``no_host_sync``: a factory of guards (same arguments as ``syncfree.guard.no_host_sync``)::

      def test_update(no_host_sync, accelerator_device):
          x = torch.randn(8, device=accelerator_device)
          with no_host_sync() as g:
              metric.update(x)
          assert not g.events, g.report()
"""

from __future__ import annotations

import pytest

_MARKER_HELP = (
    "no_host_sync(mode='record', device=None): run the test body under syncfree's host-sync "
    "guard and fail the test, listing file:line of each event, if it makes the host wait for "
    "the accelerator (CPU stand-in device when no GPU)."
)


def pytest_configure(config):
    config.addinivalue_line("markers", _MARKER_HELP)


@pytest.fixture
def accelerator_device():
    """The device tests should put tensors on (CUDA, or the active CPU stand-in)."""
    from syncfree import guard

    dev = guard.accelerator_device()
    if dev.type == "cuda":
        yield dev
    else:
        with guard.stand_in() as stand_in_dev:
            yield stand_in_dev


@pytest.fixture
def no_host_sync(accelerator_device):
    """A factory: ``with no_host_sync(mode="record", device=None) as g: ...`` then ``g.events``."""
    from syncfree import guard

    def factory(mode: str = "record", device=None, **kwargs):
        return guard.no_host_sync(mode, device, **kwargs)

    return factory


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    marker = pyfuncitem.get_closest_marker("no_host_sync")
    if marker is None:
        return (yield)

    from syncfree import guard

    kwargs = dict(marker.kwargs)
    mode = kwargs.pop("mode", marker.args[0] if marker.args else "record")
    device = kwargs.pop("device", None)
    g = guard.no_host_sync(mode, device, **kwargs)
    with g:  # on the CPU stand-in this also keeps tensors created in the body tagged
        result = yield
    if g.events:
        report = g.report(relative_to=pyfuncitem.config.rootpath)
        pytest.fail(
            f"{pyfuncitem.nodeid} made host syncs (syncfree.guard, {g.device}):\n{report}",
            pytrace=False,
        )
    return result
