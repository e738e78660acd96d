"""An object built in a constructor call (``Trainer(net, PairMiner(0.8), opt)``) is what the class keeps
(``self.net, self.miner, self.opt = net, miner, opt``): ``self.miner(emb, y)`` runs ``PairMiner.__call__``, here or
in another file (``ArgumentsMixin._record_arguments`` with ``constructed``)."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_MINER = """
    import torch

    class PairMiner:
        def __init__(self, margin):
            self.margin = margin

        def __call__(self, emb, labels):
            same = labels[:, None] == labels[None, :]
            d = torch.cdist(emb, emb)
            return d[same].mean()
"""

_TRAINER = """
    import torch
    {import_line}

    class Trainer:
        def __init__(self, net, miner, opt):
            {keep}

        def train_epoch(self, loader):
            for x, y in loader:
                emb = self.net(x.cuda())
                loss = self.miner(emb, y.cuda())
                loss.backward()
                self.opt.step()

    def main(net, loader):
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        Trainer(net, PairMiner(0.8), opt).train_epoch(loader)
"""


@pytest.mark.parametrize("keep", [
    "self.net, self.miner, self.opt = net, miner, opt",
    "self.net = net\n            self.miner = miner\n            self.opt = opt",
])
def test_an_object_built_in_the_constructor_call_is_kept(tmp_path, keep: str) -> None:
    trainer = _TRAINER.replace("{import_line}", "from mining import PairMiner").replace("{keep}", keep)
    findings = lint_files(tmp_path, {"mining.py": _MINER, "trainer.py": trainer})
    assert ("mining.py", 11, "SFL202") in findings, findings


def test_in_one_file(tmp_path) -> None:
    source = _MINER + _TRAINER.replace("{import_line}", "").replace(
        "{keep}", "self.net, self.miner, self.opt = net, miner, opt").replace("    import torch\n", "", 1)
    findings = lint_files(tmp_path, {"train.py": source})
    assert ("train.py", 11, "SFL202") in findings, findings


def test_a_callable_kept_in_a_tuple_assignment_runs_where_a_method_calls_it(tmp_path) -> None:
    program = """
        import torch

        def greedy_decode(log_probs):
            return log_probs.argmax(-1).cpu().tolist()

        class Trainer:
            def __init__(self, model, decoder, opt):
                self.model, self.decoder, self.opt = model, decoder, opt

            def fit(self, loader):
                for x, y in loader:
                    out = self.model(x.cuda())
                    out.sum().backward()
                    self.opt.step()
                    words = self.decoder(out.detach())

        def main(model, loader, opt):
            Trainer(model, greedy_decode, opt).fit(loader)
    """
    findings = lint_files(tmp_path, {"train.py": program})
    assert ("train.py", 5, "SFL102") in findings, findings
