"""Running-average meters whose ``update(value, n)`` only adds, multiplies and divides the value.

The SFL101 fix for ``meter.update(loss.item(), n)`` passes a float64 device tensor instead of the
Python float when the meter's class is one of these (or a class of the same file that
``analysis/meter_class.py`` proves has this shape): the class then computes the same doubles on the
device, and the places that read the meter get the numbers back. A shape says which method takes
the value, which attributes end up holding it (or sums and ratios of it), whether they start as
the int ``0`` and which other methods an instance may be asked to run. Checked by
``tests/unit/test_meter_fix.py`` against classes written to the same shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class MeterShape:
    """What ``update`` does with its value, in the terms the fix's proof needs."""

    #: the method that takes the value, and the value's (position after ``self``, keyword)
    method: str
    value: Tuple[int, str]
    #: the count that weights the value (``n``), when the method has one
    weight: Optional[Tuple[int, str]]
    #: attributes (and properties) that hold the value, a sum of values or arithmetic of them (sorted:
    #: a shape's ``repr`` is part of cache keys)
    fields: Tuple[str, ...]
    #: those attributes hold the int ``0`` until the first update (after ``reset()`` too)
    int_start: bool
    #: other methods an instance may run: they read none of ``fields`` (sorted)
    methods: Tuple[str, ...]
    #: fields computed by dividing by a host number (``avg = sum / count``): CUDA multiplies by the
    #: rounded reciprocal instead, so on the device they may differ from Python's in the last bit
    #: (sorted)
    divided: Tuple[str, ...] = ()


#: timm's ``AverageMeter``: ``reset`` sets ``val``, ``avg``, ``sum``, ``count`` to ``0``;
#: ``update(val, n=1)`` sets ``val``, adds ``val * n`` to ``sum``, ``n`` to ``count`` and sets
#: ``avg = sum / count if count else 0``
_TIMM_AVERAGE_METER = MeterShape("update", (0, "val"), (1, "n"), ("avg", "sum", "val"), True, ("reset",), ("avg",))

#: library meters by the dotted names a file imports them by
KNOWN_METERS: Dict[str, MeterShape] = {
    "timm.utils.AverageMeter": _TIMM_AVERAGE_METER,
    "timm.utils.metrics.AverageMeter": _TIMM_AVERAGE_METER,
}
