"""The torch modes that make the CPU stand-in act as an accelerator.

A ``TorchFunctionMode`` handles creation and moves (``device=`` arguments, ``.to()``, ``.cpu()``,
``torch.tensor(data, device=...)``, ``Tensor.device`` which answers ``cpu:0`` for tagged tensors);
a ``TorchDispatchMode`` propagates the tag through every aten op and reports the ops that would
synchronize on a real accelerator (``standin_checks``).  Syncs go to the innermost active
stand-in guard.
"""

from __future__ import annotations

import threading
import types

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .active import ACTIVE
from .standin_checks import SYNC_CHECKS, aten
from .standin_numerics import cuda_division
from .tags import STAND_IN, TAGS, is_host_device, is_stand_in_device

_MethodWrapper = types.MethodWrapperType
_DEVICE_DESCR = torch._C.TensorBase.__dict__["device"]
_parse_to = torch._C._nn._parse_to
_COPY_ = aten.copy_


class _CurrentCall(threading.local):
    """The torch function the function mode is handling on this thread (names the event)."""

    func = None


_CALL = _CurrentCall()


class Usage:
    """Counts of aten ops a thread ran under the stand-in: all of them, and those on the device."""

    def __init__(self) -> None:
        self.ops = 0
        self.device_ops = 0


def func_name(func) -> str:
    """A user-level name for a torch function: ``Tensor.item``, ``torch.tensor``."""
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


def _record(kind: str, aten_op: str, detail: str, func=None) -> None:
    rec = ACTIVE.innermost("stand-in")
    if rec is None:
        return
    user_func = func if func is not None else _CALL.func
    op = func_name(user_func) or aten_op
    if aten_op and aten_op not in op:
        detail = f"{aten_op}: {detail}" if detail else aten_op
    rec._record(kind, op, detail)


def _handle_device_get(func, args, kwargs):
    t = args[0]
    if isinstance(t, torch.Tensor) and TAGS.is_tagged(t):
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
        TAGS.untag(out)
    return out


def _handle_to(func, args, kwargs):
    self = args[0]
    rest = args[1:]
    kw = dict(kwargs)
    copy = bool(kw.pop("copy", False))
    try:
        if rest and isinstance(rest[0], torch.Tensor):
            other = rest[0]
            device = STAND_IN if TAGS.is_tagged(other) else other.device
            dtype = other.dtype
            non_blocking = bool(rest[1]) if len(rest) > 1 else bool(kw.get("non_blocking", False))
            memory_format = kw.get("memory_format")
        else:
            device, dtype, non_blocking, memory_format = _parse_to(*rest, **kw)
    except Exception:
        return func(*args, **kwargs)  # let torch raise its own error
    if device is None or not isinstance(self, torch.Tensor):
        return func(*args, **kwargs)
    tagged = TAGS.is_tagged(self)
    if is_stand_in_device(device):
        if (
            tagged
            and not copy
            and (dtype is None or dtype == self.dtype)
            and memory_format in (None, torch.preserve_format)
        ):
            return self  # already there, like .to(cuda) of a cuda tensor
        out = func(*args, **kwargs)  # _to_copy(device=cpu:0): the dispatch mode records + tags
        TAGS.tag_outputs(out)
        return out
    if is_host_device(device) and tagged:
        if not non_blocking:
            _record("d2h", "", "copies device memory to the host", func)
        return _d2h_result(self, func(*args, **kwargs))
    return func(*args, **kwargs)


def _handle_cpu(func, args, kwargs):
    self = args[0]
    if isinstance(self, torch.Tensor) and TAGS.is_tagged(self):
        _record("d2h", "", "copies device memory to the host", func)
        return _d2h_result(self, func(*args, **kwargs))
    return func(*args, **kwargs)


def _reader(detail):
    def handle(func, args, kwargs):
        self = args[0] if args else None
        if isinstance(self, torch.Tensor) and TAGS.is_tagged(self):
            _record("d2h", "", detail, func)
        return func(*args, **kwargs)

    return handle


def _creator(func, args, kwargs):
    """torch.tensor / as_tensor / asarray: a host-to-device copy when the data is host data."""
    device = kwargs.get("device")
    if device is None or not is_stand_in_device(device):
        return func(*args, **kwargs)
    data = args[0] if args else kwargs.get("data", kwargs.get("obj"))
    if not (isinstance(data, torch.Tensor) and TAGS.is_tagged(data)):
        _record("h2d", "", "copies host data to the device", func)
    out = func(*args, **kwargs)
    TAGS.tag_outputs(out)
    return out


def _new_tensor(func, args, kwargs):
    self = args[0]
    device = kwargs.get("device")
    to_stand_in = is_stand_in_device(device) if device is not None else TAGS.is_tagged(self)
    if not to_stand_in:
        return func(*args, **kwargs)
    data = args[1] if len(args) > 1 else kwargs.get("data")
    if not (isinstance(data, torch.Tensor) and TAGS.is_tagged(data)):
        _record("h2d", "", "copies host data to the device", func)
    out = func(*args, **kwargs)
    TAGS.tag_outputs(out)
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


class StandInFunctionMode(TorchFunctionMode):
    """Creation and moves onto/off the stand-in; names the user-level call of each event."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func in _PASSTHROUGH:
            return func(*args, **kwargs)
        prev = _CALL.func
        _CALL.func = func
        try:
            handler = _FUNC_HANDLERS.get(func)
            if handler is None and type(func) is _MethodWrapper:
                if func.__self__ is _DEVICE_DESCR and func.__name__ == "__get__":
                    handler = _handle_device_get
            if handler is not None:
                return handler(func, args, kwargs)
            out = func(*args, **kwargs)
            dev = kwargs.get("device")
            if dev is not None and is_stand_in_device(dev):
                TAGS.tag_outputs(out)
            return out
        finally:
            _CALL.func = prev


class StandInDispatchMode(TorchDispatchMode):
    """Tags the outputs of ops on stand-in tensors and records the ops that would sync."""

    def __init__(self, usage: Usage) -> None:
        super().__init__()
        self.usage = usage

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        tagged = TAGS.any_tagged(args) or (bool(kwargs) and TAGS.any_tagged(kwargs.values()))
        packet = func.overloadpacket
        check = SYNC_CHECKS.get(packet)
        if check is not None and ACTIVE:
            found = check(func, args, kwargs, tagged)
            if found is not None:
                _record(found[0], f"aten.{func.__name__}", found[1])
        out = cuda_division(func, args, kwargs) if tagged else None
        if out is None:
            out = func(*args, **kwargs)
        self.usage.ops += 1
        if packet is _COPY_:
            if tagged:
                self.usage.device_ops += 1
            return out  # the destination keeps its device
        dev = kwargs.get("device")
        if dev is not None:
            if is_stand_in_device(dev):
                TAGS.tag_outputs(out)
                tagged = True
        elif tagged:
            TAGS.tag_outputs(out)
        if tagged:
            self.usage.device_ops += 1
        return out
