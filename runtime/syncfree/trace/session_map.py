"""CUDA on the stand-in for a whole interactive session (``%sync_stand_in on`` in a notebook).

A notebook sets up its model in one cell and trains in another; the traced cell alone cannot put
the model on the stand-in.  While this map is on, every cell runs as ``python -m syncfree.trace``
runs a script on a CPU-only machine: ``"cuda"`` goes to the stand-in and
``torch.cuda.is_available()`` answers True to the user's code (``cuda_map``), so the set-up cells
create their tensors on the device.  A traced cell then records ``torch.cuda.synchronize()`` into
its own guard through :meth:`SessionMap.recording`.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..guard import stand_in
from .cuda_map import CudaOnStandIn


class SessionMap:
    """The stand-in and the CUDA map, entered until :meth:`off` (not a ``with`` block: cells
    run between ``on`` and ``off``)."""

    def __init__(self) -> None:
        self._entered: Optional[tuple[stand_in, CudaOnStandIn]] = None
        self._record: Optional[Callable[[], None]] = None

    @property
    def active(self) -> bool:
        return self._entered is not None

    def _synchronize(self) -> None:
        if self._record is not None:
            self._record()

    def on(self) -> bool:
        """Enter the map; False when it was on already."""
        if self._entered is not None:
            return False
        device = stand_in()
        device.__enter__()
        mapping = CudaOnStandIn(self._synchronize)
        try:
            mapping.__enter__()
        except BaseException:
            device.__exit__(None, None, None)
            raise
        self._entered = (device, mapping)
        return True

    def off(self) -> bool:
        """Leave the map; False when it was off."""
        if self._entered is None:
            return False
        device, mapping = self._entered
        self._entered = None
        try:
            mapping.__exit__(None, None, None)
        finally:
            device.__exit__(None, None, None)
        return True

    def recording(self, record: Optional[Callable[[], None]]) -> None:
        """Where ``torch.cuda.synchronize()`` calls go (a traced cell's guard), or nowhere (None)."""
        self._record = record


SESSION_MAP = SessionMap()
