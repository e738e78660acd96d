"""The base class of every syncfree metric.

A metric is a set of linearly additive *states* (tensors on the metric's device, each with a
reduce op: ``"sum"``, ``"max"`` or ``"min"``) plus three pure functions written by subclasses:

- ``_accumulate(S, *args)`` adds one batch into the states held by ``S`` in place (no host sync).
  ``S`` is the metric itself for ``update`` (its states are attributes), or a scratch holder of
  neutral states of the same layout for ``forward`` (the batch value);
- ``_compute(states)`` turns states into the result (device tensors, no host sync);
- ``_checks`` names the counter states reported by :func:`syncfree.to_host`.

Storage: every state is a view (a plain attribute, so ``update`` reads it without
``nn.Module.__getattr__``) into a flat tensor held in ``self._flat``. Those tensors are NOT
registered buffers: DDP (``broadcast_buffers=True``, its default) copies rank 0's buffers to
every rank before each forward, which would overwrite the per-rank states. ``add_state`` gives a
state its own flat tensor; ``add_state_group`` packs several states of one dtype (plus scratch
elements, e.g. a dump bin) into ONE tensor so that a single ``scatter_add_`` updates them all.
Constant tensors an update needs (lookup tables) are kept the same way (``add_constant``).
``_apply`` (``.to``, ``.cuda``, casts) moves them all and re-binds the views; casts
(``.half()``, ``.double()``, ``model.half()``, ``.to(dtype)``) keep every state's dtype, as
torchmetrics does: :meth:`Metric.set_dtype` changes the floating states' dtype. Pickling,
``copy.deepcopy`` and ``torch.save`` of the whole object keep the views bound. Distributed sync
never touches the local states: it fills a separate *synced* copy that ``compute`` reads until
the next ``update``/``reset``/``unsync``, so local accumulation can go on after a sync.

``compute`` is global by default (``sync_on_compute=True``, as torchmetrics): when
``torch.distributed`` is initialised with more than one rank and no synced copy is current, it
all_reduces the states (on their device, one collective per bucket, no host read) and computes
from the reduced copy without storing it; the local states are unchanged.

Errors: what can be known without reading device data (argument values, shapes, dtypes) raises
at ``update``, as torchmetrics does. Value errors (labels out of range, non-integral float labels,
NaN) cannot be known without a host sync: they are counted on the device and reported by
:func:`syncfree.to_host` or ``compute(check=True)`` (raise or warn per the metric's policy).

Checkpoints (``state_dict``/``load_state_dict``, the ``torch.distributed.checkpoint`` Stateful
protocol) hold this rank's local states; see :mod:`syncfree.checkpoint` for the multi-rank scheme.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor, nn

from syncfree import checkpoint as _ckpt

REDUCE_OPS = ("sum", "max", "min")

# (counter state name, policy, message) -- policy is "error", "warn" or "off".
Check = Tuple[str, str, str]


def identity_value(op: str, dtype: torch.dtype) -> Union[int, float]:
    """The neutral element of ``op`` for ``dtype`` (what an empty state holds)."""
    if op == "sum":
        return 0
    if dtype.is_floating_point:
        return -math.inf if op == "max" else math.inf
    info = torch.iinfo(dtype)
    return info.min if op == "max" else info.max


def as_tensor(value: Any, dtype: torch.dtype) -> Tensor:
    """A tensor input as is; a Python number as a CPU 0-d tensor (no host-to-device copy)."""
    if isinstance(value, Tensor):
        return value
    return torch.as_tensor(value, dtype=dtype)


_HOST_SCALARS: Dict[Any, Tensor] = {}


def host_scalar(value: Union[int, float]) -> Tensor:
    """``value`` as a cached CPU 0-d tensor (int64 or float64).

    An op takes a CPU 0-d tensor as a kernel argument on any device (no copy, no sync), like a
    Python number, but without wrapping the number into a tensor on every call (~1.5 us on CPU).
    The cached tensors are read-only by convention.
    """
    key = (type(value), value)
    t = _HOST_SCALARS.get(key)
    if t is None:
        if len(_HOST_SCALARS) > 4096:
            _HOST_SCALARS.clear()
        t = _HOST_SCALARS[key] = torch.tensor(value)
    return t


def count_scalar(n: Any) -> Any:
    """A batch size for ``state.add_``: a cached CPU 0-d tensor in eager mode (no per-call wrap),
    the int itself under ``torch.compile`` (a per-size cache would key the graphs on the size)."""
    if torch.compiler.is_compiling():
        return n
    return host_scalar(n)


_UNSUPPORTED_KWARGS = {
    "compute_on_cpu": (
        False,
        "compute_on_cpu=True is not supported: it copies every state to the host. Keep states on "
        "the device and read results once with syncfree.to_host(metric).",
    ),
    "dist_sync_on_step": (
        False,
        "dist_sync_on_step=True is not supported: it synchronizes every step. Call "
        "metric.trigger_sync() / metric.wait_sync() (or metric.sync()) where you need global values.",
    ),
    "dist_sync_fn": (
        None,
        "dist_sync_fn is not supported: syncfree reduces states with bucketed all_reduce. Drop the "
        "argument and call metric.sync(group=...) to choose the process group.",
    ),
    "distributed_available_fn": (
        None,
        "distributed_available_fn is not supported: syncfree syncs only when you call "
        "metric.sync(); drop the argument.",
    ),
}
# Accepted and ignored: compute never caches a value across updates here.
_IGNORED_KWARGS = ("compute_with_cache",)


def parse_base_kwargs(owner: str, kwargs: Dict[str, Any]) -> Tuple[Any, bool]:
    """Check the torchmetrics ``Metric`` keyword arguments; return (process group, sync_on_compute)."""
    for name, (allowed, message) in _UNSUPPORTED_KWARGS.items():
        if name in kwargs and kwargs.pop(name) != allowed:
            raise TypeError(f"{owner}: {message}")
    for name in _IGNORED_KWARGS:
        kwargs.pop(name, None)
    sync_on_compute = kwargs.pop("sync_on_compute", True)
    if not isinstance(sync_on_compute, bool):
        raise TypeError(f"{owner}: sync_on_compute must be a bool, got {sync_on_compute!r}")
    group = kwargs.pop("process_group", None)
    if kwargs:
        raise TypeError(f"{owner}: unexpected keyword argument(s) {sorted(kwargs)}")
    return group, sync_on_compute


def _keep_dtype(fn: Callable, t: Tensor) -> Tensor:
    """``fn(t)`` (an ``_apply`` function: a move and/or a cast) with ``t``'s dtype kept."""
    out = fn(t)
    if out.dtype != t.dtype:
        out = t.to(device=out.device)
    return out


def _resolve_dtype(dst_type: Any) -> torch.dtype:
    if isinstance(dst_type, str):
        dst_type = getattr(torch, dst_type.replace("torch.", ""), None)
    if not isinstance(dst_type, torch.dtype) or not dst_type.is_floating_point:
        raise TypeError(f"set_dtype needs a floating dtype (e.g. torch.float64), got {dst_type!r}")
    return dst_type


class Metric(nn.Module):
    """Base class: additive device states, sync-free ``update``/``compute``, async sync."""

    # torchmetrics compatibility attributes.
    full_state_update = False
    is_differentiable = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self._default_group, self.sync_on_compute = parse_base_kwargs(type(self).__name__, kwargs)
        self._dtype = torch.get_default_dtype()
        self._persistent = False
        self._reductions: Dict[str, str] = {}
        self._checks: List[Check] = []
        self._synced: Optional[Dict[str, Tensor]] = None
        self._pending: Any = None
        self._update_serial = 0  # host-side count of update/forward calls ever (no sync; for syncfree.lightning)
        self._verified_layouts: dict = {}  # group -> (layout hash, bucket specs) of the last verified sync
        # flat tensor name -> [(state name, offset, shape)]; the flat tensors; the constants.
        # Plain attributes, not buffers: DDP must never broadcast them (see the module docstring).
        self._groups: Dict[str, List[Tuple[str, int, Tuple[int, ...]]]] = {}
        self._flat: Dict[str, Tensor] = {}
        self._const: Dict[str, Tensor] = {}

    # ---- states -------------------------------------------------------------------------
    def add_state(self, name: str, shape: Sequence[int] = (), dtype: Optional[torch.dtype] = None,
                  reduce: str = "sum") -> None:
        """Register a state filled with the neutral element of ``reduce`` (its own flat tensor)."""
        self.add_state_group("_buf_" + name, [(name, shape, reduce)], dtype)

    def add_state_group(self, buffer: str, specs: Sequence[Tuple[str, Sequence[int], str]],
                        dtype: Optional[torch.dtype] = None, scratch: int = 0) -> None:
        """Register states ``(name, shape, reduce)`` of one dtype as views into ONE flat tensor.

        ``scratch`` extra elements follow the states (not states: never synced, checkpointed or
        read; e.g. the bin that ignored samples are scattered into).
        """
        dtype = dtype or self._dtype
        layout, offset = [], 0
        for name, shape, reduce in specs:
            if reduce not in REDUCE_OPS:
                raise ValueError(f"reduce must be one of {REDUCE_OPS}, got {reduce!r}")
            shape = tuple(shape)
            layout.append((name, offset, shape))
            offset += math.prod(shape)
            self._reductions[name] = reduce
        self._groups[buffer] = layout
        self._flat[buffer] = torch.zeros(offset + scratch, dtype=dtype)
        self._bind()
        self._fill_neutral(self)

    def add_constant(self, name: str, value: Tensor) -> None:
        """A constant tensor (moved with the metric, never cast) readable as the attribute ``name``."""
        self._const[name] = value
        self._bind()

    def _bound_names(self) -> List[str]:
        """Attributes derived from ``_flat``/``_const`` (re-created by ``_bind``)."""
        names = list(self._groups) + list(self._const)
        for layout in self._groups.values():
            names.extend(name for name, _, _ in layout)
        return names

    def _bind(self) -> None:
        """(Re)bind every flat tensor, state view and constant as a plain instance attribute."""
        for buffer, layout in self._groups.items():
            flat = self._flat[buffer]
            object.__setattr__(self, buffer, flat)
            for name, offset, shape in layout:
                object.__setattr__(self, name, flat[offset:offset + math.prod(shape)].view(shape))
        for name, value in self._const.items():
            object.__setattr__(self, name, value)

    def _fill_neutral(self, holder: Any) -> None:
        """Fill the states (and scratch) held by ``holder`` with their neutral elements."""
        for buffer, layout in self._groups.items():
            getattr(holder, buffer).zero_()
            for name, _, _ in layout:
                op = self._reductions[name]
                if op != "sum":
                    state = getattr(holder, name)
                    state.fill_(identity_value(op, state.dtype))

    def _scratch(self) -> "_Scratch":
        """Neutral states of this metric's layout (fresh buffers) for one batch (``forward``)."""
        holder = _Scratch()
        for buffer, layout in self._groups.items():
            flat = torch.empty_like(self._flat[buffer])
            holder.__dict__[buffer] = flat
            for name, offset, shape in layout:
                holder.__dict__[name] = flat[offset:offset + math.prod(shape)].view(shape)
        self._fill_neutral(holder)
        return holder

    def add_check(self, counter: str, policy: str, message: str, state: bool = True) -> None:
        """Declare that state ``counter`` counts bad values, reported by ``to_host`` per ``policy``.

        ``message`` is formatted with ``count`` and ``metric``. ``state=False``: the counter state
        was already registered (e.g. inside a state group).
        """
        if state:
            self.add_state(counter, (), torch.int64, "sum")
        self._checks.append((counter, policy, message))

    def local_states(self) -> Dict[str, Tensor]:
        """This rank's states (live tensors)."""
        return {name: getattr(self, name) for name in self._reductions}

    def states(self) -> Dict[str, Tensor]:
        """The states ``compute`` reads: the synced copy after a sync, else the local states."""
        return self._synced if self._synced is not None else self.local_states()

    @property
    def device(self) -> torch.device:
        for flat in self._flat.values():
            return flat.device
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        """The floating dtype of value states (the default dtype at construction)."""
        return self._dtype

    # ---- lifecycle ----------------------------------------------------------------------
    def _accumulate(self, S: Any, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        raise NotImplementedError

    def _merge(self, batch: Mapping[str, Tensor]) -> None:
        for name, value in batch.items():
            state = getattr(self, name)
            op = self._reductions[name]
            if op == "sum":
                state.add_(value)
            elif op == "max":
                torch.maximum(state, value, out=state)
            else:
                torch.minimum(state, value, out=state)
        # The synced copy no longer describes this rank's states.
        self._synced = None

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Add one batch to the local states, in place, without a host sync."""
        self._count_update()
        self._accumulate(self, *args, **kwargs)
        if self._synced is not None:
            # The synced copy no longer describes this rank's states.
            self._synced = None

    def _count_update(self) -> None:
        """A host-side count of updates (for ``syncfree.lightning``); not inside ``torch.compile``,
        where a changing Python int would force a recompilation per call."""
        if not torch.compiler.is_compiling():
            self._update_serial += 1

    def forward(self, *args: Any, **kwargs: Any) -> Tensor:
        """Update with the batch and return the metric of this batch alone (no sync)."""
        self._count_update()
        scratch = self._scratch()
        self._accumulate(scratch, *args, **kwargs)
        batch = {name: getattr(scratch, name) for name in self._reductions}
        self._merge(batch)
        return self._compute(batch)

    def compute(self, check: bool = False) -> Tensor:
        """The metric over everything seen, as device tensors.

        Global when a synced copy is current (after ``wait_sync``/``sync``) or, with
        ``sync_on_compute=True`` (the default) under an initialised process group of more than one
        rank, through an all_reduce of the states made now (no host read; not stored, the local
        states are unchanged). Every rank must then call ``compute`` at the same point.
        ``check=True`` reads the check counters to the host (a sync) and raises/warns now.
        """
        states = self._compute_states()
        result = self._compute(states)
        if check:
            from syncfree.host import to_host

            to_host(_ChecksOnly(self, states))
        return result

    def _compute_states(self) -> Mapping[str, Tensor]:
        """The states ``compute`` reads: the synced copy, a fresh all_reduce, or the local states."""
        if self._synced is not None or not self.sync_on_compute:
            return self.states()
        from syncfree.distributed import sync_for_compute

        reduced = sync_for_compute(self, self.sync_entries(), self._default_group)
        return reduced.get(id(self), self.local_states())

    def reset(self) -> None:
        """Return every state to its neutral element and drop any synced copy."""
        self._fill_neutral(self)
        self._synced = None
        self._pending = None

    # ---- device, dtype, persistence, pickling -------------------------------------------
    def _apply(self, fn: Callable, *args: Any, **kwargs: Any) -> "Metric":
        # A device move (or a cast) invalidates the synced copy and replaces the flat tensors:
        # move them (keeping each dtype: casts never touch states), re-bind, drop per-device caches.
        self._synced = None
        out = super()._apply(fn, *args, **kwargs)
        self._flat = {name: _keep_dtype(fn, t) for name, t in self._flat.items()}
        self._const = {name: _keep_dtype(fn, t) for name, t in self._const.items()}
        self._bind()
        self._on_apply()
        return out

    def _on_apply(self) -> None:
        """Hook for subclasses that cache tensors derived from their states or constants."""

    def set_dtype(self, dst_type: Union[str, torch.dtype]) -> "Metric":
        """Cast the floating states (values, not integer counts) to ``dst_type``; later updates
        and results use it. ``.half()``/``.double()``/``.to(dtype)`` leave states alone."""
        dtype = _resolve_dtype(dst_type)
        self._flat = {name: t.to(dtype) if t.is_floating_point() else t for name, t in self._flat.items()}
        self._dtype = dtype
        self._synced = None
        self._bind()
        self._on_apply()
        return self

    def persistent(self, mode: bool = False) -> None:
        """Whether the states go into a parent module's ``state_dict`` (default False, as torchmetrics)."""
        self._persistent = bool(mode)

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if self._persistent:
            for name, t in self.local_states().items():
                destination[prefix + name] = t if keep_vars else t.detach().clone()

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: List[str], unexpected_keys: List[str], error_msgs: List[str]) -> None:
        for name, t in self.local_states().items():
            key = prefix + name
            if key not in state_dict:
                if self._persistent and strict:
                    missing_keys.append(key)
                continue
            value = state_dict.pop(key)  # a copy made by Module.load_state_dict
            if not isinstance(value, Tensor) or tuple(value.shape) != tuple(t.shape):
                error_msgs.append(f"{key}: expected a tensor of shape {tuple(t.shape)} for this metric state")
                continue
            t.copy_(value.detach())
            self._synced = None
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def __getstate__(self) -> Dict[str, Any]:
        # The views are re-created from ``_flat`` on unpickling (pickle would copy each view into a
        # tensor of its own, unbound from the flat tensor that ``update`` writes).
        state = dict(self.__dict__)
        for name in self._bound_names():
            state.pop(name, None)
        state["_pending"] = None  # collectives in flight belong to this process
        state["_verified_layouts"] = {}
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        self._bind()
        self._on_apply()

    # ---- checks -------------------------------------------------------------------------
    def check_counters(self, states: Optional[Mapping[str, Tensor]] = None) -> List[Tuple[Tensor, str, str]]:
        """(counter tensor, policy, formatted-message template) for every active check."""
        states = self.states() if states is None else states
        return [(states[name], policy, message) for name, policy, message in self._checks
                if policy != "off"]

    # ---- distributed --------------------------------------------------------------------
    def sync_entries(self) -> List[Tuple[str, "Metric", str]]:
        """(label, owner, state name) of every state, for the bucketed sync."""
        return [(name, self, name) for name in self._reductions]

    def trigger_sync(self, group: Any = None) -> None:
        """Start the all_reduce of every state (``async_op=True``); returns at once."""
        from syncfree.distributed import start_sync

        group = group if group is not None else self._default_group
        self._pending = start_sync(self, self.sync_entries(), group)

    def wait_sync(self, timeout: Any = None) -> None:
        """Finish a started sync; afterwards ``compute`` returns the global value."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.wait(timeout)

    def sync(self, group: Any = None, timeout: Any = None) -> None:
        """``trigger_sync`` then ``wait_sync``."""
        self.trigger_sync(group)
        self.wait_sync(timeout)

    def unsync(self) -> None:
        """Drop the synced copy: ``compute`` returns this rank's local value again."""
        self._synced = None

    # ---- checkpoint ---------------------------------------------------------------------
    def state_dict(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:  # type: ignore[override]
        """This rank's local states with ``_version``, ``_class``, rank and reduce ops."""
        if args or kwargs:
            # Called by a parent nn.Module: metric states are not model parameters.
            return super().state_dict(*args, **kwargs)
        return _ckpt.metric_state_dict(self)

    def load_state_dict(self, state_dict: Any, strict: bool = True, **kwargs: Any) -> None:  # type: ignore[override]
        """Load a checkpoint of this class; a list of per-rank checkpoints is merged first."""
        _ckpt.load_metric(self, state_dict, strict=strict)

    def extra_repr(self) -> str:
        return ""


class _Scratch:
    """Holds one batch's neutral states (attributes named like the metric's states)."""


class _ChecksOnly:
    """Wraps a metric so that ``to_host`` reads only its check counters (of ``states``, if given)."""

    def __init__(self, metric: Metric, states: Optional[Mapping[str, Tensor]] = None) -> None:
        self.metric = metric
        self.states = states
