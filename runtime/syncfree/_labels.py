"""Label handling shared by syncfree's classification metrics: argument checks, batch -> labels,
and the confusion-matrix histogram layout (see :class:`_Labels`). The public classes are in
:mod:`syncfree.classification`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple, cast

import torch
from torch import Tensor

from syncfree.metric import Metric

_INT64 = torch.int64
_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
_AVERAGES = ("micro", "macro", "weighted", "none")
_NORMALIZE = ("true", "pred", "all", "none", None)
_BAD_LABELS = ("{metric}: {count} value(s) with a label outside the valid range were excluded "
               "(targets must be in [0, num_classes) or ignore_index; integer preds in [0, num_classes))")


# ---- argmax shared by the members of a collection during one update -----------------------
# ``MetricCollection.update``/``forward`` set this to a dict for the duration of the call, so that
# its multiclass members compute ``preds.argmax(1)`` (the costliest op of an update with many
# classes) once. Entries keep the preds tensor alive and are matched by identity: within one call
# the batch cannot change. None outside such a call (each metric computes its own).
_SHARED_ARGMAX: Optional[Dict[int, Tuple[Tensor, Tensor]]] = None


def _argmax1(preds: Tensor) -> Tensor:
    shared = _SHARED_ARGMAX
    if shared is None or torch.compiler.is_compiling():
        return preds.argmax(1)
    hit = shared.get(id(preds))
    if hit is not None and hit[0] is preds:
        return hit[1]
    out = preds.argmax(1)
    shared[id(preds)] = (preds, out)
    return out


class shared_argmax:
    """Context manager: members updated inside it share ``preds.argmax(1)`` (not re-entrant state:
    an inner one keeps the outer dict)."""

    def __enter__(self) -> None:
        global _SHARED_ARGMAX
        self._outer = _SHARED_ARGMAX
        # Not under torch.compile: the graph computes each argmax (and keys by id would recompile).
        if self._outer is None and not torch.compiler.is_compiling():
            _SHARED_ARGMAX = {}

    def __exit__(self, *exc: Any) -> None:
        global _SHARED_ARGMAX
        _SHARED_ARGMAX = self._outer


# ---- argument checks (host only) --------------------------------------------------------
def _check_common(owner: str, multidim_average: str, ignore_index: Optional[int]) -> None:
    if multidim_average != "global":
        raise TypeError(
            f"{owner}: multidim_average={multidim_average!r} is not supported by syncfree (per-sample "
            "states grow with the data). Use multidim_average='global', or keep torchmetrics for this metric."
        )
    if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, int)):
        raise ValueError(f"{owner}: ignore_index must be None or an int, got {ignore_index!r}")


def _check_zero_division(owner: str, zero_division: Any) -> float:
    if zero_division not in (0, 1):
        raise ValueError(f"{owner}: zero_division must be 0 or 1, got {zero_division!r}")
    return float(zero_division)


def _check_num_classes(owner: str, num_classes: Any) -> int:
    if num_classes is None:
        raise TypeError(
            f"{owner}: num_classes is required: syncfree keeps fixed-size per-class states on the device. "
            "Pass num_classes=<number of classes>."
        )
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"{owner}: num_classes must be an int larger than 1, got {num_classes!r}")
    return num_classes


def _check_inputs(owner: str, preds: Any, target: Any) -> None:
    """What is known without reading the data: tensors, real dtypes (torchmetrics raises too)."""
    if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{owner}.update: preds and target must be tensors")
    if preds.is_complex() or target.is_complex():
        raise TypeError(
            f"{owner}.update: complex preds/target are not supported (got {preds.dtype} and {target.dtype}). "
            "Pass real scores or labels, e.g. preds.real or preds.abs()."
        )


def _labels_of(x: Tensor, bad: int) -> Tensor:
    """Labels as int64. Float labels are accepted, as torchmetrics does: integral values become
    labels, any other value (0.5, NaN, inf) becomes ``bad`` (out of range: counted, excluded)."""
    if not x.is_floating_point():
        return x.long()
    as_int = x.long()
    return torch.where(as_int == x, as_int, bad)


# ---- batch -> labels ----------------------------------------------------------------------
def _valid_and_bad(t: Tensor, pl: Tensor, num_classes: int, ignore_index: Optional[int]) -> Tuple[Tensor, Tensor]:
    """(keep mask, count of non-ignored entries with an out-of-range label)."""
    in_range = (t >= 0) & (t < num_classes) & (pl >= 0) & (pl < num_classes)
    if ignore_index is None:
        return in_range, (~in_range).sum()
    ignored = t == ignore_index
    return in_range & ~ignored, (~in_range & ~ignored).sum()


def _class_stats(t: Tensor, pl: Tensor, keep: Tensor, num_classes: int) -> Dict[str, Tensor]:
    """Per-class tp/fp/tn/fn of the kept entries (scatter_add_ with a fixed size, no sync)."""
    k = keep.long()
    tc = torch.where(keep, t, torch.zeros_like(t))
    pc = torch.where(keep, pl, torch.zeros_like(pl))
    zeros = torch.zeros(num_classes, dtype=torch.int64, device=t.device)
    tp = zeros.clone().scatter_add_(0, tc, k * (pl == t).long())
    predicted = zeros.clone().scatter_add_(0, pc, k)
    actual = zeros.scatter_add_(0, tc, k)
    fp = predicted - tp
    fn = actual - tp
    tn = k.sum() - tp - fp - fn
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}


def _build_luts(num_classes: int, ignore_index: Optional[int], float_preds: bool) -> Tuple[Tensor, Tensor]:
    """(bin, weight) of every (clamped target, pred) pair, for the flat ``_hist`` buffer.

    Targets are clamped to ``[-1, C]`` (``-1`` and ``C`` stand for every out-of-range value) and,
    when ``ignore_index`` is outside ``[0, C)``, ignored entries are marked ``C + 1`` first. Preds
    are class indices in ``[0, C)`` (float scores) or integer labels clamped to ``[-1, C]``. The
    tables are indexed by ``target * K + pred`` (K = number of pred values); ``torch.take`` wraps
    the negative indices of target ``-1`` to the end. A bad entry goes to the first bad-label
    bin (index ``C * C``), an ignored one has weight 0.
    """
    c = num_classes
    ignore_out = ignore_index is not None and not 0 <= ignore_index < c
    rows = range(-1, c + 2 if ignore_out else c + 1)
    cols = range(0, c) if float_preds else range(-1, c + 1)
    k, size = len(cols), len(rows) * len(cols)
    bins, weights = [0] * size, [1] * size
    for r in rows:
        for p in cols:
            i = (r * k + p) % size
            if (r == c + 1) if ignore_out else (r == ignore_index):
                weights[i] = 0
            elif 0 <= r < c and 0 <= p < c:
                bins[i] = r * c + p
            else:
                bins[i] = c * c
    return torch.tensor(bins, dtype=torch.int64), torch.tensor(weights, dtype=torch.int64)


# A stat-score metric with at most this many classes keeps a confusion matrix (C * C counts,
# updated by ONE put_); above it, per-class tp/fp/tn/fn (4 * C counts, more ops). Confusion
# matrices use lookup tables (int preds, ignore_index) up to this many classes, masks above.
_HIST_MAX_CLASSES = 128


class _Labels(Metric):
    """Label handling shared by stat scores and confusion matrices.

    The hist layout is ONE flat int64 buffer ``_hist = [confmat (C*C) | _bad_labels (2 x C)]``.
    Every counted entry of a batch lands in exactly one bin, so an update is a single
    ``put_(index, ones, accumulate=True)``. With float scores and no ``ignore_index`` (the hot
    path) the bin is ``clamp(target, -1, C) * C + pred``: a target ``>= C`` lands in row 0 of
    ``_bad_labels``, a target ``< 0`` in row 1 (``put_`` wraps the negative index to the end of
    the buffer). Integer preds and ``ignore_index`` go through a lookup table (``torch.take``;
    ignored entries get weight 0). No mask, no data-dependent shape, no sync. The bad-label count
    reported by ``to_host`` is ``_bad_labels.sum()``.
    """

    num_classes: int
    ignore_index: Optional[int]
    # What the updates read besides the states (see Metric._update_attributes): compute groups.
    _update_attributes = ("num_classes", "ignore_index", "threshold", "top_k", "_ignored_first", "_use_lut",
                          "_use_hist")
    # Binary float preds: decide logits vs probabilities after dropping ignored entries
    # (torchmetrics' confusion matrix) or over every entry (its stat scores).
    _ignored_first = False

    def _init_hist(self, num_classes: int, ignore_index: Optional[int], validate_args: bool,
                   lut: bool = True) -> None:
        c = num_classes
        self._hist_layout = True
        self._ignore_out = ignore_index is not None and not 0 <= ignore_index < c
        self._use_lut = lut
        self._ones: Dict[int, Tensor] = {}
        self.add_state_group("_hist", [("confmat", (c, c), "sum"), ("_bad_labels", (2, c), "sum")], torch.int64)
        self.add_check("_bad_labels", "error" if validate_args else "warn", _BAD_LABELS, state=False)
        if lut:
            bins, weights = _build_luts(c, ignore_index, True)
            self.add_constant("_lut_scores", bins)
            self.add_constant("_lut_scores_w", weights)
            bins, weights = _build_luts(c, ignore_index, False)
            self.add_constant("_lut_labels", bins)
            self.add_constant("_lut_labels_w", weights)

    def check_counters(self, states: Optional[Mapping[str, Tensor]] = None) -> List[Tuple[Tensor, str, str]]:
        if not getattr(self, "_hist_layout", False):
            return super().check_counters(states)
        bad = (self.states() if states is None else states)["_bad_labels"].sum()
        return [(bad, policy, message) for _, policy, message in self._checks if policy != "off"]

    def upgrade_states(self, version: int, states: Dict[str, Tensor]) -> Dict[str, Tensor]:
        """A version-1 confusion matrix checkpoint (``_bad_label_count``) in the version-2 layout."""
        if (version == 1 and getattr(self, "_hist_layout", False) and "confmat" in states
                and "_bad_label_count" in states):
            states = dict(states)
            bad = torch.zeros(2, self.num_classes, dtype=torch.int64)
            bad[0, 0] = states.pop("_bad_label_count").to(torch.int64).reshape(())
            states["_bad_labels"] = bad
        return states

    def _on_apply(self) -> None:
        self._ones = {}

    def _ones_like(self, index: Tensor) -> Tensor:
        """Ones of ``index``'s length: cached per length in eager mode (no fill per update), made
        fresh under torch.compile (a per-size cache would key the graphs on the batch size)."""
        if torch.compiler.is_compiling():
            return torch.ones_like(index)
        n = len(index)
        ones = self._ones.get(n)
        if ones is None:
            if len(self._ones) > 16:
                self._ones.clear()
            ones = self._ones[n] = torch.ones(n, dtype=torch.int64, device=index.device)
        return ones

    def _scatter(self, S: Any, t: Tensor, pl: Tensor, scores: bool) -> None:
        """Add every entry to its ``_hist`` bin (``scores``: preds are class indices in [0, C))."""
        c = self.num_classes
        ignore = self.ignore_index is not None
        if scores and not ignore:
            index = torch.add(pl, t.clamp(-1, c), alpha=c)
            S._hist.put_(index, self._ones_like(index), accumulate=True)
            return
        if self._use_lut:
            tc = t.clamp(-1, c)
            if self._ignore_out:
                tc.masked_fill_(t == cast(int, self.ignore_index), c + 1)  # set: _ignore_out
            if scores:
                code = torch.add(pl, tc, alpha=c)
                bins, weights = self._lut_scores, self._lut_scores_w
            else:
                code = torch.add(pl.clamp(-1, c), tc, alpha=c + 2)
                bins, weights = self._lut_labels, self._lut_labels_w
            index = torch.take(bins, code)
            weight = torch.take(weights, code) if ignore else self._ones_like(index)
        else:
            in_range = (t >= 0) & (t < c) & (pl >= 0) & (pl < c)
            if ignore:
                ignored = t == cast(int, self.ignore_index)  # set: ignore
                in_range = in_range & ~ignored
                weight = (~ignored).long()
            else:
                weight = self._ones_like(t)
            index = torch.where(in_range, t * c + pl, c * c)
        S._hist.put_(index, weight, accumulate=True)

    # ---- updates: a fast path for the common inputs, the general one otherwise ---------------
    def _multiclass_update(self, S: Any, preds: Tensor, target: Tensor) -> None:
        """top_k = 1. Fast path: float scores (N, C), int64 targets (N,), no ignore_index."""
        if type(preds) is Tensor and type(target) is Tensor and self.ignore_index is None:
            ps, ts = preds.shape, target.shape
            c = self.num_classes
            if (len(ts) == 1 and len(ps) == 2 and ps[1] == c and ps[0] == ts[0]
                    and target.dtype is _INT64 and preds.dtype in _FLOATS):
                index = torch.add(_argmax1(preds), target.clamp(-1, c), alpha=c)
                S._hist.put_(index, self._ones_like(index), accumulate=True)
                return
        self._scatter(S, *self._multiclass_labels(preds, target, 1))

    def _binary_update(self, S: Any, preds: Tensor, target: Tensor) -> None:
        """Fast path: float preds (N,) without grad, int64 targets (N,), no ignore_index."""
        if type(preds) is Tensor and type(target) is Tensor and self.ignore_index is None:
            ps = preds.shape
            if (len(ps) == 1 and ps == target.shape and target.dtype is _INT64 and preds.dtype in _FLOATS
                    and not preds.requires_grad):
                # Probabilities when every value is in [0, 1], else logits (see _binary_labels).
                pl = torch.where((preds.clamp(0, 1) == preds).all(), preds, preds.sigmoid()) > self._threshold
                index = torch.add(pl, target.clamp(-1, 2), alpha=2)
                S._hist.put_(index, self._ones_like(index), accumulate=True)
                return
        self._scatter(S, *self._binary_labels(preds, target))

    # ---- batch -> (flat targets, flat preds, preds are class indices in [0, C)) ------------
    def _bad_label(self) -> int:
        """An out-of-range label that is not ``ignore_index`` (for float labels that are no label)."""
        return -1 if self.ignore_index == self.num_classes else self.num_classes

    def _binary_labels(self, preds: Tensor, target: Tensor) -> Tuple[Tensor, Tensor, bool]:
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor) or target.dtype is not _INT64:
            _check_inputs(type(self).__name__, preds, target)
            target = _labels_of(target, self._bad_label())
        if preds.shape != target.shape:
            raise ValueError(
                f"{type(self).__name__}.update: preds and target must have the same shape, got "
                f"{tuple(preds.shape)} and {tuple(target.shape)}"
            )
        if target.ndim != 1:
            preds, target = preds.reshape(-1), target.reshape(-1)
        if preds.is_floating_point():
            if preds.requires_grad:
                preds = preds.detach()
            # Probabilities when every value is in [0, 1], else logits: decided on the device
            # (NaN: clamp keeps it, NaN != NaN, so logits, as torchmetrics).
            inside = preds.clamp(0, 1) == preds
            if self._ignored_first and self.ignore_index is not None:
                # torchmetrics' confusion matrix drops ignored entries before deciding.
                inside = inside | (target == self.ignore_index)
            return target, torch.where(inside.all(), preds, preds.sigmoid()) > self._threshold, True
        if preds.is_complex():
            _check_inputs(type(self).__name__, preds, target)
        return target, preds.long(), False

    def _multiclass_labels(self, preds: Tensor, target: Tensor, top_k: int) -> Tuple[Tensor, Tensor, bool]:
        owner = type(self).__name__
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor) or target.dtype is not _INT64:
            _check_inputs(owner, preds, target)
            target = _labels_of(target, self._bad_label())
        if preds.is_complex():
            _check_inputs(owner, preds, target)
        c = self.num_classes
        ps, ts = preds.shape, target.shape
        if len(ps) == len(ts) + 1:
            expected = (ts[0], c) + tuple(ts[1:]) if ts else None
            if not preds.is_floating_point():
                raise ValueError(
                    f"{owner}.update: preds with one dimension more than target must be float scores of shape "
                    f"(N, num_classes, ...) = {expected}, got {preds.dtype} preds. Pass scores (logits or "
                    "probabilities), or integer labels of the target's shape."
                )
            if not ts or ps[0] != ts[0] or ps[1] != c or ps[2:] != ts[1:]:
                raise ValueError(
                    f"{owner}.update: float preds must have shape (N, num_classes, ...) = "
                    f"{expected} for target of shape {tuple(ts)}, got {tuple(ps)}"
                )
            t = target if len(ts) == 1 else target.reshape(-1)
            if top_k == 1:
                pl = _argmax1(preds)
                return t, (pl if len(ts) == 1 else pl.reshape(-1)), True
            scores = preds.detach().movedim(1, -1).reshape(-1, c)
            top = scores.topk(top_k, dim=-1).indices
            hit = (top == t.unsqueeze(-1)).any(-1)
            # A hit counts as correct (pred = target), a miss as its top-1 class.
            return t, torch.where(hit, t, top[:, 0]), True
        if ps != ts:
            raise ValueError(
                f"{owner}.update: preds and target must have the same shape (labels), or preds the shape "
                f"(N, num_classes, ...) (scores); got {tuple(ps)} and {tuple(ts)}"
            )
        if top_k != 1:
            raise ValueError(f"{owner}.update: top_k={top_k} needs float scores of shape (N, num_classes, ...)")
        if target.ndim != 1:
            preds, target = preds.reshape(-1), target.reshape(-1)
        # Labels (float labels too, as torchmetrics): a non-integral value is out of range.
        return target, _labels_of(preds.detach(), -1), False
