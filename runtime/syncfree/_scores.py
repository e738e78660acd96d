"""The stat-score core of every stat-score metric: binary and multiclass
(:mod:`syncfree.classification`, :mod:`syncfree.scores`) and multilabel (:mod:`syncfree.multilabel`).

Their states are confusion matrices of two layouts (a ``C x C`` matrix of target and pred class,
or a ``2 x 2 x L`` matrix per label); :func:`multiclass_stats` and :func:`multilabel_stats` read
tp/fp/tn/fn from them, and :func:`reduce` turns tp/fp/tn/fn into the score: torchmetrics'
``_*_reduce`` functions, written without host syncs. F1 is F-beta with beta = 1."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import torch
from torch import Tensor

# Kinds whose macro average excludes absent classes by ``tp + fn == 0`` under top_k > 1
# (torchmetrics passes top_k to the weights of these only).
AVERAGES = ("micro", "macro", "weighted", "none")
_TOP_K_WEIGHTS = ("accuracy", "precision", "recall")


def check_beta(owner: str, beta: Any) -> float:
    """``beta`` as a float, or a ``ValueError`` that says what it must be."""
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
        raise ValueError(f"{owner}: beta must be a float larger than 0, got {beta!r}")
    return float(beta)


def multiclass_stats(states: Mapping[str, Tensor]) -> Dict[str, Tensor]:
    """Per-class tp/fp/tn/fn (one class against the rest) from a ``C x C`` ``confmat`` (rows: target);
    states that already hold tp/fp/tn/fn (the layout of many classes) are returned as they are."""
    if "confmat" not in states:
        return dict(states)
    cm = states["confmat"]
    tp = cm.diagonal()
    fp = cm.sum(0) - tp
    fn = cm.sum(1) - tp
    tn = cm.sum() - tp - fp - fn
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}


def multilabel_stats(states: Mapping[str, Tensor]) -> Dict[str, Tensor]:
    """Per-label tp/fp/tn/fn from a ``2 x 2 x L`` ``confmat`` (target, pred, label)."""
    cm = states["confmat"]
    return {"tp": cm[1, 1], "fp": cm[0, 1], "tn": cm[0, 0], "fn": cm[1, 0]}


def div(num: Tensor, den: Tensor, zero: float, dtype: torch.dtype) -> Tensor:
    """``num / den``, ``zero`` where ``den == 0`` (torchmetrics' ``_safe_divide``)."""
    num, den = num.to(dtype), den.to(dtype)
    return torch.where(den != 0, num / den, torch.full_like(num, zero))


def average(score: Tensor, how: str, tp: Tensor, fp: Tensor, fn: Tensor, multilabel: bool, top_k: int) -> Tensor:
    """torchmetrics' ``_adjust_weights_safe_divide``."""
    if how == "none":
        return score
    if how == "weighted":
        weights = (tp + fn).to(score.dtype)
    else:
        weights = torch.ones_like(score)
        if not multilabel:
            absent = (tp + fp + fn == 0) if top_k == 1 else (tp + fn == 0)
            weights = torch.where(absent, torch.zeros_like(score), weights)
    return div(weights * score, weights.sum(-1, keepdim=True), 0.0, score.dtype).sum(-1)


def stat_scores(s: Mapping[str, Tensor], how: str) -> Tensor:
    """``[tp, fp, tn, fn, support]`` (per class for ``"none"``), as torchmetrics' StatScores."""
    tp, fp, tn, fn = s["tp"], s["fp"], s["tn"], s["fn"]
    res = torch.stack([tp, fp, tn, fn, tp + fn], dim=-1)
    if how in ("binary", "none"):
        return res
    if how == "micro":
        return res.sum(0)
    if how == "macro":
        return res.float().mean(0)
    weight = tp + fn
    return (res * (weight / weight.sum()).reshape(-1, 1)).sum(0)


def reduce(kind: str, s: Mapping[str, Tensor], how: str, *, multilabel: bool = False, top_k: int = 1,
           zero: float = 0.0, beta: float = 1.0, dtype: torch.dtype = torch.float32) -> Tensor:
    """The score ``kind`` of the stats ``s`` (tp/fp/tn/fn, scalars for ``how="binary"``)."""
    if kind == "stat_scores":
        return stat_scores(s, how)
    tp, fp, tn, fn = s["tp"], s["fp"], s["tn"], s["fn"]
    if how == "micro":
        tp, fp, tn, fn = tp.sum(), fp.sum(), tn.sum(), fn.sum()
    if kind == "accuracy":
        if how == "binary" or (multilabel and how == "micro"):
            return div(tp + tn, tp + tn + fp + fn, 0.0, dtype)
        if how == "micro":
            return div(tp, tp + fn, 0.0, dtype)
        score = div(tp + tn, tp + tn + fp + fn, 0.0, dtype) if multilabel else div(tp, tp + fn, 0.0, dtype)
    elif kind in ("precision", "recall"):
        score = div(tp, tp + (fp if kind == "precision" else fn), zero, dtype)
    elif kind == "specificity":
        score = div(tn, tn + fp, 0.0, dtype)
    elif kind in ("fbeta", "f1"):  # F1 is F-beta with beta = 1
        b2 = beta * beta
        score = div((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, zero, dtype)
    else:
        raise AssertionError(kind)
    if how in ("binary", "micro"):
        return score
    return average(score, how, s["tp"], s["fp"], s["fn"], multilabel, top_k if kind in _TOP_K_WEIGHTS else 1)


def jaccard(confmat: Tensor, how: str, ignore_index: Optional[int], zero: float, dtype: torch.dtype) -> Tensor:
    """torchmetrics' ``_jaccard_index_reduce`` of a (2, 2), (C, C) or (L, 2, 2) confusion matrix."""
    cm = confmat.to(dtype)
    if how == "binary":
        return div(cm[1, 1], cm[0, 1] + cm[1, 0] + cm[1, 1], zero, dtype)
    ignore_in = ignore_index is not None and 0 <= ignore_index < cm.shape[0]
    multilabel = cm.ndim == 3
    if multilabel:
        num = cm[:, 1, 1]
        den = cm[:, 1, 1] + cm[:, 0, 1] + cm[:, 1, 0]
    else:
        num = torch.diagonal(cm)
        den = cm.sum(0) + cm.sum(1) - num
    if how == "micro":
        num = num.sum()
        den = den.sum() - (den[ignore_index] if ignore_in else 0.0)
    score = div(num, den, zero, dtype)
    if how in ("none", "micro"):
        return score
    if how == "weighted":
        weights = cm[:, 1, 1] + cm[:, 1, 0] if multilabel else cm.sum(1)
    else:
        weights = torch.ones_like(score)
        if ignore_in:
            weights[ignore_index] = 0.0  # a Python index: a fill on a view, no copy, no sync
        if not multilabel:
            weights = torch.where(cm.sum(1) + cm.sum(0) == 0, torch.zeros_like(weights), weights)
    return ((weights * score) / weights.sum()).sum()
