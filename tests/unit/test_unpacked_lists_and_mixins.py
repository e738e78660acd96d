"""Shapes of new programs: a list of arrays made tensors and moved (``[torch.from_numpy(a).to(dev) for a in arrays]``)
unpacked into names; a method of a mixin that is not the first base (``class T(LogMixin, StatusMixin)``); a model kept
on an untyped object (``peer.model(x)``); a strided evaluation loop that cuts its data where it uses it."""
from __future__ import annotations

import pytest

from project_lint import lint_files


@pytest.mark.parametrize("made, expected", [("torch.from_numpy(a).to(self.device)", True),
                                            ("torch.from_numpy(a)", False)])
def test_a_list_of_converted_and_moved_arrays_unpacks_into_tensors(tmp_path, made, expected) -> None:
    found = lint_files(tmp_path, {"est.py": f"""
        import torch

        class Est:
            def __init__(self, net, device):
                self.net, self.device = net.to(device), device
                self.opt = torch.optim.Adam(self.net.parameters())

            def _tensors(self, *arrays):
                return [{made} for a in arrays]

            def fit(self, x, e, n):
                for b in range(n):
                    xb, eb = self._tensors(x[b], e[b])
                    if eb.sum() == 0:
                        continue
                    loss = self.net(xb.to(self.device)).mean()
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
    """})
    assert (("est.py", 15, "SFL106") in found) is expected


@pytest.mark.parametrize("bases", ["LogMixin, StatusMixin", "StatusMixin, LogMixin"])
def test_a_method_of_any_mixin_base(tmp_path, bases) -> None:
    found = lint_files(tmp_path, {"trainer.py": f"""
        import torch

        class LogMixin:
            def log(self, **values):
                pass

        class StatusMixin:
            def status(self, **values):
                self.line = " | ".join(f"{{k}} {{v:.3f}}" for k, v in values.items())

        class Trainer({bases}):
            def __init__(self, model, opt):
                self.model, self.opt = model.cuda(), opt

            def fit(self, loader):
                for x, y in loader:
                    loss = torch.nn.functional.mse_loss(self.model(x.cuda()), y.cuda())
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
                    self.status(loss=loss.detach())
    """})
    assert ("trainer.py", 10, "SFL107") in found


def test_a_model_kept_on_an_untyped_object(tmp_path) -> None:
    found = lint_files(tmp_path, {"coteach.py": """
        import torch

        def train(peers, loader, opt):
            a, b = peers["a"], peers["b"]
            for x, y in loader:
                x = x.cuda()
                logits = a.model(x) + b.model(x)
                loss = torch.nn.functional.cross_entropy(logits, y.cuda())
                if torch.isnan(loss):
                    continue
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(f"{logits.max():.2f}")
    """})
    assert ("coteach.py", 15, "SFL107") in found


def test_a_strided_loop_cutting_where_it_uses_the_data(tmp_path) -> None:
    found = lint_files(tmp_path, {"probe.py": """
        import torch

        @torch.no_grad()
        def probe(model, xs, device):
            hits = 0
            for i in range(0, len(xs), 64):
                out = model.embed(xs[i:i + 64].to(device))
                hits += out.argmax(1).sum().item()
            return hits
    """})
    assert ("probe.py", 9, "SFL101") in found
