"""Lightning: syncfree metrics logged once per epoch, with no host sync in the steps.

    trainer = lightning.Trainer(callbacks=[syncfree.lightning.EpochMetrics()])

Two ways to log. (1) As with torchmetrics: ``self.log("acc", self.acc)`` (or ``self.log_dict(collection)``)
logs the metric object; Lightning calls ``compute()`` at the epoch end and resets it. Importing this
module makes that work: it registers ``syncfree.metric.Metric`` as a virtual subclass of
``torchmetrics.Metric``, the type Lightning's ``self.log`` accepts. (2) The callback: the steps only
update (``self.train_acc.update(preds, y)`` or ``self.train_acc(preds, y)``; logging
``metric.compute()`` every step would average per-step values), and at the end of
each training, validation and test epoch, ``EpochMetrics`` logs ``compute()`` of every syncfree
metric or ``MetricCollection`` the module holds (at any depth) that was updated during that epoch
(on any rank: under DDP the ranks agree on that with one tiny all_reduce, so a rank that saw no
batch for a metric still joins its collective),
under its attribute path (``train_acc``; a collection logs its own keys), then resets it. Like
torchmetrics' default ``sync_on_compute=True``, ``compute()`` is global under DDP (an all_reduce
on every rank, at the same point). The values are read with :func:`syncfree.to_host`: one host
read per metric per epoch, which carries the value-error counts (labels out of range, NaN under
``nan_strategy="error"``) too, so such errors raise a ``ValueError`` there naming the metric and
the count (torchmetrics raises at the update; ``syncfree.validate("eager")`` does too).

``lightning`` (or ``pytorch_lightning``) is imported only by this module.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Set, Tuple

if TYPE_CHECKING:  # the type checker sees one Callback class: lightning's
    from lightning.pytorch.callbacks import Callback
else:
    try:
        from lightning.pytorch.callbacks import Callback
    except ImportError:  # pragma: no cover - the older package name
        try:
            from pytorch_lightning.callbacks import Callback
        except ImportError as exc:  # pragma: no cover
            raise ImportError("syncfree.lightning needs lightning: pip install lightning") from exc

import torch
from torchmetrics import Metric as _TorchMetric

from syncfree.collection import MetricCollection
from syncfree.distributed import is_distributed, transport_device
from syncfree.host import to_host
from syncfree.metric import Metric


# ``self.log("acc", metric)`` as with torchmetrics: Lightning accepts a value only if it is a
# ``torchmetrics.Metric`` (an ``isinstance`` check), keeps the object, calls its ``compute()`` at the
# epoch end (global under DDP, ``sync_on_compute``) and ``reset()``s it; ``on_step`` logs the value
# ``forward`` returned (``_forward_cache``). A syncfree metric has all of that, so it is registered as a
# virtual subclass of torchmetrics' ``Metric`` (an ABC): nothing of torchmetrics runs in it.
_TorchMetric.register(Metric)


def _metrics(module: Any) -> Iterator[Tuple[str, Any]]:
    """(attribute path, metric or collection) held by ``module``; a collection's members are its own."""
    inside: List[str] = []
    for name, sub in module.named_modules():
        if any(name.startswith(prefix + ".") for prefix in inside):
            continue
        if isinstance(sub, MetricCollection):
            inside.append(name)
            yield name, sub
        elif isinstance(sub, Metric):
            yield name, sub


def _loggable(value: Any) -> Any:
    """A value from ``to_host`` as ``LightningModule.log`` takes it (a number; a list as a tensor)."""
    return torch.tensor(value) if isinstance(value, list) else value


def _updated_on_any_rank(flags: List[bool]) -> List[bool]:
    """``flags`` (one per metric, in the module's order, the same on every rank) OR-ed over the ranks.

    Whether a rank computes a metric (a collective under ``sync_on_compute``) must not depend on its
    local history: a rank that saw no batch for a metric in this epoch (uneven data, a conditional
    update) would skip the all_reduce the other ranks wait in. One tiny all_reduce (MAX) and one host
    read per epoch end, only under a process group of several ranks.
    """
    if not flags or not is_distributed():
        return flags
    import torch.distributed as dist

    device = transport_device(None, torch.device("cpu"))
    agreed = torch.tensor([int(f) for f in flags], dtype=torch.int64, device=device)
    dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
    return [bool(v) for v in agreed.tolist()]


def _serial(metric: Any) -> int:
    if isinstance(metric, MetricCollection):
        return sum(m.update_count for m in metric.values())
    return metric.update_count


class EpochMetrics(Callback):
    """Log and reset, at each epoch's end, the syncfree metrics updated during that epoch."""

    def __init__(self, prog_bar: bool = False) -> None:
        self.prog_bar = prog_bar
        self._start: Dict[str, Dict[int, int]] = {}
        self._owned_by_evaluation: Set[int] = set()

    def _begin(self, stage: str, module: Any) -> None:
        self._start[stage] = {id(m): _serial(m) for _, m in _metrics(module)}

    def _finish(self, stage: str, module: Any) -> None:
        start = self._start.pop(stage, {})
        found = list(_metrics(module))
        updated = _updated_on_any_rank([_serial(m) != start.get(id(m), 0) for _, m in found])
        for (name, metric), was_updated in zip(found, updated):
            if not was_updated:
                continue  # not updated in this stage's epoch, on any rank
            if stage == "train" and id(metric) in self._owned_by_evaluation:
                continue  # updated by the validation that ran inside this training epoch
            if stage != "train":
                self._owned_by_evaluation.add(id(metric))
            try:
                value = to_host(metric)  # the values and the value-error counts, one transfer
            except ValueError as exc:
                raise ValueError(f"syncfree.lightning.EpochMetrics: {stage} metric {name!r}: {exc}. Fix the "
                                 "data, or run with syncfree.validate('eager') to raise at the bad update "
                                 "(slow: a host sync per update)") from exc
            if isinstance(value, dict):
                module.log_dict({k: _loggable(v) for k, v in value.items()}, on_step=False, on_epoch=True,
                                prog_bar=self.prog_bar)
            else:
                module.log(name, _loggable(value), on_step=False, on_epoch=True, prog_bar=self.prog_bar)
            metric.reset()

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._begin("train", pl_module)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._finish("train", pl_module)

    def on_validation_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._begin("validation", pl_module)

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._finish("validation", pl_module)

    def on_test_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._begin("test", pl_module)

    def on_test_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._finish("test", pl_module)
