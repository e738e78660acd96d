"""Checkpoints of metrics and collections (the ``torch.distributed.checkpoint`` Stateful protocol).

Scheme
------
``state_dict()`` holds *this rank's local states* (no collective, so ``if rank == 0: save`` can
never hang), with ``"_version": 2``, ``"_class"``, ``"_rank"``, ``"_world_size"`` and the reduce op
of every state::

    {"_version": 2, "_class": "MeanMetric", "_rank": 0, "_world_size": 3,
     "reductions": {"mean_value": "sum", "weight": "sum", ...},
     "states": {"mean_value": tensor(...), "weight": tensor(...), ...}}

A collection nests its members: ``{"_version": 2, "_class": "MetricCollection", "metrics": {...}}``.

Versions: version 2 changed the layout of the binary stat scores and of multiclass stat scores
with at most 128 classes (``Accuracy``, ``Precision``, ``Recall``, ``F1Score``): they hold a
confusion matrix (``confmat``, from which tp/fp/tn/fn are derived) instead of ``tp``/``fp``/
``tn``/``fn``. Confusion matrices replaced the ``_bad_label_count`` state by ``_bad_labels`` (2 x C bins, the
count is their sum). Version-1 checkpoints still load wherever the states are the same
(aggregation, regression, stat scores with more than 128 classes) and for confusion matrices
(the count is moved into the bins); a version-1 stat-score
checkpoint with tp/fp/tn/fn cannot be turned into a confusion matrix and fails with a
``ValueError`` that says so.

Same world size: every rank saves and loads its own state dict; resuming equals not stopping.

Another world size: states are linearly additive, so the global value only depends on the
*reduction* of all local states. Collect the old ranks' state dicts (one file per rank) and
either call ``load_state_dict([sd_rank0, sd_rank1, ...])`` on every new rank, or merge them
yourself with :func:`merge_state_dicts` (the result is marked ``"_merged": True``) and load that
on every new rank. The merged states go to rank 0 of the metric's process group and neutral
states (zeros for sums, -inf/+inf for max/min) to every other rank; after the next sync every
rank sees exactly the value of the old run. Loading ONE rank's file whose ``_world_size`` is not
this run's raises a ``ValueError`` (it would drop, or count twice, other ranks' states).

Note for ``torch.distributed.checkpoint`` (DCP): DCP treats equal keys on several ranks as
replicated and keeps one copy. Since local states differ per rank, either save each rank's
metrics under a rank-specific key (``{f"metrics_rank{rank}": metric}``) or call
``metric.sync()`` first and save only on rank 0.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

import torch
from torch import Tensor

from syncfree.state import identity_value

VERSION = 2
# Versions this syncfree reads (1: same states except the stat scores, see the module docstring).
READABLE = (1, 2)
_COLLECTION = "MetricCollection"


def _rank_and_world(group: Any) -> tuple:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(group), dist.get_world_size(group)
    return 0, 1


def metric_state_dict(metric: Any) -> Dict[str, Any]:
    """The checkpoint of one metric: its local states and how they reduce."""
    rank, world = _rank_and_world(metric.process_group)
    return {
        "_version": VERSION,
        "_class": type(metric).__name__,
        "_rank": rank,
        "_world_size": world,
        "reductions": dict(metric.state.reductions),
        "states": {name: t.detach().clone() for name, t in metric.state.local().items()},
    }


def collection_state_dict(collection: Any) -> Dict[str, Any]:
    """The checkpoint of a collection: its members' checkpoints by name."""
    rank, world = _rank_and_world(collection.process_group)
    return {
        "_version": VERSION,
        "_class": _COLLECTION,
        "_rank": rank,
        "_world_size": world,
        "metrics": {name: m.state_dict() for name, m in collection.items(keep_base=True)},
    }


def _check_header(sd: Any, expected_class: str) -> None:
    if not isinstance(sd, Mapping):
        raise TypeError(f"expected a state dict (a mapping) for {expected_class}, got {type(sd).__name__}")
    if "_version" not in sd:
        raise ValueError(
            f"not a syncfree checkpoint for {expected_class}: no '_version' field "
            f"(keys: {sorted(sd)})"
        )
    if sd["_version"] not in READABLE:
        raise ValueError(
            f"{expected_class} checkpoint has version {sd['_version']!r}; this syncfree reads versions "
            f"{', '.join(map(str, READABLE))}"
        )
    if sd.get("_class") != expected_class:
        raise ValueError(
            f"checkpoint holds a {sd.get('_class')!r}; it cannot be loaded into a {expected_class}"
        )


def _reduce(op: str, a: Tensor, b: Tensor) -> Tensor:
    if op == "cat":
        raise ValueError(
            "cannot merge per-rank checkpoints of a metric that keeps its samples (an exact curve, "
            "thresholds=None): its buffer holds at most capacity= samples per rank. Resume with the same "
            "world size (each rank loads its own file), or use thresholds=<int> (binned states merge)."
        )
    if op == "sum":
        return a + b
    return torch.maximum(a, b) if op == "max" else torch.minimum(a, b)


def merge_state_dicts(state_dicts: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Reduce the per-rank checkpoints of one metric or collection into one (world size 1).

    Sums add, max/min take the max/min, so the result computes the same global value.
    """
    if not state_dicts:
        raise ValueError("merge_state_dicts needs at least one state dict")
    first = state_dicts[0]
    cls = str(first.get("_class")) if isinstance(first, Mapping) else "a metric"
    for sd in state_dicts:
        _check_header(sd, cls)
    if cls == _COLLECTION:
        names = list(first["metrics"])
        for sd in state_dicts[1:]:
            if list(sd["metrics"]) != names:
                raise ValueError(
                    f"cannot merge collections with different members: {names} vs {list(sd['metrics'])}"
                )
        metrics = {n: merge_state_dicts([sd["metrics"][n] for sd in state_dicts]) for n in names}
        return {"_version": VERSION, "_class": cls, "_rank": 0, "_world_size": 1, "_merged": True, "metrics": metrics}
    reductions = dict(first["reductions"])
    states = {n: t.detach().clone() for n, t in first["states"].items()}
    for sd in state_dicts[1:]:
        if dict(sd["reductions"]) != reductions or set(sd["states"]) != set(states):
            raise ValueError(
                f"cannot merge {cls} checkpoints with different states (versions "
                f"{first['_version']} and {sd['_version']}: re-save version-1 stat-score checkpoints)"
                if sd["_version"] != first["_version"] else f"cannot merge {cls} checkpoints with different states"
            )
        for name, value in sd["states"].items():
            if tuple(value.shape) != tuple(states[name].shape):
                raise ValueError(
                    f"cannot merge {cls} checkpoints: state {name!r} has shapes "
                    f"{tuple(states[name].shape)} and {tuple(value.shape)}"
                )
            states[name] = _reduce(reductions[name], states[name], value.to(states[name].device))
    return {"_version": VERSION, "_class": cls, "_rank": 0, "_world_size": 1, "_merged": True,
            "reductions": reductions, "states": states}


def neutral_state_dict(sd: Mapping[str, Any]) -> Dict[str, Any]:
    """A checkpoint of the same layout whose states are the neutral elements (an empty rank)."""
    if sd["_class"] == _COLLECTION:
        return {**sd, "metrics": {n: neutral_state_dict(m) for n, m in sd["metrics"].items()}}
    states = {
        n: torch.full_like(t, identity_value(sd["reductions"][n], t.dtype)) for n, t in sd["states"].items()
    }
    return {**sd, "states": states}


def _this_rank(sd: Dict[str, Any], rank: int, world: int) -> Dict[str, Any]:
    """A merged checkpoint (world size 1) re-headed as this rank's own (``_merged`` dropped)."""
    out = {k: v for k, v in sd.items() if k != "_merged"}
    out["_rank"], out["_world_size"] = rank, world
    if sd.get("_class") == _COLLECTION:
        out["metrics"] = {n: _this_rank(m, rank, world) for n, m in sd["metrics"].items()}
    return out


def _for_this_rank(sd: Any, group: Any) -> Any:
    """This rank's part of ``sd``: a list of every old rank's checkpoint (or a merged one) goes to
    rank 0, neutral states to the others; one rank's checkpoint must come from this world size."""
    rank, world = _rank_and_world(group)
    if isinstance(sd, (list, tuple)):
        sd = merge_state_dicts(sd)
    if not isinstance(sd, Mapping):
        return sd
    if sd.get("_merged"):
        return _this_rank(dict(sd) if rank == 0 else neutral_state_dict(sd), rank, world)
    saved_world = sd.get("_world_size")
    if isinstance(saved_world, int) and saved_world != world:
        raise ValueError(
            f"{sd.get('_class')} checkpoint of rank {sd.get('_rank')} was saved by a run of {saved_world} "
            f"ranks; this run has {world} ranks, so loading one file per rank would drop or double-count "
            "the states of other ranks. Load every rank's file on every rank instead: "
            "metric.load_state_dict([torch.load(f) for f in rank_files]) (merged into rank 0, neutral "
            "elsewhere), or merge them once with syncfree.merge_state_dicts(...) and load the result on "
            "every rank."
        )
    return sd


def load_metric(metric: Any, sd: Any, strict: bool = True) -> None:
    """Copy a checkpoint (or a list of per-rank checkpoints) into ``metric``'s local states.

    All or nothing: the checkpoint is validated first; on an error the metric is untouched.
    """
    _apply_metric_load(metric, _prepare_metric_load(metric, sd, strict))


def _prepare_metric_load(metric: Any, sd: Any, strict: bool) -> Dict[str, Tensor]:
    """Validate ``sd`` for ``metric``; return the new value of every state (nothing is modified)."""
    name = type(metric).__name__
    sd = _for_this_rank(sd, metric.process_group)
    _check_header(sd, name)
    for key in ("states", "reductions"):
        if key not in sd:
            raise ValueError(f"{name} checkpoint is missing the {key!r} field")
    saved = sd["states"]
    if sd["_version"] != VERSION:
        saved = metric.upgrade_states(sd["_version"], dict(saved))
    own = metric.load_targets(saved)
    missing = [k for k in own if k not in saved]
    unexpected = [k for k in saved if k not in own]
    if missing or (strict and unexpected):
        if sd["_version"] == 1 and "confmat" in own and {"tp", "fp", "tn", "fn"} <= set(saved):
            raise ValueError(
                f"{name} checkpoint has version 1, whose stat scores are per-class tp/fp/tn/fn counts; "
                f"version {VERSION} keeps a confusion matrix ('confmat'), which cannot be rebuilt from "
                "them. Load it with the syncfree release that wrote it, or re-run the evaluation."
            )
        raise ValueError(
            f"{name} checkpoint does not match: missing states {missing}, unexpected states {unexpected}"
        )
    for key, state in own.items():
        value = saved[key]
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} checkpoint: state {key!r} is a {type(value).__name__}, not a tensor")
        if tuple(value.shape) != tuple(state.shape):
            raise ValueError(
                f"{name} checkpoint: state {key!r} has shape {tuple(value.shape)}, the metric expects "
                f"{tuple(state.shape)} (was it saved with other constructor arguments, e.g. num_classes?)"
            )
    # Converted now (dtype, device), so that applying them cannot fail half-way.
    return {key: saved[key].detach().to(device=state.device, dtype=state.dtype) for key, state in own.items()}


def _apply_metric_load(metric: Any, values: Mapping[str, Tensor]) -> None:
    metric.load_values(values)


def load_collection(collection: Any, sd: Any, strict: bool = True) -> None:
    """Load a collection checkpoint (or a list of per-rank ones).

    All or nothing: every member's checkpoint is validated before any member is modified.
    """
    sd = _for_this_rank(sd, collection.process_group)
    _check_header(sd, _COLLECTION)
    saved: Dict[str, Any] = sd.get("metrics", {})
    members = dict(collection.items(keep_base=True))
    own: List[str] = list(members)
    missing = [k for k in own if k not in saved]
    unexpected = [k for k in saved if k not in own]
    if missing or (strict and unexpected):
        raise ValueError(
            f"MetricCollection checkpoint does not match: missing metrics {missing}, "
            f"unexpected metrics {unexpected}"
        )
    prepared = {}
    for key in own:
        try:
            prepared[key] = _prepare_metric_load(members[key], saved[key], strict)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"MetricCollection member {key!r}: {exc} (nothing was loaded)") from exc
    for key in own:
        _apply_metric_load(members[key], prepared[key])
