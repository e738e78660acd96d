"""``MetricCollection``: a dict of metrics updated together, sharing work, synced with one buffer per bucket.

Compute groups: members whose updates fill their states alike (equal
:meth:`~syncfree.metric.Metric.compute_group_key`: the same update code, state layout and update
arguments, e.g. ``MulticlassAccuracy``, ``MulticlassPrecision``, ``MulticlassRecall`` and
``MulticlassF1Score`` of one ``num_classes``) hold ONE :class:`~syncfree.state.MetricState`: the
collection's ``update`` runs the first member's update only, ``forward`` computes the batch's
states once and every member's value from them. Only members never updated (or reset) are
grouped, so no accumulated state is lost. Each member's value stays what it would be alone; a
member updated, reset or loaded on its own (``c["acc"].update``) leaves its group with a copy of
the states (on the device, no sync), so it counts its own updates once, as it would alone;
``reset()`` of the collection groups them again. A sync never depends on the groups: every
member's states travel under the member's own label (another rank may hold the group apart), so
every rank sends the same buckets, and each member keeps its own synced copy.
``compute_groups=False`` turns grouping off; a list of lists of member names fixes the groups
(each must share a key).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, cast

import torch
from torch import Tensor, nn

from syncfree import checkpoint as _ckpt
from syncfree._labels import shared_argmax
from syncfree.distributed import SyncRecord
from syncfree.host import report_counters
from syncfree.lifecycle import Counter, SyncLifecycle, SyncPart
from syncfree.metric import Metric, parse_base_kwargs
from syncfree.validation import eager as eager_validation


def _accepted_kwargs(metric: Metric) -> Optional[set]:
    """Keyword names ``metric.update`` takes, or None when it takes ``**kwargs``."""
    # _accumulate(S, *update arguments): skip the state holder S.
    params = list(inspect.signature(metric._accumulate).parameters.values())[1:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


class _Members(nn.ModuleDict):
    """The members by name: an ``nn.ModuleDict`` (``.to()`` and ``state_dict`` reach them) typed as metrics."""

    def __getitem__(self, key: str) -> Metric:
        return cast(Metric, self._modules[key])

    def items(self) -> List[Tuple[str, Metric]]:  # type: ignore[override]
        return [(name, cast(Metric, m)) for name, m in self._modules.items()]

    def values(self) -> List[Metric]:  # type: ignore[override]
        return [cast(Metric, m) for m in self._modules.values()]


def _check_compute_groups(value: Any) -> Union[bool, List[List[str]]]:
    if isinstance(value, bool):
        return value
    if (isinstance(value, (list, tuple)) and all(isinstance(g, (list, tuple)) for g in value)
            and all(isinstance(n, str) for g in value for n in g)):
        return [list(g) for g in value]
    raise ValueError("MetricCollection: compute_groups must be True, False or a list of lists of member "
                     f"names, got {value!r}")


class MetricCollection(nn.Module, SyncLifecycle):
    """Metrics sharing ``update`` arguments; ``compute`` returns a dict.

    ``trigger_sync`` packs every state of every member with the same (dtype, reduce op) into one
    flat buffer: one ``all_reduce`` per bucket for the whole collection. Members that fill their
    states alike share them (compute groups, see the module docstring).
    Accepts torchmetrics' arguments: a metric, a list or dict of metrics (nested collections are
    flattened), ``prefix``, ``postfix``, ``compute_groups``.
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
        self._metrics = _Members()
        self._sync_record = SyncRecord()
        self._kwarg_names: Dict[str, Optional[set]] = {}
        self._group_spec = _check_compute_groups(compute_groups)
        self._groups: List[List[str]] = []  # member names; the first one's update serves the group
        self.add_metrics(metrics, *additional_metrics)

    def clone(self, prefix: Optional[str] = None, postfix: Optional[str] = None) -> "MetricCollection":
        """An independent copy (members and compute groups deep-copied, no sync in flight); a given
        ``prefix``/``postfix`` replaces this one's, as torchmetrics' ``clone``."""
        twin = copy.deepcopy(self)
        if prefix:
            twin.prefix = self._check_fix("prefix", prefix)
        if postfix:
            twin.postfix = self._check_fix("postfix", postfix)
        return twin

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
        self._form_groups()

    # ---- compute groups ---------------------------------------------------------------
    def _form_groups(self) -> None:
        """Group members whose states can be shared, and make them share (see the module docstring)."""
        names = list(self._metrics)
        spec = self._group_spec
        if spec is False:
            candidates = [[n] for n in names]
        elif spec is True:
            by_key: Dict[Any, List[str]] = {}
            candidates = []
            for n in names:
                key = self._metrics[n].compute_group_key()
                if key is None:
                    candidates.append([n])
                elif key in by_key:
                    by_key[key].append(n)
                else:
                    by_key[key] = [n]
                    candidates.append(by_key[key])
        else:
            candidates = self._explicit_groups(spec, names)
        groups: List[List[str]] = []
        for candidate in candidates:
            subgroups: List[List[str]] = []  # an updated member keeps its own states
            for n in candidate:
                member = self._metrics[n]
                for group in subgroups:
                    leader = self._metrics[group[0]]
                    if member.state is leader.state or (member.state.pristine and leader.state.pristine):
                        if member.state is not leader.state:
                            member.share_state(leader)
                        group.append(n)
                        break
                else:
                    subgroups.append([n])
            groups.extend(subgroups)
        self._groups = sorted(groups, key=lambda group: names.index(group[0]))

    def _explicit_groups(self, spec: List[List[str]], names: List[str]) -> List[List[str]]:
        listed = [n for g in spec for n in g]
        unknown = sorted(set(listed) - set(names))
        if unknown or len(listed) != len(set(listed)):
            raise ValueError(f"MetricCollection: compute_groups names unknown or repeated members {unknown or listed}; "
                             f"the members are {names}")
        for group in spec:
            keys = {self._metrics[n].compute_group_key() for n in group}
            if len(group) > 1 and (None in keys or len(keys) > 1):
                raise ValueError(f"MetricCollection: the members {group} cannot share states (their updates "
                                 "differ); list only metrics of one kind and one set of update arguments together")
        return [list(g) for g in spec if g] + [[n] for n in names if n not in listed]

    @property
    def compute_groups(self) -> Dict[int, List[str]]:
        """The groups of members that share states (torchmetrics' ``compute_groups``)."""
        return {i: list(group) for i, group in enumerate(self._current_groups())}


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
        return isinstance(key, str) and (key in self._metrics or key in self.keys())

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._metrics)

    # ---- lifecycle --------------------------------------------------------------------
    def _member_kwargs(self, name: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        accepted = self._kwarg_names[name]
        return kwargs if accepted is None else {k: v for k, v in kwargs.items() if k in accepted}

    def _current_groups(self) -> List[List[str]]:
        """The groups, split where a member left its group (updated, reset or loaded on its own)."""
        metrics = self._metrics
        if any(metrics[group[0]].state.owners != len(group) for group in self._groups):
            groups: List[List[str]] = []
            for group in self._groups:
                by_state: Dict[int, List[str]] = {}
                for name in group:
                    by_state.setdefault(id(metrics[name].state), []).append(name)
                groups.extend(by_state.values())
            self._groups = groups
        return self._groups

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Update every compute group once with the same arguments (keywords filtered per member)."""
        metrics = self._metrics
        with shared_argmax():  # multiclass members of different groups compute preds.argmax(1) once
            for group in self._current_groups():
                metrics[group[0]].update_group(*args, **self._member_kwargs(group[0], kwargs))

    def forward(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        """Update every member and return each member's batch value (a group's batch states are made once)."""
        metrics = self._metrics
        values: Dict[str, Tensor] = {}
        with shared_argmax():
            for group in self._current_groups():
                leader = metrics[group[0]]
                batch = leader.batch_states(*args, **self._member_kwargs(group[0], kwargs))
                if eager_validation() and not torch.compiler.is_compiling():
                    leader.check_batch_now(batch)  # syncfree.validate("eager"): raise before merging
                leader.merge_batch(batch)
                for name in group:
                    values[name] = metrics[name]._forward_cache = metrics[name]._compute(batch)
        return {self._key(name): values[name] for name in metrics}

    def compute(self, check: bool = False) -> Dict[str, Any]:
        """Every member's result as device tensors, keyed with prefix/postfix.

        Members with ``sync_on_compute=True`` are all_reduced together from their local states on
        every call (one collective per bucket for the whole collection, also after an explicit
        ``sync()``) when distributed; see ``Metric.compute``.
        """
        states = self.states_for_compute()
        if check:
            report_counters(self._counters(states))
        return self._results(states)

    # ---- SyncLifecycle ----------------------------------------------------------------
    def sync_parts(self) -> List[SyncPart]:
        return [SyncPart(f"{name}.", m.state, m.sync_on_compute, m.sync_token) for name, m in self._metrics.items()]

    def _sub_owners(self) -> Sequence[SyncLifecycle]:
        return list(self._metrics.values())

    def _member_metrics(self) -> Sequence[Any]:
        return list(self._metrics.values())

    def _results(self, states: List[Mapping[str, Tensor]]) -> Dict[str, Any]:
        return {self._key(name): m._compute(st) for (name, m), st in zip(self._metrics.items(), states)}

    def _counters(self, states: List[Mapping[str, Tensor]]) -> List[Counter]:
        return [(f"MetricCollection member {name!r} ({metric})", counter, policy, message)
                for (name, m), st in zip(self._metrics.items(), states)
                for metric, counter, policy, message in m._counters([st])]

    def set_dtype(self, dst_type: Any) -> "MetricCollection":
        """``Metric.set_dtype`` for every member."""
        for m in self._metrics.values():
            m.set_dtype(dst_type)
        return self

    def persistent(self, mode: bool = False) -> None:
        for m in self._metrics.values():
            m.persistent(mode)

    def reset(self) -> None:
        """Reset every member; members that left their compute group (updated, reset or synced apart)
        join it again, as they are all neutral now."""
        for m in self._metrics.values():
            m.reset_group()
        self._form_groups()  # a sync in flight is kept (see Metric.reset_group)

    # ---- checkpoint -------------------------------------------------------------------
    def state_dict(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:  # type: ignore[override]
        """Members' checkpoints by name (see :mod:`syncfree.checkpoint`)."""
        if args or kwargs:
            return super().state_dict(*args, **kwargs)
        return _ckpt.collection_state_dict(self)

    def load_state_dict(self, state_dict: Any, strict: bool = True, **kwargs: Any) -> None:  # type: ignore[override]
        _ckpt.load_collection(self, state_dict, strict=strict)
