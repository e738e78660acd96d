"""The torchmetrics -> syncfree switch in a LightningModule that logs the metric objects
(`self.log(name, metric)`, `self.log_dict(collection)`): offered, and the fixed module, trained by
the real Lightning Trainer, logs the same epoch values as the original."""
from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
lightning = pytest.importorskip("lightning")
pytest.importorskip("torchmetrics")

from syncfree_lint.config import Config  # noqa: E402
from syncfree_lint.engine import lint_text  # noqa: E402
from syncfree_lint.fixes.apply import fix_text  # noqa: E402

MODULE = textwrap.dedent('''\
    import lightning
    import torch
    from torchmetrics import MetricCollection
    from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score


    class Net(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(8, 4)
            self.train_acc = MulticlassAccuracy(num_classes=4)
            self.val_metrics = MetricCollection({
                "val_acc": MulticlassAccuracy(num_classes=4),
                "val_f1": MulticlassF1Score(num_classes=4, average="macro"),
            })

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self.layer(x)
            self.train_acc.update(logits, y)
            self.log("train_acc", self.train_acc, on_step=False, on_epoch=True)
            return torch.nn.functional.cross_entropy(logits, y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.val_metrics.update(self.layer(x), y)
            self.log_dict(self.val_metrics, on_step=False, on_epoch=True)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)
    ''')


def _data(seed):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(96, 8, generator=g), torch.randint(0, 4, (96,), generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=10)


def _fit(path):
    spec = importlib.util.spec_from_file_location(f"lit_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    trainer = lightning.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(module.Net(), _data(0), _data(1))
    return {k: round(float(v), 6) for k, v in trainer.callback_metrics.items()}


def test_switch_offered_when_lightning_logs_the_metric_and_logs_the_same(tmp_path):
    lint = lambda p, t: lint_text(p, t, Config())  # noqa: E731
    result = fix_text("lit.py", MODULE, lint, lambda d: d.fix is not None and d.fix.applies(False))
    assert result.changed, [d.format() + f" ({d.fix_declined})" for d in lint("lit.py", MODULE)]
    assert "from syncfree import MetricCollection" in result.fixed and "import syncfree.lightning" in result.fixed
    assert "from syncfree import MulticlassAccuracy, MulticlassF1Score" in result.fixed
    original, fixed = tmp_path / "original" / "lit.py", tmp_path / "fixed" / "lit.py"
    for path, text in ((original, MODULE), (fixed, result.fixed)):
        path.parent.mkdir()
        path.write_text(text)
    before, after = _fit(original), _fit(fixed)
    assert set(before) == {"train_acc", "val_acc", "val_f1"}
    assert after == before
