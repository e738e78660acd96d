"""SFL305: a classification metric that validates its inputs, updated in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.metric_sites import MetricSite, is_classification
from syncfree_lint.analysis.call_args import keyword_value
from syncfree_lint.rules.torchmetrics._common import SWITCH_DOC, ConstructionRule


class ValidatingClassifier(ConstructionRule):
    code = "SFL305"
    name = "validating-classification-metric"
    messages = {
        "default": "classification metric built with `validate_args=True` (the default) and updated in a step: "
                   "`torch.unique` syncs every update",
    }
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
            acc = MulticlassAccuracy(num_classes=10, validate_args=False).to(device)
            for x, y in loader:
                acc.update(model(x), y)
        """,
    )
    doc = """
## What it does
Flags the construction of a torchmetrics classification metric (`Accuracy`, `Precision`,
`Recall`, `F1Score`, `ConfusionMatrix`, their `Binary*`/`Multiclass*` forms, ...) that leaves
`validate_args` at its default `True`, when it is updated in a step.

## Why it syncs
Input validation calls `torch.unique` on the targets and checks the values in Python: a
data-dependent shape and a host read every update.

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

    def applies(self, site: MetricSite) -> bool:
        if not is_classification(site.class_name):
            return False
        if site.call is None:
            return False  # a dict of metrics: its members are sites of their own
        value = keyword_value(site.call, "validate_args")
        return value is None or (isinstance(value, cst.Name) and value.value == "True")
