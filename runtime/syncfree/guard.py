"""Detect operations that make the host wait for the accelerator ("host syncs").

Usage::

    from syncfree.guard import no_host_sync, accelerator_device

    dev = accelerator_device()          # cuda when available, else the CPU stand-in
    with no_host_sync() as g:           # mode="record" | "warn" | "error"
        train_step()
    assert not g.events, g.report()

Two back ends, chosen from ``device`` (default: CUDA when available):

* **CUDA**: ``torch.cuda.set_sync_debug_mode("warn")`` (``"error"`` in error mode) with the
  warnings it emits captured, plus the CUDA trace hooks (device, stream and event
  synchronization), which also see ``torch.cuda.synchronize()`` and ``Event.synchronize()``.
* **Stand-in** (CPU-only machines): the device ``torch.device("cpu", 0)`` plays the
  accelerator.  CPU tensors cannot carry a device index, so tensors created on or moved to the
  stand-in are *tagged*: the tag is put on the tensor's storage (weakly, with a finalizer), so
  views, ``.data``, ``nn.Parameter`` wrappers and ``Module.to()`` all share it.  A
  ``TorchFunctionMode`` handles creation/moves (``device=`` arguments, ``.to()``, ``.cpu()``,
  ``torch.tensor(data, device=...)``, ``Tensor.device`` which answers ``cpu:0`` for tagged
  tensors) and a ``TorchDispatchMode`` propagates the tag through every aten op and records the
  ops that would synchronize on a real accelerator (``_local_scalar_dense``, device-to-host
  copies, ``nonzero``, boolean-mask indexing, ``unique``, ...).  Tensors that were never put on the
  stand-in, and Python numbers, are never reported.

Each :class:`SyncEvent` carries the user's ``file:line``: the innermost stack frame outside torch,
syncfree and the Python standard library.  Several syncs made while handling one call from that
line (``print(t)`` reads many elements) are reported once.
"""

from __future__ import annotations

import functools
import os
from typing import Optional
import sys
import sysconfig
import threading
import types
import warnings
import weakref
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "HostSyncError",
    "HostSyncGuard",
    "STAND_IN",
    "SyncEvent",
    "SyncWarning",
    "accelerator_device",
    "no_host_sync",
    "on_stand_in",
    "stand_in",
]

#: The device that plays the accelerator on a machine without one.
STAND_IN = torch.device("cpu", 0)

MODES = ("record", "warn", "error")

_ADVICE = {
    "item": "keep the value on the device (tensor ops, torch.where, masked_fill) and read "
    "results once, outside the step, with syncfree.to_host()",
    "d2h": "accumulate on the device and read once with syncfree.to_host(), or copy with "
    ".to('cpu', non_blocking=True) into pinned memory",
    "h2d": "create the tensor on the device (torch.zeros/full(..., device=dev)), pass Python "
    "numbers as scalars, or copy from pinned memory with non_blocking=True",
    "dynamic-shape": "use a fixed-shape form: torch.where/masked_fill instead of boolean "
    "indexing, nonzero_static, scatter_add_/bincount with a known size, "
    "repeat_interleave(output_size=...)",
    "synchronize": "remove the explicit synchronize from the step; synchronize once when "
    "the results are read",
    "sync": "find the operation on this line that reads device data on the host and keep "
    "it on the device",
}


# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class SyncEvent:
    """One operation that makes the host wait for the device."""

    kind: str  # item | d2h | h2d | dynamic-shape | synchronize | sync
    op: str  # the user-level call, e.g. "Tensor.item", or the aten op
    filename: str
    lineno: int
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}: {self.kind} ({self.op})"


class SyncWarning(UserWarning):
    """Issued by a guard in ``mode="warn"`` for each host sync."""


class HostSyncError(RuntimeError):
    """Raised by a guard in ``mode="error"`` at the host sync (or by :meth:`HostSyncGuard.check`)."""

    def __init__(self, message: str, events: list[SyncEvent] | None = None):
        super().__init__(message)
        self.events = list(events or [])


def _error_message(ev: SyncEvent) -> str:
    advice = _ADVICE.get(ev.kind, _ADVICE["sync"])
    text = f"{ev}: host sync: the host waits for the accelerator here"
    if ev.detail:
        text += f" ({ev.detail})"
    return f"{text}. To avoid it, {advice}."


# --------------------------------------------------------------------------- user location


# Libraries whose syncs are reported at the user's line that called into them.
DEFAULT_LIBRARIES = ("torchmetrics", "lightning_utilities", "lightning", "pytorch_lightning", "accelerate")


def _package_dir(name: str) -> Optional[str]:
    """The folder of an installed top-level package, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.abspath(list(spec.submodule_search_locations)[0]) + os.sep


def add_library(*names: str) -> None:
    """Treat these installed packages as library code: events inside them are reported at the
    user's line that called into them (as for torch). torchmetrics, Lightning and accelerate are
    included by default."""
    global _LIBS
    found = tuple(d for d in (_package_dir(n) for n in names) if d and d not in _LIBS)
    if found:
        _LIBS = _LIBS + found
        _is_library.cache_clear()


def _library_prefixes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    syncfree_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
    stdlib = set()
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            stdlib.add(os.path.abspath(p) + os.sep)
    stdlib.add(os.path.dirname(os.path.abspath(os.__file__)) + os.sep)
    return (torch_dir, syncfree_dir), tuple(stdlib)


_LIBS, _STDLIB = _library_prefixes()


@functools.lru_cache(maxsize=4096)
def _is_library(filename: str) -> bool:
    if filename.startswith("<frozen"):
        return True
    path = os.path.abspath(filename) if not filename.startswith("<") else filename
    if path.startswith(_LIBS):
        return True
    for p in _STDLIB:
        if path.startswith(p):
            rest = path[len(p):]
            # site-packages may live inside the stdlib folder: those are not stdlib.
            return not (rest.startswith("site-packages") or rest.startswith("dist-packages"))
    return False


add_library(*DEFAULT_LIBRARIES)


def _user_frame(frame=None):
    """(innermost frame outside torch/syncfree/stdlib, the frame it called) or (None, None)."""
    f = frame if frame is not None else sys._getframe(1)
    child = None
    while f is not None:
        if not _is_library(f.f_code.co_filename):
            return f, child
        child = f
        f = f.f_back
    return None, None


# --------------------------------------------------------------------------- guard object

_RECORDERS: list[HostSyncGuard] = []  # active guards, innermost last (all threads)
_RECORDERS_LOCK = threading.Lock()


def _current_recorder(backend: str) -> HostSyncGuard | None:
    for g in reversed(_RECORDERS):
        if g._backend == backend:
            return g
    return None


def _resolve_device(device) -> torch.device:
    if device is None:
        return accelerator_device()
    dev = torch.device(device)
    if dev.type == "cuda":
        if dev.index is None and torch.cuda.is_available():
            dev = torch.device("cuda", torch.cuda.current_device())
        return dev
    if dev.type == "cpu":
        return STAND_IN
    raise ValueError(f"no_host_sync: unsupported device {device!r} (use cuda or the CPU stand-in)")


class HostSyncGuard:
    """Context manager that detects host syncs; see the module docstring.

    ``mode``: ``"record"`` collects :class:`SyncEvent` objects in :attr:`events`; ``"warn"`` also
    issues a :class:`SyncWarning` per event; ``"error"`` raises :class:`HostSyncError` at the event
    (on CUDA, syncs seen only by the trace hooks, such as ``torch.cuda.synchronize()``, are raised
    when the block exits, because the hooks cannot interrupt the call).

    ``device``: ``None`` picks CUDA when available, else the CPU stand-in; ``"cuda"``/``"cuda:N"``
    or ``"cpu"``/``"cpu:0"`` force a back end.

    ``cuda_trace``: install the CUDA trace hooks (``torch.cuda.synchronize()``, stream and event
    synchronization).  Note: torch cannot switch its GPU trace off again, so once a CUDA guard
    with hooks has been entered, every CUDA event/allocation of the process calls a (cheap,
    empty when no guard is active) Python callback.  Pass ``cuda_trace=False`` to avoid that.

    Nested guards: an event goes to the innermost active guard of the same back end.
    """

    def __init__(self, mode: str = "record", device=None, *, cuda_trace: bool = True):
        if mode not in MODES:
            raise ValueError(f"no_host_sync: mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.device = _resolve_device(device)
        self.cuda_trace = cuda_trace
        self._backend = "cuda" if self.device.type == "cuda" else "stand-in"
        self.events: list[SyncEvent] = []
        self._active = False
        self._last_child = None  # dedupe: the library frame the last event came through
        self._last_frame = None
        self._last_lasti = -1
        self._last_source = None
        self._prev_debug_mode = None
        self._pending_error: SyncEvent | None = None

    # ---- context manager
    def __enter__(self) -> HostSyncGuard:
        if self._active:
            raise RuntimeError("this no_host_sync guard is already active")
        self._active = True
        if self._backend == "cuda":
            _cuda_enter(self)
        else:
            _engine_enter()
        with _RECORDERS_LOCK:
            _RECORDERS.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        with _RECORDERS_LOCK:
            for i in range(len(_RECORDERS) - 1, -1, -1):
                if _RECORDERS[i] is self:
                    del _RECORDERS[i]
                    break
        self._active = False
        self._last_child = self._last_frame = None
        if self._backend == "cuda":
            _cuda_exit(self)
            if exc is not None and isinstance(exc, RuntimeError) and _CUDA_SYNC_TEXT in str(exc):
                # torch's sync debug mode "error" raised inside the op: report it our way.
                frame = _innermost_user_frame_of(tb)
                ev = SyncEvent(
                    "sync",
                    "synchronizing CUDA operation",
                    frame[0] if frame else "<unknown>",
                    frame[1] if frame else 0,
                    "torch.cuda sync debug mode",
                )
                self.events.append(ev)
                raise HostSyncError(_error_message(ev), [ev]) from exc
            if exc is None and self._pending_error is not None:
                ev, self._pending_error = self._pending_error, None
                raise HostSyncError(_error_message(ev), [ev])
        else:
            _engine_exit()
        return False

    # ---- results
    def clear(self) -> None:
        self.events.clear()

    def report(self, relative_to=None) -> str:
        """One line per event; file names relative to ``relative_to`` (a folder) when inside it."""
        if not self.events:
            return "no host sync"
        n = len(self.events)
        lines = [f"{n} host sync{'s' if n != 1 else ''}:"]
        for ev in self.events:
            name = ev.filename
            if relative_to is not None and not name.startswith("<"):
                rel = os.path.relpath(name, os.fspath(relative_to))
                if not rel.startswith(os.pardir):
                    name = rel
            text = f"  {name}:{ev.lineno}: {ev.kind} ({ev.op})"
            lines.append(text + (f"  [{ev.detail}]" if ev.detail else ""))
        return "\n".join(lines)

    def check(self) -> None:
        """Raise :class:`HostSyncError` listing every recorded event, if any."""
        if self.events:
            raise HostSyncError(self.report(), self.events)

    def __repr__(self) -> str:
        return (
            f"HostSyncGuard(mode={self.mode!r}, device={str(self.device)!r}, "
            f"events={len(self.events)})"
        )

    # ---- recording
    def _record(self, kind: str, op: str, detail: str = "", source: str = "op") -> None:
        frame, child = _user_frame(sys._getframe(1))
        if child is not None and child is self._last_child:
            return  # one more sync inside the same user-level call
        lasti = frame.f_lasti if frame is not None else -1
        if (
            source == "cuda-warning"
            and self._last_source == "stream-trace"
            and frame is self._last_frame
            and lasti == self._last_lasti
        ):
            # the debug-mode warning of the stream synchronization just reported by the hooks
            self._last_source = source
            return
        self._last_child, self._last_frame = child, frame
        self._last_lasti, self._last_source = lasti, source
        if frame is not None:
            filename, lineno = frame.f_code.co_filename, frame.f_lineno
        else:
            filename, lineno = "<unknown>", 0
        ev = SyncEvent(kind, op, filename, lineno, detail)
        self.events.append(ev)
        if self.mode == "warn":
            warnings.warn_explicit(_error_message(ev), SyncWarning, filename, lineno or 1)
        elif self.mode == "error":
            if source in ("stream-trace", "device-trace", "event-trace"):
                if self._pending_error is None:
                    self._pending_error = ev
            else:
                raise HostSyncError(_error_message(ev), [ev])


def no_host_sync(mode: str = "record", device=None, *, cuda_trace: bool = True) -> HostSyncGuard:
    """A :class:`HostSyncGuard`; use it as ``with no_host_sync() as g: ...``."""
    return HostSyncGuard(mode, device, cuda_trace=cuda_trace)


def accelerator_device() -> torch.device:
    """The device tests should put tensors on: CUDA when available, else :data:`STAND_IN`."""
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return STAND_IN


def _innermost_user_frame_of(tb):
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not _is_library(name):
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found


# --------------------------------------------------------------------------- stand-in tags
# A tag marks a storage as living on the stand-in device.  Keyed by id() of the storage's
# Python object, which torch keeps alive (and identical) as long as the storage lives; the
# weakref callback drops the key when the storage dies, so a recycled id is never mistaken.

_TAGS: dict[int, weakref.ref] = {}


def _drop_tag(key: int, ref: weakref.ref) -> None:
    if _TAGS.get(key) is ref:
        del _TAGS[key]


def _tag_key(t: torch.Tensor):
    try:
        return t.untyped_storage()
    except Exception:  # no storage (sparse, nested, wrapper subclasses): tag the tensor itself
        return t


def _is_tagged(t: torch.Tensor) -> bool:
    if not _TAGS:
        return False
    k = _tag_key(t)
    r = _TAGS.get(id(k))
    return r is not None and r() is k


def _tag(t: torch.Tensor) -> None:
    k = _tag_key(t)
    key = id(k)
    r = _TAGS.get(key)
    if r is not None and r() is k:
        return
    _TAGS[key] = weakref.ref(k, functools.partial(_drop_tag, key))


def _untag(t: torch.Tensor) -> None:
    k = _tag_key(t)
    r = _TAGS.get(id(k))
    if r is not None and r() is k:
        del _TAGS[id(k)]


def _tag_outputs(out) -> None:
    if isinstance(out, torch.Tensor):
        _tag(out)
    elif isinstance(out, (tuple, list)):
        for o in out:
            if isinstance(o, torch.Tensor):
                _tag(o)


def _any_tagged(seq) -> bool:
    for a in seq:
        if isinstance(a, torch.Tensor):
            if _is_tagged(a):
                return True
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, torch.Tensor) and _is_tagged(b):
                    return True
    return False


def on_stand_in(t: torch.Tensor) -> bool:
    """Whether ``t`` lives on the CPU stand-in accelerator (its storage is tagged)."""
    return isinstance(t, torch.Tensor) and _is_tagged(t)


def _is_stand_in_device(dev) -> bool:
    if isinstance(dev, torch.device):
        return dev.type == "cpu" and dev.index is not None
    if isinstance(dev, str):
        return dev.startswith("cpu:")
    return False


def _is_host_device(dev) -> bool:
    if isinstance(dev, torch.device):
        return dev.type == "cpu" and dev.index is None
    return dev == "cpu"


# --------------------------------------------------------------------------- stand-in modes

_tls = threading.local()  # .depth, .modes, .func (torch function being handled)
_MethodWrapper = types.MethodWrapperType
_DEVICE_DESCR = torch._C.TensorBase.__dict__["device"]
_parse_to = torch._C._nn._parse_to


def _func_name(func) -> str:
    if func is None:
        return ""
    try:
        name = torch.overrides.resolve_name(func)
    except Exception:
        name = None
    if not name:
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    name = name.replace("TensorBase.", "Tensor.")
    if name.startswith("torch.Tensor."):
        name = name[len("torch."):]
    elif name.startswith("torch.functional."):
        name = "torch." + name[len("torch.functional."):]
    return name


def _record_stand_in(kind: str, aten_op: str, detail: str, func=None) -> None:
    rec = _current_recorder("stand-in")
    if rec is None:
        return
    user_func = func if func is not None else getattr(_tls, "func", None)
    op = _func_name(user_func) or aten_op
    if aten_op and aten_op not in op:
        detail = f"{aten_op}: {detail}" if detail else aten_op
    rec._record(kind, op, detail)


def _handle_device_get(func, args, kwargs):
    t = args[0]
    if isinstance(t, torch.Tensor) and _is_tagged(t):
        return STAND_IN
    return func(*args, **kwargs)


def _d2h_result(self: torch.Tensor, out):
    """Make the result of a device-to-host move a distinct, untagged host tensor."""
    if isinstance(out, torch.Tensor):
        try:
            same = out.untyped_storage() is self.untyped_storage()
        except Exception:
            same = out is self
        if same:
            out = out.clone()
        _untag(out)
    return out


def _handle_to(func, args, kwargs):
    self = args[0]
    rest = args[1:]
    kw = dict(kwargs)
    copy = bool(kw.pop("copy", False))
    try:
        if rest and isinstance(rest[0], torch.Tensor):
            other = rest[0]
            device = STAND_IN if _is_tagged(other) else other.device
            dtype = other.dtype
            non_blocking = bool(rest[1]) if len(rest) > 1 else bool(kw.get("non_blocking", False))
            memory_format = kw.get("memory_format")
        else:
            device, dtype, non_blocking, memory_format = _parse_to(*rest, **kw)
    except Exception:
        return func(*args, **kwargs)  # let torch raise its own error
    if device is None or not isinstance(self, torch.Tensor):
        return func(*args, **kwargs)
    tagged = _is_tagged(self)
    if _is_stand_in_device(device):
        if (
            tagged
            and not copy
            and (dtype is None or dtype == self.dtype)
            and memory_format in (None, torch.preserve_format)
        ):
            return self  # already there, like .to(cuda) of a cuda tensor
        out = func(*args, **kwargs)  # _to_copy(device=cpu:0): the dispatch mode records + tags
        _tag_outputs(out)
        return out
    if _is_host_device(device) and tagged:
        if not non_blocking:
            _record_stand_in("d2h", "", "copies device memory to the host", func)
        return _d2h_result(self, func(*args, **kwargs))
    return func(*args, **kwargs)


def _handle_cpu(func, args, kwargs):
    self = args[0]
    if isinstance(self, torch.Tensor) and _is_tagged(self):
        _record_stand_in("d2h", "", "copies device memory to the host", func)
        return _d2h_result(self, func(*args, **kwargs))
    return func(*args, **kwargs)


def _reader(detail):
    def handle(func, args, kwargs):
        self = args[0] if args else None
        if isinstance(self, torch.Tensor) and _is_tagged(self):
            _record_stand_in("d2h", "", detail, func)
        return func(*args, **kwargs)

    return handle


def _creator(func, args, kwargs):
    """torch.tensor / as_tensor / asarray: a host-to-device copy when the data is host data."""
    device = kwargs.get("device")
    if device is None or not _is_stand_in_device(device):
        return func(*args, **kwargs)
    data = args[0] if args else kwargs.get("data", kwargs.get("obj"))
    if not (isinstance(data, torch.Tensor) and _is_tagged(data)):
        _record_stand_in("h2d", "", "copies host data to the device", func)
    out = func(*args, **kwargs)
    _tag_outputs(out)
    return out


def _new_tensor(func, args, kwargs):
    self = args[0]
    device = kwargs.get("device")
    to_stand_in = _is_stand_in_device(device) if device is not None else _is_tagged(self)
    if not to_stand_in:
        return func(*args, **kwargs)
    data = args[1] if len(args) > 1 else kwargs.get("data")
    if not (isinstance(data, torch.Tensor) and _is_tagged(data)):
        _record_stand_in("h2d", "", "copies host data to the device", func)
    out = func(*args, **kwargs)
    _tag_outputs(out)
    return out


_FUNC_HANDLERS = {
    torch.Tensor.to: _handle_to,
    torch.Tensor.cpu: _handle_cpu,
    torch.Tensor.numpy: _reader("copies device memory to the host"),
    torch.Tensor.tolist: _reader("copies device memory to the host"),
    torch.Tensor.__array__: _reader("copies device memory to the host"),
    torch.Tensor.__reduce_ex__: _reader("serializing copies device memory to the host"),
    torch.Tensor.__repr__: _reader("printing/formatting a tensor reads its values on the host"),
    torch.Tensor.__format__: _reader("printing/formatting a tensor reads its values on the host"),
    torch.tensor: _creator,
    torch.as_tensor: _creator,
    torch.asarray: _creator,
    torch.Tensor.new_tensor: _new_tensor,
}
_PASSTHROUGH = {torch.Tensor.untyped_storage}


class _StandInFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func in _PASSTHROUGH:
            return func(*args, **kwargs)
        prev = getattr(_tls, "func", None)
        _tls.func = func
        try:
            handler = _FUNC_HANDLERS.get(func)
            if handler is None and type(func) is _MethodWrapper:
                if func.__self__ is _DEVICE_DESCR and func.__name__ == "__get__":
                    handler = _handle_device_get
            if handler is not None:
                return handler(func, args, kwargs)
            out = func(*args, **kwargs)
            dev = kwargs.get("device")
            if dev is not None and _is_stand_in_device(dev):
                _tag_outputs(out)
            return out
        finally:
            _tls.func = prev


aten = torch.ops.aten


def _bool_index(indices) -> bool:
    if not isinstance(indices, (list, tuple)):
        return False
    return any(
        isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices
    )


def _chk_item(func, args, kwargs, tagged):
    if tagged:
        return "item", "reads a device value on the host"
    return None


def _chk_dynamic(func, args, kwargs, tagged):
    if tagged:
        return "dynamic-shape", "the output shape depends on device values"
    return None


def _chk_index(func, args, kwargs, tagged):
    if tagged and len(args) > 1 and _bool_index(args[1]):
        return "dynamic-shape", "boolean-mask indexing: the output shape depends on the mask"
    return None


def _chk_index_put(func, args, kwargs, tagged):
    if tagged and len(args) > 1 and _bool_index(args[1]):
        return "dynamic-shape", "boolean-mask assignment runs nonzero on the mask"
    return None


def _chk_repeat_interleave(func, args, kwargs, tagged):
    if not tagged:
        return None
    if func.overloadpacket is aten.repeat_interleave and func._overloadname == "self_int":
        return None
    if kwargs.get("output_size") is None:
        return "dynamic-shape", "repeat_interleave without output_size"
    return None


def _chk_histc(func, args, kwargs, tagged):
    if not tagged:
        return None
    lo = args[2] if len(args) > 2 else kwargs.get("min", 0)
    hi = args[3] if len(args) > 3 else kwargs.get("max", 0)
    if lo == hi:
        return "item", "histc without min/max reads the data range on the host"
    return None


def _chk_to_copy(func, args, kwargs, tagged):
    src = args[0] if args else None
    if not isinstance(src, torch.Tensor) or kwargs.get("non_blocking", False):
        return None
    dev = kwargs.get("device")
    if dev is None:
        return None
    src_tagged = _is_tagged(src)
    if src_tagged and _is_host_device(dev):
        return "d2h", "copies device memory to the host"
    if not src_tagged and _is_stand_in_device(dev):
        return "h2d", "blocking copy of host memory to the device"
    return None


def _chk_copy(func, args, kwargs, tagged):
    if len(args) < 2 or not isinstance(args[1], torch.Tensor):
        return None
    non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
    if non_blocking:
        return None
    dst_tagged, src_tagged = _is_tagged(args[0]), _is_tagged(args[1])
    if src_tagged and not dst_tagged:
        return "d2h", "copy_ of device memory into a host tensor"
    if dst_tagged and not src_tagged:
        return "h2d", "blocking copy_ of host memory into a device tensor"
    return None


def _build_checks():
    table = {
        "_local_scalar_dense": _chk_item,
        "item": _chk_item,
        "is_nonzero": _chk_item,
        "equal": _chk_item,
        "allclose": _chk_item,
        "_linalg_check_errors": _chk_item,
        "histc": _chk_histc,
        "nonzero": _chk_dynamic,
        "argwhere": _chk_dynamic,
        "masked_select": _chk_dynamic,
        "_unique": _chk_dynamic,
        "_unique2": _chk_dynamic,
        "unique_dim": _chk_dynamic,
        "unique_consecutive": _chk_dynamic,
        "unique_dim_consecutive": _chk_dynamic,
        "bincount": _chk_dynamic,
        "_to_sparse": _chk_dynamic,
        "_to_sparse_csr": _chk_dynamic,
        "_to_sparse_csc": _chk_dynamic,
        "_to_sparse_bsr": _chk_dynamic,
        "_to_sparse_bsc": _chk_dynamic,
        "index": _chk_index,
        "index_put": _chk_index_put,
        "index_put_": _chk_index_put,
        "_index_put_impl_": _chk_index_put,
        "repeat_interleave": _chk_repeat_interleave,
        "_to_copy": _chk_to_copy,
        "copy_": _chk_copy,
    }
    out = {}
    for name, check in table.items():
        packet = getattr(aten, name, None)
        if packet is not None:
            out[packet] = check
    return out


_SYNC_CHECKS = _build_checks()
_COPY_ = aten.copy_


class _StandInDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        tagged = _any_tagged(args) or (bool(kwargs) and _any_tagged(kwargs.values()))
        packet = func.overloadpacket
        check = _SYNC_CHECKS.get(packet)
        if check is not None and _RECORDERS:
            found = check(func, args, kwargs, tagged)
            if found is not None:
                _record_stand_in(found[0], f"aten.{func.__name__}", found[1])
        out = func(*args, **kwargs)
        if packet is _COPY_:
            return out  # the destination keeps its device
        dev = kwargs.get("device")
        if dev is not None:
            if _is_stand_in_device(dev):
                _tag_outputs(out)
        elif tagged:
            _tag_outputs(out)
        return out


# While the stand-in is active, torch's C++ grouping helper (used by clip_grad_norm_ and
# foreach optimizers) reports the stand-in device for groups of tagged tensors, so that a
# later ``x.to(device)`` stays on the device instead of looking like a device-to-host copy.
_ORIG_GROUP = None
_GROUP_USERS = 0
_GROUP_LOCK = threading.Lock()


def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
    grouped = _ORIG_GROUP(tensorlistlist, with_indices)
    fixed = {}
    for (device, dtype), value in grouped.items():
        first = value[0][0] if value and value[0] else []
        if _is_host_device(device) and any(
            isinstance(t, torch.Tensor) and _is_tagged(t) for t in first
        ):
            device = STAND_IN
        fixed[(device, dtype)] = value
    return fixed


def _patch_grouping(on: bool) -> None:
    global _ORIG_GROUP, _GROUP_USERS
    with _GROUP_LOCK:
        if on:
            _GROUP_USERS += 1
            if _GROUP_USERS == 1 and hasattr(torch._C, "_group_tensors_by_device_and_dtype"):
                _ORIG_GROUP = torch._C._group_tensors_by_device_and_dtype
                torch._C._group_tensors_by_device_and_dtype = _group_tensors_by_device_and_dtype
        else:
            _GROUP_USERS -= 1
            if _GROUP_USERS == 0 and _ORIG_GROUP is not None:
                torch._C._group_tensors_by_device_and_dtype = _ORIG_GROUP
                _ORIG_GROUP = None


def _engine_enter() -> None:
    depth = getattr(_tls, "depth", 0)
    if depth == 0:
        fmode, dmode = _StandInFunctionMode(), _StandInDispatchMode()
        fmode.__enter__()
        try:
            dmode.__enter__()
        except BaseException:
            fmode.__exit__(None, None, None)
            raise
        _tls.modes = (fmode, dmode)
        _patch_grouping(True)
    _tls.depth = depth + 1


def _engine_exit() -> None:
    _tls.depth -= 1
    if _tls.depth == 0:
        fmode, dmode = _tls.modes
        _tls.modes = None
        _patch_grouping(False)
        from torch.overrides import _get_current_function_mode
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        if _get_current_dispatch_mode() is not dmode or _get_current_function_mode() is not fmode:
            raise RuntimeError(
                "syncfree.guard: torch modes were entered/exited out of order around the "
                "stand-in device (exit inner modes first)"
            )
        dmode.__exit__(None, None, None)
        fmode.__exit__(None, None, None)


class stand_in:
    """Activate the CPU stand-in accelerator without recording anything.

    Inside, tensors created with ``device=STAND_IN`` or moved with ``.to(STAND_IN)`` (including
    ``Module.to``) are tagged, and the tag follows them through every op.  Enter it around test
    set-up so that the tensors a guarded block uses live on the stand-in::

        with stand_in() as dev:
            model = Net().to(dev)
            with no_host_sync() as g:
                step(model, torch.randn(8, 3, device=dev))

    ``with`` yields :data:`STAND_IN`.  Nesting is allowed; a :class:`HostSyncGuard` on the
    stand-in enters it too.
    """

    def __enter__(self) -> torch.device:
        _engine_enter()
        return STAND_IN

    def __exit__(self, exc_type, exc, tb):
        _engine_exit()
        return False


# --------------------------------------------------------------------------- CUDA back end

_CUDA_SYNC_TEXT = "called a synchronizing CUDA operation"
_cuda_lock = threading.RLock()
_cuda_depth = 0
_cuda_warn_ctx = None
_trace_installed = False


def _showwarning_hook_factory(previous):
    orig = getattr(warnings, "_showwarning_orig", None)

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if _CUDA_SYNC_TEXT in str(message):
            rec = _current_recorder("cuda")
            if rec is not None:
                rec._record(
                    "sync", "synchronizing CUDA operation", "torch.cuda sync debug mode",
                    source="cuda-warning",
                )
                return
        if previous is orig and hasattr(warnings, "_showwarnmsg_impl"):
            warnings._showwarnmsg_impl(
                warnings.WarningMessage(message, category, filename, lineno, file, line)
            )
        else:
            previous(message, category, filename, lineno, file, line)

    return showwarning


def _on_trace(source, kind, op):
    def callback(*_args):
        if not _RECORDERS:
            return
        rec = _current_recorder("cuda")
        if rec is not None:
            rec._record(kind, op, "CUDA trace hook", source=source)

    return callback


def _install_trace() -> None:
    global _trace_installed
    if _trace_installed:
        return
    from torch.cuda import _gpu_trace

    torch._C._activate_gpu_trace()
    _gpu_trace.register_callback_for_device_synchronization(
        _on_trace("device-trace", "synchronize", "torch.cuda.synchronize")
    )
    # .item(), blocking copies and Stream.synchronize() synchronize a stream; the sync debug
    # mode warns about those too, and that warning is merged into this event.
    _gpu_trace.register_callback_for_stream_synchronization(
        _on_trace("stream-trace", "sync", "cudaStreamSynchronize")
    )
    _gpu_trace.register_callback_for_event_synchronization(
        _on_trace("event-trace", "synchronize", "Event.synchronize")
    )
    _trace_installed = True


def _cuda_enter(guard: HostSyncGuard) -> None:
    global _cuda_depth, _cuda_warn_ctx
    with _cuda_lock:
        guard._prev_debug_mode = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error" if guard.mode == "error" else "warn")
        if _cuda_depth == 0:
            ctx = warnings.catch_warnings()
            ctx.__enter__()
            warnings.filterwarnings("always", message=".*" + _CUDA_SYNC_TEXT)
            warnings.showwarning = _showwarning_hook_factory(warnings.showwarning)
            _cuda_warn_ctx = ctx
        _cuda_depth += 1
        if guard.cuda_trace:
            _install_trace()


def _cuda_exit(guard: HostSyncGuard) -> None:
    global _cuda_depth, _cuda_warn_ctx
    with _cuda_lock:
        if guard._prev_debug_mode is not None:
            torch.cuda.set_sync_debug_mode(guard._prev_debug_mode)
            guard._prev_debug_mode = None
        _cuda_depth -= 1
        if _cuda_depth == 0 and _cuda_warn_ctx is not None:
            ctx, _cuda_warn_ctx = _cuda_warn_ctx, None
            ctx.__exit__(None, None, None)
