"""What a torchmetrics classification metric's ``update`` reads from the device, from how it was built.

Seen on the sync guard's stand-in for each family (``tests/unit/test_metric_knowledge.py``), with float scores:

* binary and multilabel metrics read while ``validate_args`` is on (``torch.unique`` on the targets);
* multiclass stat-score metrics (``MulticlassAccuracy``, ``F1Score``, ...) count per class with ``torch.bincount``
  unless ``average="micro"`` (the default of the task wrappers, ``Accuracy(task="multiclass")``, not of
  ``MulticlassAccuracy``), validation or not; with ``"micro"`` their validation reads integer labels only;
* confusion-matrix metrics (``JaccardIndex``, ``ConfusionMatrix``, ``MatthewsCorrCoef``, ``CohenKappa``) always read;
* curves (``AUROC``, ``ROC``, ...) read while validating, but ``BinaryAUROC``, which never validates its update.

* a multiclass stat-score metric with ``top_k`` > 1 one-hot encodes the top k (``F.one_hot`` checks the indices on
  the host).

``update_read`` answers ``"validation"``, ``"counting"``, ``"top_k"``, ``"labels"`` (a read only when the predictions
are integer labels) or None.
"""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from syncfree_lint.analysis.call_args import is_true, keyword_value
from syncfree_lint.knowledge.metric_api import (
    CLASSIFICATION_BASES, CONFMAT_BASES, DEFAULT_MULTICLASS_AVERAGE, DEFAULT_TASK_WRAPPER_AVERAGE, INPUTS_UNCHECKED,
    STAT_SCORE_BASES,
)

_FAMILIES = ("Binary", "Multiclass", "Multilabel")
#: the letter each answer leaves in a metric's kind (``kinds.METRIC_PREFIX``), for code that receives the object
LETTERS = {"validation": "v", "counting": "b", "labels": "l", "top_k": "k"}


def family_and_base(class_name: str, call: Optional[cst.Call]) -> Tuple[Optional[str], Optional[str]]:
    """(``"binary"``/``"multiclass"``/``"multilabel"`` or None when not said, the base name) of a classification
    class; a task wrapper (``Accuracy(task="multiclass")``) says its family by its ``task``."""
    for family in _FAMILIES:
        if class_name.startswith(family) and class_name[len(family):] in CLASSIFICATION_BASES:
            return family.lower(), class_name[len(family):]
    if class_name not in CLASSIFICATION_BASES:
        return None, None
    task = _string(keyword_value(call, "task")) if call is not None else None
    if task is None and call is not None and call.args and call.args[0].keyword is None:
        task = _string(call.args[0].value)
    return task, class_name


def update_read(class_name: str, call: Optional[cst.Call], checks: Optional[str]) -> Optional[str]:
    """What an update of the metric built by ``call`` (``checks``: the letters of one built elsewhere) reads."""
    if checks is not None:
        return next((answer for answer, letter in LETTERS.items() if letter in checks), None)
    family, base = family_and_base(class_name, call)
    if base is None or class_name in INPUTS_UNCHECKED or call is None:
        return None
    if base in CONFMAT_BASES:
        return "counting"
    validating = _validating(call)
    if family == "multiclass" and base in STAT_SCORE_BASES:
        given = keyword_value(call, "average")
        default = DEFAULT_MULTICLASS_AVERAGE if class_name != base else DEFAULT_TASK_WRAPPER_AVERAGE
        average = _string(given) if given is not None else default
        if average is None and given is not None and not _is_none(given):
            return None  # `average=cfg.average`: not known here
        top_k = keyword_value(call, "top_k")
        if isinstance(top_k, cst.Integer) and int(top_k.value) > 1:
            return "top_k"  # `one_hot` of the top k indices checks them on the host
        if average != "micro":
            return "counting"
        return "labels" if validating else None
    return "validation" if validating else None


def _validating(call: cst.Call) -> bool:
    value = keyword_value(call, "validate_args")
    return value is None or is_true(value)


def _string(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(expr, cst.SimpleString) and isinstance(expr.evaluated_value, str):
        return expr.evaluated_value
    return None


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"
