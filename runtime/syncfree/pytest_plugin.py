"""pytest plugin of syncfree: assert that a test makes no host sync.

Loaded automatically (``pytest11`` entry point) wherever syncfree is installed, so it imports
neither torch nor syncfree.guard until a test asks for one of its fixtures or its marker.

Marker::

    @pytest.mark.no_host_sync            # or no_host_sync(mode="error", device=None)
    def test_step(accelerator_device):
        model = Net().to(accelerator_device)   # fixtures/set-up are not guarded
        ...                                    # the test body is: any host sync fails the test

A marked test that takes the ``host_sync_step`` fixture guards only its step; the rest of the body
is set-up (moving a model to the device there does not fail the test)::

    @pytest.mark.no_host_sync
    def test_train_step(host_sync_step, accelerator_device):
        model = Net().to(accelerator_device)   # set-up: not guarded
        with host_sync_step():                 # guarded, as many times as the test enters it
            train_step(model)

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


def _marker_guard(marker):
    """A guard with the marker's arguments."""
    from syncfree import guard

    kwargs = dict(marker.kwargs)
    mode = kwargs.pop("mode", marker.args[0] if marker.args else "record")
    device = kwargs.pop("device", None)
    return guard.no_host_sync(mode, device, **kwargs)


class _Steps:
    """The guards of the ``with host_sync_step():`` blocks of one test."""

    def __init__(self, marker) -> None:
        self.marker = marker
        self.guards: list = []

    def __call__(self):
        g = _marker_guard(self.marker)
        self.guards.append(g)
        return g


_STEPS = pytest.StashKey[_Steps]()


@pytest.fixture
def host_sync_step(request):
    """Under ``@pytest.mark.no_host_sync``: ``with host_sync_step(): ...`` is the guarded step."""
    marker = request.node.get_closest_marker("no_host_sync")
    if marker is None:
        raise pytest.UsageError(
            f"{request.node.nodeid}: the host_sync_step fixture guards the step of a test marked "
            "@pytest.mark.no_host_sync; add the marker (or use the no_host_sync fixture)"
        )
    steps = _Steps(marker)
    request.node.stash[_STEPS] = steps
    return steps


def _fail(pyfuncitem, guards) -> None:
    events = [ev for g in guards for ev in g.events]
    if not events:
        return
    g = guards[0]
    g.events = events
    report = g.report(relative_to=pyfuncitem.config.rootpath)
    pytest.fail(
        f"{pyfuncitem.nodeid} made host syncs (syncfree.guard, {g.device}):\n{report}",
        pytrace=False,
    )


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    marker = pyfuncitem.get_closest_marker("no_host_sync")
    if marker is None:
        return (yield)

    steps = pyfuncitem.stash.get(_STEPS, None)
    if steps is not None:
        # only the `with host_sync_step():` blocks are guarded; on the stand-in, the set-up
        # around them still puts tensors on the device
        from syncfree import guard

        stand_in = _marker_guard(marker).device.type != "cuda"
        if stand_in:
            with guard.stand_in():
                result = yield
        else:
            result = yield
        if not steps.guards:
            pytest.fail(
                f"{pyfuncitem.nodeid} takes host_sync_step but never entered "
                "`with host_sync_step():`, so nothing was guarded",
                pytrace=False,
            )
        _fail(pyfuncitem, steps.guards)
        return result

    g = _marker_guard(marker)
    with g:  # on the CPU stand-in this also keeps tensors created in the body tagged
        result = yield
    _fail(pyfuncitem, [g])
    return result
