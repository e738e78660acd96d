"""Text metrics: perplexity of a language model's next-token scores.

States: the summed negative log-likelihood of the counted tokens (the metric's floating dtype),
the int64 count of counted tokens and the int64 count of bad targets. An update is one
``cross_entropy`` (summed) over the counted tokens, the others relabelled to its ignored label
(torchmetrics' ``log(softmax(preds)[target])``, in one fused, more accurate op), and one ``put_`` of
every token into its count bin: no boolean-mask indexing, no host sync.

Errors raised at ``update`` (known without reading the data, as torchmetrics raises them):
``preds`` not 3-d ``(batch, seq, vocab)``, ``target`` not 2-d ``(batch, seq)``, first two
dimensions that differ (``ValueError``); non-float preds or non-int64 targets (``TypeError``).
Deferred: targets outside ``[0, vocab)`` that are not ``ignore_index`` (torchmetrics fails with
an index error; a device-side index would crash a CUDA context) are excluded, counted, and
reported by :func:`syncfree.to_host` / ``compute(check=True)`` as a ``ValueError``.
NaN scores propagate to the result, as in torchmetrics.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from syncfree.metric import Metric

_SKIP = -100  # the label cross_entropy leaves out (any int: targets are remapped before)
_BAD_TARGETS = ("{metric}: {count} target token(s) outside [0, vocab_size) that are not ignore_index "
                "were excluded")


class Perplexity(Metric):
    """``exp(mean negative log-likelihood)`` of the target tokens under softmax(preds)."""
    higher_is_better = False

    is_differentiable = True

    def __init__(self, ignore_index: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, int)):
            raise ValueError(f"Perplexity: ignore_index must be None or an int, got {ignore_index!r}")
        self.ignore_index = ignore_index
        self.add_state("total_log_probs", (), self.dtype, "sum")
        # [count of counted tokens, count of bad targets | ignored (scratch)]: one put_ per update.
        self.add_state_group("_counts", [("count", (), "sum"), ("_bad_targets", (), "sum")], torch.int64,
                             scratch=1)
        self.add_check("_bad_targets", "error", _BAD_TARGETS, state=False)

    def _check(self, preds: Any, target: Any) -> None:
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
            raise TypeError("Perplexity.update: preds and target must be tensors")
        if preds.ndim != 3:
            raise ValueError(
                "Perplexity.update: preds must have 3 dimensions (batch_size, seq_len, vocab_size), got "
                f"{tuple(preds.shape)}"
            )
        if target.ndim != 2:
            raise ValueError(
                f"Perplexity.update: target must have 2 dimensions (batch_size, seq_len), got {tuple(target.shape)}"
            )
        if preds.shape[:2] != target.shape:
            raise ValueError(
                "Perplexity.update: preds and target must agree in their first two dimensions, got "
                f"{tuple(preds.shape)} and {tuple(target.shape)}"
            )
        if not preds.is_floating_point():
            raise TypeError(f"Perplexity.update: preds must be floating point scores, got {preds.dtype}")
        if target.dtype != torch.int64:
            raise TypeError(f"Perplexity.update: target must be int64 token ids, got {target.dtype}")

    def _accumulate(self, S: Any, preds: Tensor, target: Tensor) -> None:
        self._check(preds, target)
        vocab = preds.shape[2]
        scores = preds.detach().reshape(-1, vocab)
        if scores.dtype != self._dtype:
            scores = scores.to(self._dtype)
        t = target.reshape(-1)
        # Each token's bin in _counts: 0 counted, 1 bad target (out of range), 2 ignored (scratch).
        kind = (t.clamp(0, vocab - 1) != t).long()
        if self.ignore_index is not None:
            kind.masked_fill_(t == self.ignore_index, 2)
        # -log p(target) summed over the counted tokens: cross_entropy is log_softmax + a fused
        # pick-and-sum (one pass over the vocabulary); the others get its ignored label.
        counted = t.masked_fill(kind != 0, _SKIP)
        S.total_log_probs.add_(F.cross_entropy(scores, counted, ignore_index=_SKIP, reduction="sum"))
        S._counts.put_(kind, torch.ones_like(kind), accumulate=True)

    def _compute(self, states: Mapping[str, Tensor]) -> Tensor:
        return torch.exp(states["total_log_probs"] / states["count"])
