"""A torchmetrics object is a value: handed to a helper as an argument, returned by a factory (alone, or a dict of
them), kept on ``self`` or looped over, in this file or another. Its updates in a step sync as the class and its
constructor arguments say, wherever it was built; a metric built to skip the checks, or a ``syncfree`` one, does not."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_PASSED = """
    import torch
    import torch.nn.functional as F
    from {package} import {cls}

    def run_epoch(model, loader, opt, metric):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            metric.update({update_args})

    def main(model, loader, opt):
        metric = {cls}({ctor}).cuda()
        for epoch in range(3):
            run_epoch(model, loader, opt, metric)
        print(metric.compute())
"""


@pytest.mark.parametrize("package, cls, ctor, update_args, code", [
    ("torchmetrics.classification", "MulticlassAccuracy", "num_classes=4", "logits, y", "SFL305"),
    ("torchmetrics", "MeanMetric", "", "loss.detach()", "SFL301"),
    ("torchmetrics.classification", "MulticlassAccuracy", "num_classes=4, validate_args=False", "logits, y", "SFL305"),
    ("torchmetrics.classification", "MulticlassAccuracy", "num_classes=4, average='micro'", "logits, y", None),
    ("torchmetrics.classification", "MulticlassAccuracy", "num_classes=4, average='micro'", "logits.argmax(1), y",
     "SFL305"),
    ("torchmetrics.classification", "MulticlassAccuracy", "num_classes=4, average='micro', validate_args=False",
     "logits.argmax(1), y", None),
    ("torchmetrics", "Accuracy", "task='multiclass', num_classes=4", "logits, y", None),
    ("torchmetrics", "Accuracy", "task='multiclass', num_classes=4", "logits.max(1).indices, y", "SFL305"),
    ("torchmetrics", "MeanMetric", "nan_strategy='disable'", "loss.detach()", None),
    ("syncfree", "MeanMetric", "", "loss.detach()", None),
])
def test_a_metric_passed_to_a_helper_keeps_what_its_construction_says(tmp_path, package, cls, ctor, update_args,
                                                                       code):
    found = lint_files(tmp_path, {"train.py": _PASSED.format(package=package, cls=cls, ctor=ctor,
                                                             update_args=update_args)})
    at_update = [c for name, line, c in found if line == 14]
    assert at_update == ([code] if code else [])


_FACTORIES = """
    from torchmetrics import MeanMetric
    from torchmetrics.classification import MulticlassAccuracy

    def build_losses(device, nan_strategy="warn"):
        return {{name: MeanMetric().to(device) for name in ("loss", "aux")}}

    def build_accuracy(n, device):
        return MulticlassAccuracy(num_classes=n, average="micro", validate_args={check}).to(device)

    def update_all(metrics, values):
        for name, metric in metrics.items():
            metric.update(values[name])
"""

_TRAINER = """
    import torch
    from metrics import build_accuracy, build_losses, update_all

    class Trainer:
        def __init__(self, model, opt, n):
            self.model, self.opt = model.cuda(), opt
            self.losses = build_losses("cuda")
            self.acc = build_accuracy(n, "cuda")

        def step(self, x, y):
            logits = self.model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            update_all(self.losses, {{"loss": loss.detach(), "aux": logits.pow(2).mean()}})
            self.acc(logits.argmax(1), y)

    def fit(trainer, loader):
        for x, y in loader:
            trainer.step(x.cuda(), y.cuda())
"""


@pytest.mark.parametrize("check", ["True", "False"])
def test_factories_of_another_file_give_metrics_and_dicts_of_them(tmp_path, check):
    found = lint_files(tmp_path, {"metrics.py": _FACTORIES.format(check=check), "trainer.py": _TRAINER.format()})
    assert ("metrics.py", 13, "SFL301") in found  # each MeanMetric of the dict checks for NaN per update
    assert (("trainer.py", 18, "SFL305") in found) == (check == "True")


def test_a_metric_read_only_after_the_loop_stays_quiet(tmp_path):
    found = lint_files(tmp_path, {"train.py": """
        import torch
        from torchmetrics import MeanMetric

        def summarise(metric):
            return metric.compute()

        def train(model, loader, opt):
            meter = MeanMetric().cuda()
            for x, y in loader:
                loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(summarise(meter))
    """})
    assert found == []


_MIXED = """
    from torchmetrics.classification import BinaryAccuracy, BinaryAUROC

    def build_metrics(device):
        return {"train_acc": BinaryAccuracy().to(device), "val_auroc": BinaryAUROC().to(device)}
"""

_MIXED_LOOP = """
    from metrics import build_metrics

    def run(model, opt, loader, metric, scores):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            logits = model(x)
            loss = (logits - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            metric.update(logits.sigmoid(), y)
            scores.update(logits.sigmoid(), y)

    def main(model, opt, loader):
        metrics = build_metrics("cuda")
        run(model, opt, loader, metrics["train_acc"], metrics["val_auroc"])
"""


def test_members_of_a_dict_of_different_metrics_keep_their_own_checks(tmp_path):
    """`metrics["train_acc"]` of a factory's dict is the accuracy (validating), `metrics["val_auroc"]` the AUROC
    (whose update checks nothing): the kind keeps each member's key."""
    found = lint_files(tmp_path, {"metrics.py": _MIXED, "train.py": _MIXED_LOOP})
    at = {(line, code) for path, line, code in found if path == "train.py"}
    assert (12, "SFL305") in at
    assert not [code for line, code in at if line == 13]


def test_predictions_kept_in_a_name_as_labels_are_validated(tmp_path):
    """`preds = logits.argmax(dim=1)` then `acc.update(preds, y)`: integer labels, which the micro accuracy validates."""
    found = lint_files(tmp_path, {"train.py": """
        import torch
        import torchmetrics

        def evaluate(model, loader, acc, probs):
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                logits = model(x)
                preds = logits.argmax(dim=1)
                acc.update(preds, y)
                probs.update(logits, y)

        def main(model, loader):
            acc = torchmetrics.Accuracy(task="multiclass", num_classes=3).cuda()
            evaluate(model, loader, acc, torchmetrics.Accuracy(task="multiclass", num_classes=3).cuda())
    """})
    assert ("train.py", 10, "SFL305") in found
    assert not [f for f in found if f[1] == 11]
