"""Ranks agree on state sizes that each rank learned from its own batches.

Some metrics size their states from the first batch, as torchmetrics does (``R2Score()``
without ``num_outputs`` takes the width of ``preds``). The buckets a sync sends must be the same
on every rank, and a rank that saw no batch does not know the size. So before the first sync
of such a metric, every rank sends the size it knows in one small ``all_reduce`` (MAX of
``[size, -size]`` per metric, 0 and ``-2**62`` for "no batch yet"):

- every rank that saw a batch knew the same size: the ranks that saw none take it (their
  states are still neutral, so they are only reshaped);
- two ranks knew different sizes: every rank raises the same ``RuntimeError`` (each reads the
  same reduced row, so none goes on into the bucket all_reduces alone and none stalls);
- no rank saw a batch: nothing is decided; the next sync asks again.

Whether a metric takes part depends on its constructor (no ``num_outputs``) and on the syncs
every rank made before (after one agreement, no rank asks again), never on local batches. The
row lives where the group's collectives run: on the CPU under gloo (no device sync), on the
GPU under NCCL, where reading it back is one host sync, once per metric. Pass the size to the
constructor (``R2Score(num_outputs=k)``) to avoid even that one.
"""

from __future__ import annotations

from typing import Any, List, Sequence

import torch

from syncfree.distributed import transport_device

_NONE = -(2 ** 62)  # "no batch yet" in the negated half of the row


def agree_sizes(owner: str, metrics: Sequence[Any], group: Any) -> None:
    """One all_reduce over ``group`` settling ``size_to_agree()`` of every metric in ``metrics``
    (metrics whose ``size_to_agree()`` is None are not sent)."""
    asking = [(m, m.size_to_agree()) for m in metrics]
    asking = [(m, size) for m, size in asking if size is not None]
    if not asking:
        return
    row: List[int] = []
    for _, size in asking:
        row += [size, -size if size else _NONE]
    sent = torch.tensor(row, dtype=torch.int64, device=transport_device(group, torch.device("cpu")))
    torch.distributed.all_reduce(sent, op=torch.distributed.ReduceOp.MAX, group=group)
    got = sent.tolist()
    settled = []
    for i, (metric, _) in enumerate(asking):
        largest, smallest = got[2 * i], -got[2 * i + 1]
        if largest == 0:
            continue
        if smallest != largest:
            raise RuntimeError(
                f"syncfree: {owner}: {type(metric).__name__} took its size from the first batch and the "
                f"ranks saw different ones ({smallest} on one rank, {largest} on another): every rank must "
                "pass inputs of the same width; pass the size to the constructor (e.g. num_outputs=) to "
                "check it at update"
            )
        settled.append((metric, largest))
    for metric, size in settled:
        metric.agree_size(size)
