"""syncfree metrics under the real Lightning Trainer: `syncfree.lightning.EpochMetrics` logs the
same epoch values as torchmetrics' `self.log("name", metric)`, and computes only at epoch ends."""
import pytest

torch = pytest.importorskip("torch")
lightning = pytest.importorskip("lightning")
torchmetrics = pytest.importorskip("torchmetrics")

import syncfree  # noqa: E402
from syncfree.lightning import EpochMetrics  # noqa: E402

CLASSES = 4


def _data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(96, 8, generator=g)
    y = torch.randint(0, CLASSES, (96,), generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=10)  # uneven last batch


class Net(lightning.LightningModule):
    def __init__(self, library, log_objects=False):
        super().__init__()
        self.log_objects = log_objects or library is torchmetrics  # self.log("name", metric)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(8, CLASSES)
        self.library = library
        self.train_acc = library.Accuracy(task="multiclass", num_classes=CLASSES)
        self.train_loss = library.MeanMetric()
        self.val_metrics = library.MetricCollection({
            "val_acc": library.Accuracy(task="multiclass", num_classes=CLASSES),
            "val_f1": library.F1Score(task="multiclass", num_classes=CLASSES, average="macro"),
        })

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.layer(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        self.train_acc.update(logits, y)
        self.train_loss.update(loss.detach())
        if self.log_objects:
            self.log("train_acc", self.train_acc, on_step=False, on_epoch=True)
            self.log("train_loss", self.train_loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.val_metrics.update(self.layer(x), y)
        if self.log_objects:
            self.log_dict(self.val_metrics, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


def _fit(library, callbacks, epochs=2, module=None):
    module = module or Net(library)
    trainer = lightning.Trainer(max_epochs=epochs, accelerator="cpu", devices=1, logger=False,
                                enable_checkpointing=False, enable_progress_bar=False,
                                enable_model_summary=False, num_sanity_val_steps=0, callbacks=callbacks)
    trainer.fit(module, _data(0), _data(1))
    return module, {k: float(v) for k, v in trainer.callback_metrics.items()}


def test_epoch_values_equal_torchmetrics():
    _, ours = _fit(syncfree, [EpochMetrics()])
    _, reference = _fit(torchmetrics, [])
    assert set(ours) == {"train_acc", "train_loss", "val_acc", "val_f1"}
    for name, value in reference.items():
        assert ours[name] == pytest.approx(value, abs=1e-6), name


def test_compute_runs_only_at_epoch_ends(monkeypatch):
    calls = []
    for cls in (syncfree.Metric, syncfree.MetricCollection):
        # what compute() and to_host() (EpochMetrics reads values and error counts with it) read
        original = cls.states_for_compute
        monkeypatch.setattr(cls, "states_for_compute", lambda self, *a, _o=original, **k: calls.append(type(self).__name__) or _o(self, *a, **k))
    module, _ = _fit(syncfree, [EpochMetrics()], epochs=3)
    # per epoch: Accuracy and MeanMetric (train), the collection (validation; it computes its members itself)
    assert sorted(calls) == sorted(["MulticlassAccuracy", "MeanMetric", "MetricCollection"] * 3), calls
    assert float(module.train_acc.compute()) == 0.0  # reset after the last epoch was logged


def test_self_log_of_a_syncfree_metric_equals_torchmetrics(monkeypatch):
    calls = []
    for cls in (syncfree.Metric, syncfree.MetricCollection):
        original = cls.states_for_compute
        monkeypatch.setattr(cls, "states_for_compute", lambda self, *a, _o=original, **k: calls.append(type(self).__name__) or _o(self, *a, **k))
    module, ours = _fit(syncfree, [], epochs=3, module=Net(syncfree, log_objects=True))
    _, reference = _fit(torchmetrics, [], epochs=3)
    assert set(ours) == set(reference) == {"train_acc", "train_loss", "val_acc", "val_f1"}
    for name, value in reference.items():
        assert ours[name] == pytest.approx(value, abs=1e-6), name
    # Lightning computes each logged metric once per epoch (the collection's members one by one)
    assert sorted(calls) == sorted(["MulticlassAccuracy", "MeanMetric", "MulticlassAccuracy", "MulticlassF1Score"] * 3)
    assert float(module.train_acc.compute()) == 0.0  # Lightning reset it after the last epoch


class StepLogging(Net):
    """``forward`` in the step and ``on_step=True``: the batch value each step, the epoch value at its end."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.layer(x)
        self.train_acc(logits, y)
        self.log("train_acc", self.train_acc, on_step=True, on_epoch=True)
        return torch.nn.functional.cross_entropy(logits, y)

    def validation_step(self, batch, batch_idx):
        pass


def test_self_log_on_step_logs_the_forward_value_as_torchmetrics():
    _, ours = _fit(syncfree, [], module=StepLogging(syncfree, log_objects=True))
    _, reference = _fit(torchmetrics, [], module=StepLogging(torchmetrics))
    assert set(ours) == set(reference) == {"train_acc", "train_acc_step", "train_acc_epoch"}
    for name, value in reference.items():
        assert ours[name] == pytest.approx(value, abs=1e-6), name


class BadLabels(Net):
    """Training targets out of range in one batch: torchmetrics raises at update; syncfree at the epoch end."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.layer(x)
        bad = y.clone()
        if batch_idx == 2:
            bad[:3] = CLASSES + 1
        self.train_acc.update(logits, bad)
        return torch.nn.functional.cross_entropy(logits, y)


def test_value_errors_raise_at_the_epoch_end_naming_the_metric_and_the_count():
    module = BadLabels(syncfree)
    trainer = lightning.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False,
                                enable_checkpointing=False, enable_progress_bar=False,
                                enable_model_summary=False, num_sanity_val_steps=0, callbacks=[EpochMetrics()])
    with pytest.raises(ValueError, match=r"'train_acc'.*MulticlassAccuracy: 3 value\(s\) with a label outside"):
        trainer.fit(module, _data(0), _data(1))
