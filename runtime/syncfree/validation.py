"""When value errors are reported: ``"deferred"`` (the default, no sync) or ``"eager"`` (at ``update``).

Value errors (labels out of range or not integral, NaN under ``nan_strategy="error"``) cannot be
seen without reading device data. By default they are counted on the device and reported where
the host reads values anyway: :func:`syncfree.to_host`, ``compute(check=True)`` and the Lightning
callback :class:`syncfree.lightning.EpochMetrics` (the counts travel in the same transfer as the
values). ``update`` and ``compute`` never sync.

``syncfree.validate("eager")`` makes every ``update``/``forward`` (of a metric or a collection)
read the batch's counts to the host and raise (``"error"`` checks) or warn (``"warn"`` checks)
at once, like torchmetrics' argument validation, before the batch touches the states. That is a
host sync per update: use it in tests and while debugging, not in training loops. It is a global
switch, and a context manager that restores the previous mode::

    with syncfree.validate("eager"):
        metric.update(preds, target)   # ValueError here on a bad label
"""

from __future__ import annotations

from typing import Any, Optional

MODES = ("deferred", "eager")
_mode = "deferred"


def validation_mode() -> str:
    """The current mode: ``"deferred"`` or ``"eager"``."""
    return _mode


def eager() -> bool:
    """Whether ``update`` reports value errors now (a host sync per update)."""
    return _mode == "eager"


class validate:  # noqa: N801 - used as a function: syncfree.validate("eager")
    """Set the validation mode (see the module docstring); as a context manager, restore the
    previous mode on exit."""

    def __init__(self, mode: str) -> None:
        global _mode
        if mode not in MODES:
            raise ValueError(f"syncfree.validate: mode must be 'eager' or 'deferred', got {mode!r}")
        self.previous: Optional[str] = _mode
        _mode = mode

    def __enter__(self) -> "validate":
        return self

    def __exit__(self, *exc: Any) -> None:
        global _mode
        if self.previous is not None:
            _mode = self.previous
