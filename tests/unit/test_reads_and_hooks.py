"""Stop-35 classes, each on a program written for the test:
- a device tensor indexing a Python list (``names[logits.argmax()]``) is an implicit ``int()`` (SFL112);
- a host tensor compared with a value of unknown kind stays on the host, so moving it is a host-built copy (SFL403);
- a method registered as a forward hook before its definition (``self._record`` in ``__init__``) runs per step;
- reads in a branch whose test has just read a device value and whose body only reports are not a second wait;
- kinds learned across files settle to a fixed point, not after a fixed small number of rounds;
- a file linted alone learns from a launcher in its project that constructs its ``nn.Module``."""
from __future__ import annotations

import textwrap

from project_lint import lint_files
from syncfree_lint import engine
from syncfree_lint.config import Config

_LOOP = """
    import torch

    def train(model, loader, optimizer, device, names, cfg):
        history = []
        for x, y in loader:
            logits = model(x.to(device))
            {body}
            loss = logits.logsumexp(-1).mean()
            loss.backward()
            optimizer.step()
"""


def _loop(tmp_path, body: str):
    return lint_files(tmp_path, {"train.py": _LOOP.replace("{body}", body)})


def test_a_device_index_into_a_python_list_is_an_implicit_int(tmp_path) -> None:
    found = _loop(tmp_path, 'labels = ["cat", "dog"]; history.append(labels[logits.argmax()])')
    assert ("train.py", 8, "SFL112") in found


def test_a_device_index_into_a_tensor_or_an_unknown_value_is_not(tmp_path) -> None:
    assert _loop(tmp_path, "history.append(names[logits.argmax()])") == []  # `names` may be a tensor
    table = "table = torch.zeros(2, device=device); table[logits.argmax()] += 1"
    (tmp_path / "device_table").mkdir()
    assert lint_files(tmp_path / "device_table", {"train.py": _LOOP.replace("{body}", table)}) == []


def test_a_host_random_mask_moved_to_the_device_is_built_on_the_host(tmp_path) -> None:
    found = _loop(tmp_path, "drop = (torch.rand(x.shape) < cfg.p).to(device)")
    assert ("train.py", 8, "SFL403") in found


def test_a_device_random_mask_is_not(tmp_path) -> None:
    assert _loop(tmp_path, "drop = (torch.rand(x.shape, device=device) < cfg.p).to(device)") == []


def test_a_bound_method_registered_as_a_hook_before_its_definition_runs_per_step(tmp_path) -> None:
    model = """
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 4)
                self.means = []
                self.body.register_forward_hook(self._record)

            def _record(self, module, inputs, output):
                self.means.append(output.detach().mean().item())

            def forward(self, x):
                return self.body(x)
    """
    train = """
        import torch
        from net import Net

        def train(loader, device):
            model = Net().to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in loader:
                model(x.to(device)).sum().backward()
                opt.step()
    """
    assert ("net.py", 12, "SFL101") in lint_files(tmp_path, {"net.py": model, "train.py": train})


def test_a_report_after_the_test_read_the_value_is_not_a_second_wait(tmp_path) -> None:
    body = 'if loss_now.item() > cfg.limit: print(f"diverging: {loss_now:.3f}")'
    found = _loop(tmp_path, "loss_now = logits.mean()\n            " + body)
    assert found == [("train.py", 9, "SFL101")]  # the test's `.item()`, not the f-string in the body


def test_a_branch_that_does_device_work_after_the_read_still_reports(tmp_path) -> None:
    body = ("if loss_now.item() > cfg.limit:\n"
            "                scaled = logits * 2\n"
            '                print(f"diverging: {scaled.mean():.3f}")')
    found = _loop(tmp_path, "loss_now = logits.mean()\n            " + body)
    assert ("train.py", 11, "SFL107") in found


def test_kinds_settle_through_a_chain_longer_than_three_files(tmp_path) -> None:
    files = {
        "a.py": "def make(x):\n    return x * 2\n",
        "b.py": "from a import make\n\ndef mask_of(x):\n    return make(x) > 0\n",
        "c.py": "def pick(x, keep):\n    return x[keep]\n",
        "train.py": """
            from b import mask_of
            from c import pick

            def train(model, loader, optimizer, device):
                for x, y in loader:
                    out = model(x.to(device))
                    sel = pick(out, mask_of(out))
                    sel.mean().backward()
                    optimizer.step()
        """,
    }
    assert ("c.py", 2, "SFL202") in lint_files(tmp_path, files)


def test_a_file_alone_learns_from_a_launcher_that_builds_its_module(tmp_path) -> None:
    """Linted alone, ``model.py`` is reached through ``self.model.decode(...)`` of a trainer in
    ``train.py``, which learns that ``Tagger(...)`` builds a module of the linted file."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "model.py").write_text(textwrap.dedent("""
        import torch.nn as nn

        class Head(nn.Module):
            def decode(self, x):
                return x

        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Head()

            def decode(self, x):
                return [row.argmax().item() for row in x]
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        from model import Tagger

        class Trainer:
            def __init__(self, model):
                self.model = model

            def evaluate(self, loader, device):
                with torch.no_grad():
                    for x in loader:
                        self.model.decode(x.to(device))

        def main(loader, device):
            model = Tagger().to(device)
            trainer = Trainer(model)
            trainer.evaluate(loader, device)
    """))
    alone = engine.run([str(tmp_path / "model.py")], Config(), jobs=1, project=True)
    assert [(d.line, d.code) for d in alone.diagnostics] == [(14, "SFL101")]


def test_gradients_from_autograd_grad_are_device_tensors(tmp_path) -> None:
    found = _loop(tmp_path, "g = torch.autograd.grad(logits.sum(), x, retain_graph=True)[0]\n"
                            "            if g.norm() > 1: print('large')")
    assert ("train.py", 9, "SFL106") in found
    (tmp_path / "host").mkdir()
    host = _LOOP.replace("{body}", "g = torch.autograd.grad(cfg.loss, cfg.x)[0]\n            if g.norm() > 1: print('large')")
    assert lint_files(tmp_path / "host", {"train.py": host}) == []  # the gradient of an unknown value: unknown


def test_an_instance_called_returns_what_its_call_method_returns(tmp_path) -> None:
    miner = """
        import torch

        class HardMiner:
            def __init__(self, margin):
                self.margin = margin

            def __call__(self, emb, labels):
                dist = torch.cdist(emb, emb)
                return {"valid": dist > self.margin, "dist": dist}
    """
    train = """
        import torch
        from miner import HardMiner

        def train(model, loader, optimizer, device):
            for x, y in loader:
                miner = HardMiner(0.2)
                out = miner(model(x.to(device)), y.to(device))
                if out["dist"].sum() == 0:
                    continue
                out["dist"].mean().backward()
                optimizer.step()
    """
    assert ("train.py", 9, "SFL106") in lint_files(tmp_path, {"miner.py": miner, "train.py": train})


def test_a_parameter_is_a_tensor_not_a_module(tmp_path) -> None:
    model = """
        import torch
        import torch.nn as nn

        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.temp = nn.Parameter(torch.tensor(0.07), requires_grad=False)
                self.body = nn.Linear(4, 4)

            def forward(self, x):
                return self.body(x) / self.temp.item()
    """
    train = """
        import torch
        from model import Scaled

        def train(loader, device):
            model = Scaled().to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in loader:
                model(x.to(device)).sum().backward()
                opt.step()
    """
    assert ("model.py", 12, "SFL101") in lint_files(tmp_path, {"model.py": model, "train.py": train})


def test_max_over_a_generator_binds_its_loop_name_first(tmp_path) -> None:
    body = "grads = torch.autograd.grad(logits.sum(), x, retain_graph=True)\n" \
           "            peak = max(g.abs().max() for g in grads if g is not None)"
    assert ("train.py", 9, "SFL106") in _loop(tmp_path, body)
    (tmp_path / "host").mkdir()  # over host numbers: nothing to report
    host = _LOOP.replace("{body}", "peak = max(abs(v) for v in cfg.values)")
    assert lint_files(tmp_path / "host", {"train.py": host}) == []


def test_callables_in_a_list_handed_by_name_learn_what_they_are_called_with(tmp_path) -> None:
    meters = """
        import torch

        class Throughput:
            def __init__(self):
                self.samples = 0

            def __call__(self, step, stats):
                self.samples += int(stats["count"])
    """
    train = """
        import torch
        from meters import Throughput

        def train_epoch(model, loader, optimizer, device, callbacks):
            for step, (x, y) in enumerate(loader):
                loss = model(x.to(device)).sum()
                loss.backward()
                optimizer.step()
                stats = {"loss": loss.detach(), "count": torch.ones((), device=device) * x.shape[0]}
                for cb in callbacks:
                    cb(step, stats)

        def main(model, loader, optimizer, device, rank):
            callbacks = [Throughput()] if rank == 0 else []
            train_epoch(model, loader, optimizer, device, callbacks)
    """
    assert ("meters.py", 9, "SFL105") in lint_files(tmp_path, {"meters.py": meters, "train.py": train})


_TRAINER = """
    import torch

    class Trainer:
        def __init__(self, model, optimizer, callbacks=(), on_step=None):
            self.model, self.optimizer = model, optimizer
            self.callbacks = list(callbacks)
            self.on_step = on_step

        def fit(self, loader, device):
            for x in loader:
                loss = self.model(x.to(device)).sum()
                loss.backward()
                self.optimizer.step()
                for cb in self.callbacks:
                    cb(self, loss)
                if self.on_step is not None:
                    self.on_step(loss)
"""
_CALLBACKS = """
    class LossLogger:
        def __init__(self):
            self.history = []

        def __call__(self, trainer, loss):
            self.history.append(loss.item())

    def print_loss(loss):
        print(f"loss {loss:.3f}")
"""


def test_callables_a_trainer_keeps_run_where_it_calls_them(tmp_path) -> None:
    main = """
        from callbacks import LossLogger, print_loss
        from trainer import Trainer

        def main(model, optimizer, loader, device):
            Trainer(model, optimizer, callbacks=[LossLogger()], on_step=print_loss).fit(loader, device)
    """
    found = lint_files(tmp_path, {"trainer.py": _TRAINER, "callbacks.py": _CALLBACKS, "main.py": main})
    assert ("callbacks.py", 7, "SFL101") in found and ("callbacks.py", 10, "SFL107") in found


def test_callables_kept_by_a_local_trainer_class(tmp_path) -> None:
    local = _TRAINER + """
    from callbacks import LossLogger

    def main(model, optimizer, loader, device):
        trainer = Trainer(model, optimizer, [LossLogger()])
        trainer.fit(loader, device)
"""
    assert ("callbacks.py", 7, "SFL101") in lint_files(tmp_path, {"trainer.py": local, "callbacks.py": _CALLBACKS})


def test_a_constant_written_through_a_mask_is_a_masked_fill(tmp_path) -> None:
    found = _loop(tmp_path, "matches = logits.argmax(1)\n"
                            "            matches[logits.max(1).values < 0.3] = Matcher.BELOW_THRESHOLD")
    assert [f for f in found if f[2] == "SFL202"] == []
    (tmp_path / "tensor").mkdir()
    tensor = _LOOP.replace("{body}", "matches = logits.argmax(1)\n"
                                     "            matches[logits.max(1).values < 0.3] = matches.flip(0)")
    assert ("train.py", 9, "SFL202") in lint_files(tmp_path / "tensor", {"train.py": tensor})


def test_a_list_of_appended_device_tensors_gives_them_back_in_a_loop(tmp_path) -> None:
    body = ("history = []\n"
            "            for t in range(3):\n"
            "                history.append(logits.argmax(1))\n"
            "            for h in reversed(history[:2]):\n"
            "                history_ids = int(h[0])")
    assert ("train.py", 12, "SFL105") in _loop(tmp_path, body)
    (tmp_path / "dict").mkdir()  # a dict of device tensors gives its keys
    keys = _LOOP.replace("{body}", "parts = {'a': logits.sum()}\n"
                                   "            for name in parts:\n"
                                   "                print(f'{name}')")
    assert lint_files(tmp_path / "dict", {"train.py": keys}) == []


def test_a_list_of_appended_device_dicts_gives_them_back_in_a_loop(tmp_path) -> None:
    """Micro-batches kept for gradient accumulation: `micro.append({k: v.to(device) ...})`, then `for mb in micro`."""
    program = """
        import torch

        def train(model, loader, optimizer, device, accum=4):
            micro = []
            for batch in loader:
                micro.append({k: v.to(device) for k, v in batch.items()})
                if len(micro) < accum:
                    continue
                tokens = sum((mb["labels"] != -100).sum() for mb in micro)
                for mb in micro:
                    (model(mb["input_ids"]).sum() / tokens).backward()
                optimizer.step()
                micro = []
                print(int(tokens))
    """
    found = lint_files(tmp_path, {"train.py": program})
    assert ("train.py", 15, "SFL105") in found, found
    (tmp_path / "host").mkdir()  # kept on the host: nothing read back
    host = program.replace("{k: v.to(device) for k, v in batch.items()}", "dict(batch)")
    assert lint_files(tmp_path / "host", {"train.py": host}) == []


def test_a_hook_built_by_a_factory_method_of_the_class(tmp_path) -> None:
    # `__init__` registers `self._hook(name)`, whose body returns a closure: the closure runs at every forward
    found = lint_files(tmp_path, {"watch.py": """
        import torch

        class Watch:
            def __init__(self, model):
                self.trace = []
                for name, m in model.named_modules():
                    m.register_forward_hook(self._hook(name))

            def _hook(self, name):
                def record(module, inputs, out):
                    self.trace.append(out.mean().item())
                return record

        def train(model, loader, opt):
            model = model.cuda()
            watch = Watch(model)
            for x, y in loader:
                loss = model(x.cuda()).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """})
    assert ("watch.py", 12, "SFL101") in found
