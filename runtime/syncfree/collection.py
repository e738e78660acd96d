"""``MetricCollection``: a dict of metrics updated together and synced with one buffer per bucket."""

from __future__ import annotations

import inspect
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from torch import nn

from syncfree import checkpoint as _ckpt
from syncfree._labels import shared_argmax
from syncfree.metric import Metric, parse_base_kwargs


def _accepted_kwargs(metric: Metric) -> Optional[set]:
    """Keyword names ``metric.update`` takes, or None when it takes ``**kwargs``."""
    # _accumulate(S, *update arguments): skip the state holder S.
    params = list(inspect.signature(metric._accumulate).parameters.values())[1:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


class MetricCollection(nn.Module):
    """Metrics sharing ``update`` arguments; ``compute`` returns a dict.

    ``trigger_sync`` packs every state of every member with the same (dtype, reduce op) into one
    flat buffer: one ``all_reduce`` per bucket for the whole collection.
    Accepts torchmetrics' arguments: a metric, a list or dict of metrics (nested collections are
    flattened), ``prefix``, ``postfix``; ``compute_groups`` is accepted and ignored (members
    never share state here).
    """

    def __init__(
        self,
        metrics: Union[Metric, "MetricCollection", Sequence[Any], Dict[str, Any]],
        *additional_metrics: Metric,
        prefix: Optional[str] = None,
        postfix: Optional[str] = None,
        compute_groups: Any = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self._default_group, _ = parse_base_kwargs("MetricCollection", kwargs)  # members decide sync_on_compute
        self.prefix = self._check_fix("prefix", prefix)
        self.postfix = self._check_fix("postfix", postfix)
        self._metrics = nn.ModuleDict()
        self._verified_layouts: dict = {}  # group -> (layout hash, bucket specs) of the last verified sync
        self._pending: Any = None
        self._kwarg_names: Dict[str, Optional[set]] = {}
        self.add_metrics(metrics, *additional_metrics)

    @staticmethod
    def _check_fix(what: str, value: Optional[str]) -> Optional[str]:
        if value is not None and not isinstance(value, str):
            raise ValueError(f"MetricCollection: {what} must be a string, got {type(value).__name__}")
        return value

    def add_metrics(self, metrics: Any, *additional_metrics: Metric) -> None:
        """Add members (a metric, a list, a dict or a collection), named like torchmetrics does."""
        if isinstance(metrics, (Metric, MetricCollection)):
            metrics = [metrics]
        if isinstance(metrics, Sequence) and not isinstance(metrics, str):
            metrics = list(metrics) + list(additional_metrics)
            named = []
            for m in metrics:
                if isinstance(m, MetricCollection):
                    named.extend(m._public_items())
                elif isinstance(m, Metric):
                    named.append((type(m).__name__, m))
                else:
                    raise TypeError(f"MetricCollection: {m!r} is not a syncfree metric")
        elif isinstance(metrics, dict):
            if additional_metrics:
                raise ValueError("MetricCollection: extra positional metrics are not allowed with a dict")
            named = []
            for name, m in metrics.items():
                if isinstance(m, MetricCollection):
                    named.extend((f"{name}_{k}", v) for k, v in m._public_items())
                elif isinstance(m, Metric):
                    named.append((name, m))
                else:
                    raise TypeError(f"MetricCollection: {name!r} is not a syncfree metric ({type(m).__name__})")
        else:
            raise TypeError(f"MetricCollection: unsupported metrics argument {type(metrics).__name__}")
        for name, m in named:
            if name in self._metrics:
                raise ValueError(f"MetricCollection: two metrics are named {name!r}; pass a dict to name them")
            self._metrics[name] = m
            self._kwarg_names[name] = _accepted_kwargs(m)

    # ---- dict-like --------------------------------------------------------------------
    def _key(self, name: str) -> str:
        return f"{self.prefix or ''}{name}{self.postfix or ''}"

    def _public_items(self) -> List[Any]:
        return [(self._key(k), m) for k, m in self._metrics.items()]

    def keys(self, keep_base: bool = False) -> List[str]:
        return list(self._metrics) if keep_base else [self._key(k) for k in self._metrics]

    def values(self) -> List[Metric]:
        return list(self._metrics.values())

    def items(self, keep_base: bool = False) -> List[Any]:
        return list(zip(self.keys(keep_base), self.values()))

    def __getitem__(self, key: str) -> Metric:
        if key in self._metrics:
            return self._metrics[key]
        for name, m in self._metrics.items():
            if self._key(name) == key:
                return m
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._metrics or key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._metrics)

    # ---- lifecycle --------------------------------------------------------------------
    def _member_kwargs(self, name: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        accepted = self._kwarg_names[name]
        return kwargs if accepted is None else {k: v for k, v in kwargs.items() if k in accepted}

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Update every member with the same arguments (keyword arguments filtered per member)."""
        with shared_argmax():  # multiclass members compute preds.argmax(1) once
            for name, m in self._metrics.items():
                m.update(*args, **self._member_kwargs(name, kwargs))

    def forward(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        """Update every member and return each member's batch value."""
        with shared_argmax():
            return {self._key(name): m(*args, **self._member_kwargs(name, kwargs))
                    for name, m in self._metrics.items()}

    def compute(self, check: bool = False) -> Dict[str, Any]:
        """Every member's result as device tensors, keyed with prefix/postfix.

        Members with ``sync_on_compute=True`` and no current synced copy are all_reduced together
        (one collective per bucket for the whole collection) when distributed; see ``Metric.compute``.
        """
        states = self._compute_states()
        if check:
            from syncfree.host import to_host
            from syncfree.metric import _ChecksOnly

            to_host([_ChecksOnly(m, states[name]) for name, m in self._metrics.items()])
        return {self._key(name): m._compute(states[name]) for name, m in self._metrics.items()}

    def _compute_states(self) -> Dict[str, Any]:
        """Each member's states for ``compute``, by member name (one bucketed sync for all)."""
        reduced: Dict[int, Any] = {}
        members = [(name, m) for name, m in self._metrics.items() if m.sync_on_compute and m._synced is None]
        if members:
            from syncfree.distributed import sync_for_compute

            entries = [(f"{name}.{label}", metric, state) for name, m in members
                       for label, metric, state in m.sync_entries()]
            reduced = sync_for_compute(self, entries, self._default_group)
        return {name: reduced[id(m)] if id(m) in reduced else m.states() for name, m in self._metrics.items()}

    def set_dtype(self, dst_type: Any) -> "MetricCollection":
        """``Metric.set_dtype`` for every member."""
        for m in self._metrics.values():
            m.set_dtype(dst_type)
        return self

    def persistent(self, mode: bool = False) -> None:
        for m in self._metrics.values():
            m.persistent(mode)

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_pending"] = None
        state["_verified_layouts"] = {}
        return state

    def reset(self) -> None:
        for m in self._metrics.values():
            m.reset()
        self._pending = None

    # ---- distributed ------------------------------------------------------------------
    def trigger_sync(self, group: Any = None) -> None:
        """Start one async all_reduce per (dtype, reduce op) bucket for the whole collection."""
        from syncfree.distributed import start_sync

        entries = [(f"{name}.{label}", metric, state)
                   for name, m in self._metrics.items()
                   for label, metric, state in m.sync_entries()]
        self._pending = start_sync(self, entries, group if group is not None else self._default_group)

    def wait_sync(self, timeout: Any = None) -> None:
        """Finish the sync; afterwards every member's ``compute`` returns its global value."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.wait(timeout)

    def sync(self, group: Any = None, timeout: Any = None) -> None:
        self.trigger_sync(group)
        self.wait_sync(timeout)

    def unsync(self) -> None:
        for m in self._metrics.values():
            m.unsync()

    # ---- checkpoint -------------------------------------------------------------------
    def state_dict(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:  # type: ignore[override]
        """Members' checkpoints by name (see :mod:`syncfree.checkpoint`)."""
        if args or kwargs:
            return super().state_dict(*args, **kwargs)
        return _ckpt.collection_state_dict(self)

    def load_state_dict(self, state_dict: Any, strict: bool = True, **kwargs: Any) -> None:  # type: ignore[override]
        _ckpt.load_collection(self, state_dict, strict=strict)
