"""The states of a metric as one object: flat tensors, the views ``update`` writes through, the synced copy.

:class:`MetricState` owns every state of one metric (or of a compute group of metrics, which then
hold the same object): the flat tensors (several states of one dtype are views into ONE tensor, so
that one op updates them all), the reduce op of every state, a :class:`StateView` exposing the
states as attributes, and the *synced copy* that a distributed sync fills (``compute`` reads it
until the next update or reset, or ``unsync``). The flat tensors are plain attributes, never
``nn.Module`` buffers: DDP's ``broadcast_buffers`` would copy rank 0's states to every rank.

The metric author's contract: ``_accumulate(S, *args)`` adds one batch *in place* into the states
held by ``S``, a :class:`StateView`; it never assigns a state (``StateView`` raises
:class:`StateContractError` on assignment) and never writes the metric's own states (``forward``
passes a scratch view and checks, with the tensors' version counters, that the metric's states were
left alone; see :meth:`MetricState.check_batch`).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple, Union

import torch
from torch import Tensor

# "cat": a buffer of samples (unused slots hold zeros). A sync places every rank's buffer at its rank's
# offset of a zero buffer ``world`` times larger and sums those (an all_gather through the same
# all_reduce buckets); the synced copy holds the ranks' buffers one after the other. A batch of
# samples cannot be reduced into it: the metric appends it (see syncfree.exact_curves).
REDUCE_OPS = ("sum", "max", "min", "cat")

# (state name, offset in its flat tensor, shape)
Slot = Tuple[str, int, Tuple[int, ...]]


class StateContractError(TypeError):
    """A metric's ``_accumulate`` broke the contract: write every state in place through ``S``."""


def identity_value(op: str, dtype: torch.dtype) -> Union[int, float]:
    """The neutral element of ``op`` for ``dtype`` (what an empty state holds)."""
    if op in ("sum", "cat"):
        return 0
    if dtype.is_floating_point:
        return -math.inf if op == "max" else math.inf
    info = torch.iinfo(dtype)
    return info.min if op == "max" else info.max


def keep_dtype(fn: Callable[[Tensor], Tensor], t: Tensor) -> Tensor:
    """``fn(t)`` (an ``nn.Module._apply`` function: a move and/or a cast) with ``t``'s dtype kept."""
    out = fn(t)
    if out.dtype != t.dtype:
        out = t.to(device=out.device)
    return out


class StateView:
    """The states (and flat tensors) of one metric as attributes: ``S.confmat``, ``S._hist``.

    What ``_accumulate`` receives. Reading is a plain attribute lookup (the update hot path);
    assigning raises :class:`StateContractError`: a state is written in place.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        raise StateContractError(
            f"_accumulate assigned the state {name!r}; write states in place through S instead, e.g. "
            f"S.{name}.add_(x), S.{name}.copy_(x) or torch.maximum(S.{name}, x, out=S.{name})"
        )

    def __getattr__(self, name: str) -> Tensor:
        # Only reached for a name that is not a state (the states are in __dict__).
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"no metric state named {name!r}; the states are {sorted(self.__dict__)}")

    def _bind(self, name: str, tensor: Tensor) -> None:
        self.__dict__[name] = tensor


class MetricState:
    """Every state of a metric: layout, flat tensors, views, synced copy and a host-side update count."""

    def __init__(self) -> None:
        self.layout: Dict[str, List[Slot]] = {}  # flat tensor name -> its states
        self.reductions: Dict[str, str] = {}  # state name -> "sum" | "max" | "min"
        self.flats: Dict[str, Tensor] = {}
        self.view = StateView()
        # The synced copies, by holder (the ``sync_token`` of the metric reading them): the members
        # of a compute group share these states on this rank, but another rank may hold them apart,
        # so each member's global value is its own.
        self.synced: Dict[Any, Dict[str, Tensor]] = {}
        # Host-side facts (no sync): updates ever made, whether the states are still neutral, and
        # how many metrics hold this object (more than one: a collection's compute group).
        self.updates = 0
        self.pristine = True
        self.owners = 1
        self.resets = 0  # reset count: a sync in flight never installs over a later reset

    # ---- layout ---------------------------------------------------------------------------
    def add_group(self, flat: str, specs: Sequence[Tuple[str, Sequence[int], str]], dtype: torch.dtype,
                  scratch: int = 0) -> None:
        """States ``(name, shape, reduce)`` of one dtype as views into ONE flat tensor named ``flat``,
        followed by ``scratch`` elements that are not states (never synced, saved or read)."""
        slots: List[Slot] = []
        offset = 0
        for name, shape, reduce in specs:
            if reduce not in REDUCE_OPS:
                raise ValueError(f"reduce must be one of {REDUCE_OPS}, got {reduce!r}")
            if name in self.reductions or name in self.layout:
                raise ValueError(f"a metric state named {name!r} already exists")
            shape = tuple(shape)
            slots.append((name, offset, shape))
            offset += math.prod(shape)
        for name, _, reduce in specs:
            self.reductions[name] = reduce
        self.layout[flat] = slots
        self.flats[flat] = torch.zeros(offset + scratch, dtype=dtype)
        self._bind()
        self.fill_neutral(self.view)

    def reshape(self, shapes: Mapping[str, Sequence[int]]) -> None:
        """Give the states named in ``shapes`` new shapes (their flat tensors rebuilt, neutral, on the
        same device and dtype). Only for states that never took a value: a metric whose shapes come
        from its first batch (``R2Score`` without ``num_outputs``)."""
        if not self.pristine:
            raise RuntimeError("metric states that hold values cannot change shape; reset() the metric first")
        for flat, slots in self.layout.items():
            if not any(name in shapes for name, _, _ in slots):
                continue
            old = self.flats[flat]
            scratch = old.numel() - sum(math.prod(shape) for _, _, shape in slots)
            new_slots: List[Slot] = []
            offset = 0
            for name, _, shape in slots:
                shape = tuple(shapes.get(name, shape))
                new_slots.append((name, offset, shape))
                offset += math.prod(shape)
            self.layout[flat] = new_slots
            self.flats[flat] = old.new_zeros(offset + scratch)
        self.synced = {}
        self._bind()
        self.fill_neutral(self.view)

    def signature(self) -> Tuple[Any, ...]:
        """(name, shape, dtype, op) of every state: equal signatures hold interchangeable states."""
        return tuple((name, shape, str(self.flats[flat].dtype), self.reductions[name])
                     for flat, slots in self.layout.items() for name, _, shape in slots)

    def _views_of(self, flats: Mapping[str, Tensor]) -> StateView:
        view = StateView()
        for flat_name, slots in self.layout.items():
            flat = flats[flat_name]
            view._bind(flat_name, flat)
            for name, offset, shape in slots:
                view._bind(name, flat[offset:offset + math.prod(shape)].view(shape))
        return view

    def _bind(self) -> None:
        self.view = self._views_of(self.flats)

    # ---- reading ---------------------------------------------------------------------------
    def local(self) -> Dict[str, Tensor]:
        """This rank's states (live views)."""
        views = self.view.__dict__
        return {name: views[name] for name in self.reductions}

    def current(self, holder: Any = None) -> Mapping[str, Tensor]:
        """The states ``compute`` reads for ``holder``: its synced copy when current, else the local states."""
        synced = self.synced.get(holder)
        return synced if synced is not None else self.local()

    @property
    def device(self) -> torch.device:
        for flat in self.flats.values():
            return flat.device
        return torch.device("cpu")

    # ---- writing ---------------------------------------------------------------------------
    def fill_neutral(self, view: StateView) -> None:
        """Fill the states (and scratch) held by ``view`` with their neutral elements."""
        views = view.__dict__
        for flat_name, slots in self.layout.items():
            views[flat_name].zero_()
            for name, _, _ in slots:
                op = self.reductions[name]
                if op not in ("sum", "cat"):
                    views[name].fill_(identity_value(op, views[name].dtype))

    def reset(self) -> None:
        """Every state back to its neutral element; the synced copy is dropped."""
        self.fill_neutral(self.view)
        self.synced = {}
        self.pristine = True
        self.resets += 1

    def touched(self) -> None:
        """Record that the local states changed: the synced copy no longer describes them."""
        self.synced = {}
        self.pristine = False

    def copy(self) -> "MetricState":
        """An independent copy (the flat tensors cloned on their device, no sync), held by one metric."""
        twin = MetricState()
        twin.layout = {name: list(slots) for name, slots in self.layout.items()}
        twin.reductions = dict(self.reductions)
        twin.flats = {name: t.clone() for name, t in self.flats.items()}
        twin.synced = dict(self.synced)
        twin.updates, twin.pristine, twin.resets = self.updates, self.pristine, self.resets
        twin._bind()
        return twin

    def scratch(self) -> StateView:
        """Neutral states of this layout in fresh tensors (one batch, for ``forward``)."""
        view = self._views_of({name: torch.empty_like(t) for name, t in self.flats.items()})
        self.fill_neutral(view)
        return view

    def merge(self, batch: Mapping[str, Tensor]) -> None:
        """Reduce ``batch`` (states of this layout) into the local states, in place."""
        views = self.view.__dict__
        for name, value in batch.items():
            state = views[name]
            op = self.reductions[name]
            if op == "sum":
                state.add_(value)
            elif op == "cat":
                raise TypeError(f"the state {name!r} is a buffer of samples (reduce 'cat'): a batch is appended "
                                "to it, not reduced into it; the metric must override merge_batch")
            elif op == "max":
                torch.maximum(state, value, out=state)
            else:
                torch.minimum(state, value, out=state)
        self.touched()

    def load(self, values: Mapping[str, Tensor]) -> None:
        """Copy ``values`` (every state, already of the right shape) into the local states."""
        views = self.view.__dict__
        for name, value in values.items():
            views[name].copy_(value)
        self.touched()

    def batch_of(self, view: StateView) -> Dict[str, Tensor]:
        """The states held by ``view`` (a scratch view), by name."""
        views = view.__dict__
        return {name: views[name] for name in self.reductions}

    # ---- the author's contract ----------------------------------------------------------------
    def versions(self) -> Tuple[int, ...]:
        """The version counters of the local flat tensors (an in-place write increments them)."""
        views = self.view.__dict__
        return tuple(views[name]._version for name in self.layout)

    def check_batch(self, owner: str, before: Tuple[int, ...]) -> None:
        """After ``_accumulate(scratch, ...)``: raise if it wrote the local states (versions ``before``).

        (Writing nothing is allowed: an empty batch adds nothing. Assigning a state raises at once.)
        """
        if self.versions() != before:
            raise StateContractError(
                f"{owner}._accumulate wrote the metric's own states instead of the S it was given, so "
                "forward() would return a wrong batch value: write every state through the S argument "
                "(S.total.add_(x), not self.total.add_(x))"
            )

    # ---- device and dtype --------------------------------------------------------------------
    def apply(self, fn: Callable[[Tensor], Tensor]) -> None:
        """Move the flat tensors with ``fn`` (``nn.Module._apply``), each keeping its dtype."""
        self.flats = {name: keep_dtype(fn, t) for name, t in self.flats.items()}
        self.synced = {}
        self._bind()

    def cast_floats(self, dtype: torch.dtype) -> None:
        """Cast the floating flat tensors (values, not counts) to ``dtype``."""
        self.flats = {name: t.to(dtype) if t.is_floating_point() else t for name, t in self.flats.items()}
        self.synced = {}
        self._bind()

    # ---- pickling ------------------------------------------------------------------------------
    def __getstate__(self) -> Dict[str, Any]:
        # The views are re-created from the flat tensors (pickle would copy each view into a tensor
        # of its own, unbound from the flat tensor that update writes).
        state = dict(self.__dict__)
        del state["view"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        if not isinstance(state.get("synced"), dict):  # pickled before synced copies were per holder
            state["synced"] = {}
        state.setdefault("resets", 0)
        self.__dict__.update(state)
        self._bind()
