"""SFL305: an update of a classification metric that reads the device (input validation, or per-class counting),
in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.metric_sites import update_reads
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.nodes import walk_code
from syncfree_lint.fixes.metric_switch import switch_plan
from syncfree_lint.rules.base import Rule
from syncfree_lint.rules.torchmetrics._common import SWITCH_DOC, SWITCH_TITLE


class ValidatingClassifier(Rule[cst.Call]):
    code = "SFL305"
    name = "validating-classification-metric"
    messages = {
        "default": "classification metric updated in a step validates its inputs (`validate_args=True`, the default): "
                   "`torch.unique` syncs every update",
        "metric": "torchmetrics `{metric}` {call} validates its inputs (`validate_args=True`, the default): "
                  "`torch.unique` syncs every step; use `syncfree.{metric}` or build it with `validate_args=False`",
        "counting": "torchmetrics `{metric}` {call} counts per class with `torch.bincount` (sized by the data): it "
                    "syncs every step, validation or not; use `syncfree.{metric}`",
        "top_k": "torchmetrics `{metric}` {call} one-hot encodes its top k predictions (`F.one_hot` checks the indices "
                 "on the host): it syncs every step; use `syncfree.{metric}`",
        "labels": "torchmetrics `{metric}` {call} validates integer labels (`validate_args=True`, the default): "
                  "`torch.unique` syncs every step; use `syncfree.{metric}`, pass the scores, or build it with "
                  "`validate_args=False`",
    }
    fix_title = SWITCH_TITLE
    node_types = (cst.Call,)
    evidence = ("metric",)
    invalid = (
        """
        from torchmetrics.classification import MulticlassAccuracy

        def evaluate(model, loader, device):
            acc = MulticlassAccuracy(num_classes=10).to(device)
            for x, y in loader:
                acc.update(model(x), y)
        """,
    )
    valid = (
        """
        from syncfree import MulticlassAccuracy

        def evaluate(model, loader, device):
            acc = MulticlassAccuracy(num_classes=10).to(device)
            for x, y in loader:
                acc.update(model(x), y)
        """,
        """
        from torchmetrics.classification import MulticlassAccuracy

        def evaluate(model, loader, device):
            acc = MulticlassAccuracy(num_classes=10, average="micro", validate_args=False).to(device)
            for x, y in loader:
                acc.update(model(x), y)
        """,
    )
    doc = """
## What it does
Flags an update in a step (`update(...)`, or a call: `metric(preds, target)`) of a torchmetrics
classification metric (`Accuracy`, `Precision`, `Recall`, `F1Score`, `ConfusionMatrix`, their
`Binary*`/`Multiclass*` forms, ...) built with `validate_args` left at its default `True`; an
update of a collection names each such member. The sync happens at the update, so that is where
it is reported; the fix changes the construction.

Also flagged whatever `validate_args` says: a multiclass metric built on stat scores (`MulticlassAccuracy`,
`F1Score(task="multiclass")`, ...) with an `average` other than `"micro"` (the default is `"macro"`), and the
confusion-matrix metrics (`JaccardIndex`, `ConfusionMatrix`, `MatthewsCorrCoef`, `CohenKappa`). Not flagged:
`BinaryAUROC` (its update never validates), and a multiclass `average="micro"` metric given scores (its
validation reads only integer labels: an update given `logits.argmax(1)` is flagged).

## Why it syncs
Input validation calls `torch.unique` on the targets and checks the values in Python: a
data-dependent shape and a host read every update. Per-class counting uses `torch.bincount`, whose
output size depends on the data. Each was seen on the sync guard's stand-in
(`tests/unit/test_metric_knowledge.py`).

## Example
```python
acc = MulticlassAccuracy(num_classes=10)
for x, y in loader:
    acc.update(model(x), y)
```

## Use instead
```python
from syncfree import MulticlassAccuracy     # labels checked on device, reported by to_host
acc = MulticlassAccuracy(num_classes=10)
```
`validate_args=False` removes the validation's `torch.unique`, and the checks with it (an
unsafe change); torchmetrics' multiclass update still counts with `torch.bincount`, whose output
size depends on the data, so only the `syncfree` metric removes every per-update sync.
""" + SWITCH_DOC

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = ctx.metric_call(node)
        if found is None or found[1] == "compute":
            return
        site, call = found
        named = set()
        for target in site.members if site.members else (site,):
            reads = update_reads(target)
            if reads is None or target.class_name in named or (reads == "labels" and not _integer_labels(node, ctx.current_scope())):
                continue
            named.add(target.class_name)
            ctx.report(self, node, "metric" if reads == "validation" else reads, metric=target.class_name, call=call,
                       fix=switch_plan(ctx, target))


#: tensor methods whose result is integer class labels
_LABEL_METHODS = frozenset({"argmax", "argmin", "long", "int"})


def _integer_labels(node: cst.Call, scope: cst.CSTNode) -> bool:
    """The update's predictions are integer labels (``logits.argmax(1)``, ``out.max(1).indices``), or a name the
    function binds only to such (``preds = logits.argmax(dim=1)``)."""
    preds = node.args[0].value if node.args and node.args[0].keyword is None else None
    if isinstance(preds, cst.Name):
        bound = [n.value for n in walk_code(scope) if isinstance(n, cst.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0].target, cst.Name) and n.targets[0].target.value == preds.value]
        return bool(bound) and all(_labels_expression(value) for value in bound)
    return _labels_expression(preds)


def _labels_expression(expr: object) -> bool:
    if isinstance(expr, cst.Attribute) and expr.attr.value == "indices":
        return True
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _LABEL_METHODS
