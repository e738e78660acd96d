"""The base class of every syncfree metric.

A metric is a set of linearly additive *states* (tensors on the metric's device, each with a
reduce op: ``"sum"``, ``"max"`` or ``"min"``) plus three pure functions written by subclasses:

- ``_accumulate(S, *args)`` adds one batch *in place* into the states held by ``S``, a
  :class:`~syncfree.state.StateView` (no host sync). ``S`` views the metric's states for
  ``update``, and neutral scratch states of the same layout for ``forward`` (the batch value);
  ``forward`` checks that contract (:class:`~syncfree.state.StateContractError` otherwise);
- ``_compute(states)`` turns states into the result (device tensors, no host sync);
- ``_checks`` names the counter states reported by :func:`syncfree.to_host`.

Storage: the states are held by ``self.state``, a :class:`~syncfree.state.MetricState` (flat
tensors, the views ``_accumulate`` writes through, the synced copy; see :mod:`syncfree.state`).
Those tensors are NOT registered buffers: DDP (``broadcast_buffers=True``, its default) copies
rank 0's buffers to every rank before each forward, which would overwrite the per-rank states.
``add_state`` gives a state its own flat tensor; ``add_state_group`` packs several states of one
dtype (plus scratch elements, e.g. a dump bin) into ONE tensor so that a single ``scatter_add_``
updates them all. A state reads as an attribute too (``metric.confmat``). Constant tensors an
update needs (lookup tables) are plain attributes (``add_constant``).
``_apply`` (``.to``, ``.cuda``, casts) moves them all and re-binds the views; casts
(``.half()``, ``.double()``, ``model.half()``, ``.to(dtype)``) keep every state's dtype, as
torchmetrics does: :meth:`Metric.set_dtype` changes the floating states' dtype. Pickling,
``copy.deepcopy`` and ``torch.save`` of the whole object keep the views bound. Distributed sync
never touches the local states: it fills a separate *synced* copy that ``compute`` reads until
the next ``update``/``reset``/``unsync``, so local accumulation can go on after a sync.

``compute`` is global by default (``sync_on_compute=True``, as torchmetrics): when
``torch.distributed`` is initialised with more than one rank, it all_reduces the local states on
every call (on their device, one collective per bucket, no host read; also after an explicit
``sync()``, so that no rank's local history decides whether it enters a collective) and computes
from the reduced copy without storing it; the local states are unchanged.

Errors: what can be known without reading device data (argument values, shapes, dtypes) raises
at ``update``, as torchmetrics does. Value errors (labels out of range, non-integral float labels,
NaN) cannot be known without a host sync: they are counted on the device and reported where the
host reads values anyway, in the same transfer: :func:`syncfree.to_host`, ``compute(check=True)``,
:class:`syncfree.lightning.EpochMetrics` (raise or warn per the metric's policy). Under
``syncfree.validate("eager")`` (tests, debugging; a host sync per update) ``update`` and
``forward`` raise at once, before the batch touches the states (see :mod:`syncfree.validation`).

Checkpoints (``state_dict``/``load_state_dict``, the ``torch.distributed.checkpoint`` Stateful
protocol) hold this rank's local states; see :mod:`syncfree.checkpoint` for the multi-rank scheme.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Hashable, List, Mapping, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor, nn

from syncfree import checkpoint as _ckpt
from syncfree import validation as _validation
from syncfree.distributed import SyncRecord
from syncfree.host import report_counters
from syncfree.lifecycle import Counter, SyncLifecycle, SyncPart
from syncfree.state import REDUCE_OPS, MetricState, StateView, identity_value, keep_dtype

__all__ = ["REDUCE_OPS", "Metric", "StateView", "as_tensor", "count_scalar", "host_scalar", "identity_value",
           "parse_base_kwargs"]

# (counter state name, policy, message) -- policy is "error", "warn" or "off".
Check = Tuple[str, str, str]


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


class _SyncToken:
    """A metric's identity as the holder of a synced copy (kept by pickling and deepcopy, unlike ``id``)."""


def _resolve_dtype(dst_type: Any) -> torch.dtype:
    if isinstance(dst_type, str):
        dst_type = getattr(torch, dst_type.replace("torch.", ""), None)
    if not isinstance(dst_type, torch.dtype) or not dst_type.is_floating_point:
        raise TypeError(f"set_dtype needs a floating dtype (e.g. torch.float64), got {dst_type!r}")
    return dst_type


class Metric(nn.Module, SyncLifecycle):
    """Base class: additive device states, sync-free ``update``/``compute``, async sync."""

    # torchmetrics compatibility attributes.
    full_state_update = False
    is_differentiable = False
    higher_is_better: Optional[bool] = None  # True/False on the metrics where torchmetrics says so
    _forward_cache: Any = None  # the last forward's batch value (torchmetrics' name, read by Lightning)
    # The attributes ``_accumulate`` reads besides its arguments and states. Two metrics of one
    # ``_accumulate``, one state layout and equal values of these attributes fill their states alike,
    # so a MetricCollection updates them once (a compute group). None: the metric never shares.
    _update_attributes: Optional[Tuple[str, ...]] = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self._default_group, self.sync_on_compute = parse_base_kwargs(type(self).__name__, kwargs)
        self._dtype = torch.get_default_dtype()
        self._persistent = False
        self._checks: List[Check] = []
        self.state = MetricState()
        self._sync_record = SyncRecord()
        self.sync_token = _SyncToken()  # names this metric's synced copy in its (maybe shared) states
        # Constant tensors (also plain attributes, see the module docstring), moved with the metric.
        self._const: Dict[str, Tensor] = {}

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: a state reads as an attribute (torchmetrics' style).
        state = self.__dict__.get("state")
        if isinstance(state, MetricState):
            views = state.view.__dict__
            if name in views:
                return views[name]
        return super().__getattr__(name)

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
        self.state.add_group(buffer, specs, dtype or self._dtype, scratch)

    def add_constant(self, name: str, value: Tensor) -> None:
        """A constant tensor (moved with the metric, never cast) readable as the attribute ``name``."""
        self._const[name] = value
        object.__setattr__(self, name, value)

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
        return self.state.local()

    def states(self) -> Mapping[str, Tensor]:
        """The states ``compute`` reads: the synced copy after a sync, else the local states."""
        return self.state.current(self.sync_token)

    @property
    def device(self) -> torch.device:
        return self.state.device

    @property
    def dtype(self) -> torch.dtype:
        """The floating dtype of value states (the default dtype at construction)."""
        return self._dtype

    @property
    def update_count(self) -> int:
        """Host-side count of ``update``/``forward`` calls into these states (no sync; eager mode)."""
        return self.state.updates

    @property
    def update_called(self) -> bool:
        """Whether the states took a batch (or a checkpoint) since construction or the last ``reset``
        (torchmetrics' ``update_called``; host-side, no sync)."""
        return not self.state.pristine

    def clone(self) -> "Metric":
        """An independent copy (``copy.deepcopy``: states copied on their device, no sync in flight)."""
        return copy.deepcopy(self)

    def compute_group_key(self) -> Optional[Hashable]:
        """Equal keys: the metrics' updates fill their states alike (see ``_update_attributes``)."""
        if self._update_attributes is None:
            return None
        return (type(self)._accumulate, self.state.signature(),
                tuple(getattr(self, name, None) for name in self._update_attributes))

    def share_state(self, leader: "Metric") -> None:
        """Hold ``leader``'s states from now on (a compute group): both must be fresh, of equal keys."""
        key = self.compute_group_key()
        if key is None or key != leader.compute_group_key():
            raise ValueError(f"{type(self).__name__} cannot share the states of {type(leader).__name__}: "
                             "their updates differ")
        if not (self.state.pristine and leader.state.pristine):
            raise ValueError("only metrics that were never updated (or were reset) can share states")
        if self.state is not leader.state:
            self._own_state().owners -= 1
            leader.state.owners += 1
            self.state = leader.state

    def _own_state(self) -> MetricState:
        """This metric's states, held by it alone: a member of a compute group that is updated, reset
        or loaded on its own (not through its collection) leaves the group with a copy of them."""
        state = self.state
        if state.owners > 1:
            state.owners -= 1
            state = self.state = state.copy()
        return state

    # ---- what subclasses write ----------------------------------------------------------
    def _accumulate(self, S: StateView, *args: Any, **kwargs: Any) -> None:
        """Add one batch into the states held by ``S``, in place, without a host sync."""
        raise NotImplementedError(f"{type(self).__name__} must implement _accumulate(S, *args)")

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        """The result from ``states`` (device tensors, no host sync)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _compute(states)")

    def _settle(self, *args: Any, **kwargs: Any) -> None:
        """Hook before ``_accumulate``: fix state shapes the batch decides (host facts only)."""

    def size_to_agree(self) -> Optional[int]:
        """A size its own batches decided, not yet agreed across ranks (0: none yet); else None."""
        return None

    def agree_size(self, size: int) -> None:
        """Take the size every rank agreed on (see :mod:`syncfree.agreement`)."""

    def load_targets(self, saved: Mapping[str, Tensor]) -> Dict[str, Tensor]:
        """The states a checkpoint ``saved`` is loaded into (their shapes are checked against it)."""
        return self.local_states()

    def load_values(self, values: Mapping[str, Tensor]) -> None:
        """Copy checkpoint ``values`` (shaped as ``load_targets``) into the local states."""
        self.state.load(values)

    # ---- lifecycle ----------------------------------------------------------------------
    def update(self, *args: Any, **kwargs: Any) -> None:
        """Add one batch to the local states, in place, without a host sync."""
        if self.state.owners > 1:
            self._own_state()
        self.update_group(*args, **kwargs)

    def update_group(self, *args: Any, **kwargs: Any) -> None:
        """``update`` of the states this metric holds, also when a compute group shares them (what
        a collection calls once per group)."""
        self._settle(*args, **kwargs)
        if _validation.eager() and not torch.compiler.is_compiling():
            batch = self.batch_states(*args, **kwargs)
            self.check_batch_now(batch)  # raises before the batch touches the states
            self.merge_batch(batch)
            return
        state = self.state
        if not torch.compiler.is_compiling():  # a changing int would recompile per call
            state.updates += 1
        self._accumulate(state.view, *args, **kwargs)
        state.synced = {}  # it no longer describes this rank's states
        state.pristine = False

    def batch_states(self, *args: Any, **kwargs: Any) -> Dict[str, Tensor]:
        """The states of this batch alone (fresh tensors); the metric's states are not touched.

        Checks the author's contract: ``_accumulate`` writes the scratch ``S`` it is given, never the
        metric's own states (:class:`~syncfree.state.StateContractError` otherwise).
        """
        self._settle(*args, **kwargs)
        state = self.state
        scratch = state.scratch()
        if torch.compiler.is_compiling():
            self._accumulate(scratch, *args, **kwargs)
        else:
            before = state.versions()
            self._accumulate(scratch, *args, **kwargs)
            state.check_batch(type(self).__name__, before)
        return state.batch_of(scratch)

    def forward(self, *args: Any, **kwargs: Any) -> Tensor:
        """Update with the batch and return the metric of this batch alone (no sync)."""
        if self.state.owners > 1:
            self._own_state()
        batch = self.batch_states(*args, **kwargs)
        if _validation.eager() and not torch.compiler.is_compiling():
            self.check_batch_now(batch)
        self.merge_batch(batch)
        value = self._forward_cache = self._compute(batch)  # what Lightning's on_step logging reads
        return value

    def check_batch_now(self, batch: Mapping[str, Tensor]) -> None:
        """Read the check counters of one batch (from :meth:`batch_states`) to the host and raise or
        warn now: the ``syncfree.validate("eager")`` mode (a host sync, for tests and debugging)."""
        report_counters(self._counters([batch]))

    def merge_batch(self, batch: Mapping[str, Tensor]) -> None:
        """Reduce a batch's states (from :meth:`batch_states`) into the local states."""
        if not torch.compiler.is_compiling():
            self.state.updates += 1
        self.state.merge(batch)

    def compute(self, check: bool = False) -> Tensor:
        """The metric over everything seen, as device tensors.

        With ``sync_on_compute=True`` (the default) under an initialised process group of more
        than one rank: global, through an all_reduce of the local states made now on every call
        (no host read; not stored, the local states are unchanged). Every rank must then call
        ``compute`` at the same point. It always makes that collective, also right after an
        explicit ``sync()``: whether a rank enters a collective never depends on its local history
        (a rank that updated since the sync and one that did not must make the same calls), so
        ``compute`` after ``sync()`` costs one extra all_reduce per bucket. A sync in flight is
        finished first (``wait_sync``), so every rank's collectives stay in one order. With
        ``sync_on_compute=False``: the synced copy when current (after ``wait_sync``/``sync``,
        until the next update/reset/``unsync``), else this rank's local value; no collective.
        ``check=True`` reads the check counters to the host (a sync) and raises/warns now.
        """
        states = self.states_for_compute()
        result = self._results(states)
        if check:
            report_counters(self._counters(states))
        return result

    def reset(self) -> None:
        """Return every state to its neutral element and drop any synced copy."""
        if self.state.owners > 1:
            self._own_state()
        self.reset_group()

    def reset_group(self) -> None:
        """``reset`` of the states this metric holds, also when a compute group shares them.

        A sync in flight is kept: ``wait_sync`` still finishes its collectives (as every other rank
        does) but leaves the reset states alone."""
        self.state.reset()

    # ---- SyncLifecycle --------------------------------------------------------------------
    def sync_parts(self) -> List[SyncPart]:
        return [SyncPart("", self.state, self.sync_on_compute, self.sync_token)]

    def _results(self, states: List[Mapping[str, Tensor]]) -> Tensor:
        return self._compute(states[0])

    def _counters(self, states: List[Mapping[str, Tensor]]) -> List[Counter]:
        name = type(self).__name__
        return [(name, counter, policy, message) for counter, policy, message in self.check_counters(states[0])]

    # ---- device, dtype, persistence, pickling -------------------------------------------
    def _apply(self, fn: Callable, *args: Any, **kwargs: Any) -> "Metric":
        # A device move (or a cast) replaces the flat tensors: move them (keeping each dtype: casts
        # never touch states), re-bind the views, drop the synced copy and per-device caches.
        out = super()._apply(fn, *args, **kwargs)
        self.state.apply(fn)
        self._const = {name: keep_dtype(fn, t) for name, t in self._const.items()}
        for name, value in self._const.items():
            object.__setattr__(self, name, value)
        self._on_apply()
        return out

    def _on_apply(self) -> None:
        """Hook for subclasses that cache tensors derived from their states or constants."""

    def set_dtype(self, dst_type: Union[str, torch.dtype]) -> "Metric":
        """Cast the floating states (values, not integer counts) to ``dst_type``; later updates
        and results use it. ``.half()``/``.double()``/``.to(dtype)`` leave states alone."""
        dtype = _resolve_dtype(dst_type)
        self.state.cast_floats(dtype)
        self._dtype = dtype
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
        saved = {name: state_dict[prefix + name] for name in self.local_states() if prefix + name in state_dict}
        values: Dict[str, Tensor] = {}
        for name, t in self.load_targets(saved).items():
            key = prefix + name
            if key not in state_dict:
                if self._persistent and strict:
                    missing_keys.append(key)
                continue
            value = state_dict.pop(key)  # a copy made by Module.load_state_dict
            if not isinstance(value, Tensor) or tuple(value.shape) != tuple(t.shape):
                error_msgs.append(f"{key}: expected a tensor of shape {tuple(t.shape)} for this metric state")
                continue
            values[name] = value.detach()
        if values:
            self.load_values(values)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        state.setdefault("sync_token", _SyncToken())
        super().__setstate__(state)
        self._on_apply()

    # ---- checks -------------------------------------------------------------------------
    def check_counters(self, states: Optional[Mapping[str, Tensor]] = None) -> List[Tuple[Tensor, str, str]]:
        """(counter tensor, policy, formatted-message template) for every active check."""
        states = self.states() if states is None else states
        return [(states[name], policy, message) for name, policy, message in self._checks
                if policy != "off"]

    # ---- checkpoint ---------------------------------------------------------------------
    def upgrade_states(self, version: int, states: Dict[str, Tensor]) -> Dict[str, Tensor]:
        """Saved states of an older checkpoint ``version`` in this version's layout (hook)."""
        return states

    def state_dict(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:  # type: ignore[override]
        """This rank's local states with ``_version``, ``_class``, rank and reduce ops."""
        if args or kwargs:
            # Called by a parent nn.Module: metric states are not model parameters.
            return super().state_dict(*args, **kwargs)
        return _ckpt.metric_state_dict(self)

    def load_state_dict(self, state_dict: Any, strict: bool = True, **kwargs: Any) -> None:  # type: ignore[override]
        """Load a checkpoint of this class; a list of per-rank checkpoints is merged first."""
        if self.state.owners > 1:
            self._own_state()
        _ckpt.load_metric(self, state_dict, strict=strict)

    def extra_repr(self) -> str:
        return ""
