"""``to_host``: every result and every deferred check, read with one device-to-host transfer."""

from __future__ import annotations

import warnings
from array import array
from typing import Any, Dict, List, Protocol, Sequence, Tuple, runtime_checkable

import torch
from torch import Tensor

# (metric name, counter tensor, policy "error" | "warn", message template)
Counter = Tuple[str, Tensor, str, str]


@runtime_checkable
class Readable(Protocol):
    """A metric or a collection, as ``to_host`` reads it."""

    def results_and_checks(self) -> Tuple[Any, List[Counter]]:
        """The results (device tensors, nested) and the check counters of the same states."""


class _Leaf:
    """Placeholder for the tensor at ``index`` in the flat read."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _read_host(flat: Tensor) -> List[int]:
    """The single device-to-host transfer of ``to_host`` (one call per device).

    ``flat`` is int64: integer results as themselves (exact, even above 2**53), floating ones as
    the bit patterns of their float64 values (see :func:`_pack`).
    """
    return flat.tolist()


def _plan(x: Any, leaves: List[Tensor], checks: List[Tuple[str, str, str, int]]) -> Any:
    """Replace every tensor by a ``_Leaf``; collect results and check counters."""
    if isinstance(x, Readable):
        result, counters = x.results_and_checks()
        _plan_checks(counters, leaves, checks)
        return _plan(result, leaves, checks)
    if isinstance(x, Tensor):
        leaves.append(x.detach())
        return _Leaf(len(leaves) - 1)
    if isinstance(x, dict):
        return {k: _plan(v, leaves, checks) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plan(v, leaves, checks) for v in x]
    return x


def _plan_checks(counters: Sequence[Counter], leaves: List[Tensor], checks: List[Tuple[str, str, str, int]]) -> None:
    for name, counter, policy, message in counters:
        leaves.append(counter.detach())
        checks.append((name, policy, message, len(leaves) - 1))


def _integral(tensor: Tensor) -> bool:
    return not (tensor.is_floating_point() or tensor.is_complex())


def _pack(tensor: Tensor) -> Tensor:
    """``tensor`` flattened into int64: integers exactly, floats as float64 bit patterns."""
    flat = tensor.reshape(-1)
    if _integral(flat):
        return flat.to(torch.int64)
    return flat.to(torch.float64).view(torch.int64)


def _as_floats(bits: List[int]) -> List[float]:
    """float64 values from their int64 bit patterns (on the host, no torch)."""
    return array("d", array("q", bits).tobytes()).tolist()


def _to_python(values: List[Any], tensor: Tensor) -> Any:
    if not _integral(tensor):
        values = _as_floats(values)
    if tensor.ndim == 0:
        return values[0]

    def nest(flat: List[Any], shape: Tuple[int, ...]) -> List[Any]:
        if len(shape) == 1:
            return list(flat)
        step = len(flat) // shape[0] if shape[0] else 0
        return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]

    return nest(values, tuple(tensor.shape))


def _read_all(leaves: List[Tensor]) -> List[Any]:
    """Python values of ``leaves``, with one transfer per device (one in the usual case)."""
    by_device: Dict[torch.device, List[int]] = {}
    for i, t in enumerate(leaves):
        by_device.setdefault(t.device, []).append(i)
    out: List[Any] = [None] * len(leaves)
    for device, indices in by_device.items():
        flat = torch.cat([_pack(leaves[i]) for i in indices])
        values = _read_host(flat)
        offset = 0
        for i in indices:
            n = leaves[i].numel()
            out[i] = _to_python(values[offset:offset + n], leaves[i])
            offset += n
    return out


def _fill(template: Any, values: List[Any]) -> Any:
    if isinstance(template, _Leaf):
        return values[template.index]
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    return template


def report_checks(checks: List[Tuple[str, str, str, int]], values: List[Any]) -> None:
    """Warn for ``"warn"`` checks with a non-zero count; raise one ValueError for ``"error"`` ones."""
    errors = []
    for name, policy, message, index in checks:
        count = values[index]
        if not count:
            continue
        text = message.format(metric=name, count=count)
        if policy == "error":
            errors.append(text)
        else:
            warnings.warn(text, UserWarning, stacklevel=3)
    if errors:
        raise ValueError("; ".join(errors))


def report_counters(counters: Sequence[Counter]) -> None:
    """Read ``counters`` to the host (one transfer) and raise or warn as :func:`to_host` does."""
    leaves: List[Tensor] = []
    checks: List[Tuple[str, str, str, int]] = []
    _plan_checks(counters, leaves, checks)
    if leaves:
        report_checks(checks, _read_all(leaves))


def to_host(x: Any) -> Any:
    """Compute ``x`` on the device and return Python values with ONE device-to-host transfer.

    ``x`` is a metric, a ``MetricCollection``, a tensor, or a (nested) dict/list/tuple of them.
    0-d results become floats (exact ints for integer tensors), others nested lists; dicts and lists
    mirror the input. Pending syncs are waited for; metrics are computed as ``compute()`` does
    (global under ``sync_on_compute=True`` when distributed), and their check counters are read
    from the same (global) states. Deferred value checks (NaN counts, labels out
    of range) are read in the same transfer, then reported: ``"warn"`` checks warn, ``"error"``
    checks raise ``ValueError`` naming the metric and the count.
    """
    leaves: List[Tensor] = []
    checks: List[Tuple[str, str, str, int]] = []
    template = _plan(x, leaves, checks)
    values = _read_all(leaves) if leaves else []
    report_checks(checks, values)
    return _fill(template, values)
