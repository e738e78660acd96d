"""Values the walk follows through names (stop 34): instances bound in tuple assignments, objects
whose ``__call__`` is handed over in a list and called from a loop over the parameter, the
arguments a ``functools.partial`` binds, what a name bound to a lambda returns, and the keys of
dicts of device tensors (``dict(loss=...)``, host values under constant keys, step counters)."""
from __future__ import annotations

from typing import List, Tuple

from syncfree_lint import engine
from syncfree_lint.config import Config
from syncfree_lint.knowledge import torch_api as api

from project_lint import lint_files


_lint = lint_files


_METER = """
    import torch
    class Accuracy:
        def __init__(self):
            self.n = 0
        def update(self, pred, target):
            self.n += int((pred == target).sum())
"""


def test_an_instance_bound_in_a_tuple_assignment_runs_its_class_methods(tmp_path) -> None:
    train = """
        import torch
        from meter import Accuracy
        def evaluate(model, loader):
            meter, shown = Accuracy(), 0
            with torch.no_grad():
                for x, y in loader:
                    meter.update(model(x).argmax(1), y)
    """
    assert ("meter.py", 7, "SFL105") in _lint(tmp_path, {"meter.py": _METER, "train.py": train})


def test_a_tuple_assignment_of_other_lengths_binds_no_instance(tmp_path) -> None:
    train = """
        import torch
        from meter import Accuracy
        def evaluate(model, loader, pair):
            meter, shown = pair
            with torch.no_grad():
                for x, y in loader:
                    meter.update(model(x).argmax(1), y)
    """
    assert not [f for f in _lint(tmp_path, {"meter.py": _METER, "train.py": train}) if f[0] == "meter.py"]


_HOOKS = """
    import json
    class JsonlLogger:
        def __init__(self, fh):
            self.fh = fh
        def __call__(self, step, metrics):
            record = {k: float(v) for k, v in metrics.items()}
            self.fh.write(json.dumps(record))
"""

_TRAIN_WITH_HOOKS = """
    import torch
    from hooks import JsonlLogger
    def train(model, loader, opt, hooks=()):
        for step, (x, y) in enumerate(loader):
            loss = model(x, y)
            loss.backward()
            opt.step()
            metrics = {metrics}
            for hook in hooks:
                hook(step, metrics)
    def main(model, loader, opt, fh):
        train(model, loader, opt, hooks=[JsonlLogger(fh)])
"""


def test_an_object_in_a_list_handed_to_a_parameter_runs_its_call_where_the_loop_calls_it(tmp_path) -> None:
    train = _TRAIN_WITH_HOOKS.format(metrics="dict(loss=loss.detach(), lr=0.1)")
    assert ("hooks.py", 7, "SFL105") in _lint(tmp_path, {"hooks.py": _HOOKS, "train.py": train})


def test_a_dict_of_host_values_handed_to_the_hook_is_not_read_from_the_device(tmp_path) -> None:
    train = _TRAIN_WITH_HOOKS.format(metrics="dict(loss=loss.item() if step % 100 == 0 else 0.0, lr=0.1)")
    assert not [f for f in _lint(tmp_path, {"hooks.py": _HOOKS, "train.py": train}) if f[0] == "hooks.py"]


_LOOP = """
    import torch
    def train(model, loader, opt, sched):
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            opt.step()
            {body}
"""


def test_a_host_value_under_a_constant_key_of_a_dict_of_tensors_is_no_tensor(tmp_path) -> None:
    body = 'd = {"loss": loss.detach(), "lr": sched.get_last_lr()[0]}\n            print(float(d["lr"]), float(d["loss"]))'
    found = _lint(tmp_path, {"train.py": _LOOP.format(body=body)})
    assert found == [("train.py", 9, "SFL105")]
    assert [column for column in _columns(tmp_path, "train.py") if column[0] == 9] == [(9, 31)]  # `float(d["loss"])`, not `float(d["lr"])`


def test_a_rebound_dict_forgets_its_host_keys(tmp_path) -> None:
    body = ('d = {"loss": loss.detach(), "lr": 0.1}\n            d = {"loss": loss.detach(), "lr": loss.detach()}\n'
            '            print(float(d["lr"]))')
    assert ("train.py", 10, "SFL105") in _lint(tmp_path, {"train.py": _LOOP.format(body=body)})


def test_a_step_counter_beside_the_losses_is_a_python_int(tmp_path) -> None:
    callbacks = """
        class Checkpointer:
            def on_batch_end(self, state):
                if state["step"] % 100:
                    return
                print(state["loss"].item())
    """
    train = """
        import torch
        from callbacks import Checkpointer
        def train(model, loader, opt):
            callbacks = [Checkpointer()]
            for step, (x, y) in enumerate(loader):
                loss = model(x, y)
                loss.backward()
                opt.step()
                state = dict(step=step, loss=loss.detach())
                for cb in callbacks:
                    cb.on_batch_end(state)
    """
    found = _lint(tmp_path, {"callbacks.py": callbacks, "train.py": train})
    assert not [f for f in found if f[0] == "callbacks.py" and f[1] == 4]
    assert {"step", "epoch"} <= api.COUNTER_KEY_WORDS and "idx" not in api.COUNTER_KEY_WORDS


def test_a_partial_hands_the_function_its_bound_arguments_first(tmp_path) -> None:
    logs = """
        def log_scalars(writer, step, scalars, prefix="train"):
            for name, value in scalars.items():
                writer.add_scalar(f"{prefix}/{name}", value, step)
    """
    train = """
        import functools
        import torch
        from logs import log_scalars
        def train(model, loader, opt, writer):
            on_step = functools.partial(log_scalars, writer, prefix="train")
            for step, (x, y) in enumerate(loader):
                loss = model(x, y)
                loss.backward()
                opt.step()
                on_step(step, {"loss": loss.detach()})
    """
    assert ("logs.py", 4, "SFL109") in _lint(tmp_path, {"logs.py": logs, "train.py": train})


def test_a_name_bound_to_a_lambda_returns_what_its_body_computes(tmp_path) -> None:
    train = """
        import torch
        to_psnr = lambda mse: -10.0 * torch.log10(mse)
        scale = lambda x: x * 2
        def train(model, loader, opt, best):
            for x, y in loader:
                mse = model(x, y)
                mse.backward()
                opt.step()
                best = max(best, to_psnr(mse.detach()))
                half = max(0.5, scale(0.1))
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 10, "SFL106")]


def _columns(tmp_path, name: str) -> List[Tuple[int, int]]:
    result = engine.run([str(tmp_path)], Config(), jobs=1)
    return sorted((d.line, d.col) for d in result.diagnostics if d.path.endswith(name))


def test_a_constructor_call_teaches_init_what_it_keeps_on_self(tmp_path) -> None:
    train = """
        import torch
        import torch.nn as nn
        class PairLoss(nn.Module):
            def forward(self, a, b):
                return a.mean(), b
        class Trainer:
            def __init__(self, model, criterion, opt):
                self.model, self.criterion, self.opt = model, criterion, opt
            def train_step(self, x, y):
                loss, aux = self.criterion(self.model(x), y)
                self.opt.step()
                return float(loss.detach())
        def main(model, opt, data):
            trainer = Trainer(model, PairLoss(), opt)
            for x, y in data:
                trainer.train_step(x, y)
    """
    assert ("train.py", 13, "SFL105") in _lint(tmp_path, {"train.py": train})


_SAMPLER = """
    import torch
    class TaskSampler:
        def __init__(self, device):
            self.device = device
        def episode(self):
            counts = torch.randint(1, 5, (4,), device=self.device)
            return torch.arange(4, device=self.device).repeat_interleave(counts)
        def __iter__(self):
            while True:
                yield [self.episode() for _ in range(4)]
"""


def test_next_of_an_iterator_over_an_instance_runs_its_iter(tmp_path) -> None:
    train = """
        from sampler import TaskSampler
        def main(model, opt, device):
            tasks = iter(TaskSampler(device))
            sampler = TaskSampler(device)
            it = iter(sampler)
            while True:
                batch = next(it)
                model(batch).sum().backward()
                opt.step()
    """
    assert ("sampler.py", 8, "SFL203") in _lint(tmp_path, {"sampler.py": _SAMPLER, "train.py": train})


def test_a_local_generator_gives_what_it_yields(tmp_path) -> None:
    train = """
        import torch
        def batches(data, device):
            for x, y in data:
                yield x.to(device), y.to(device)
        def main(model, opt, data, device):
            it = batches(data, device)
            n = 0
            while n < 100:
                x, y = next(it)
                model(x, y).backward()
                opt.step()
                n += int((y != -100).sum())
            for x, y in batches(data, device):
                print(float(y.sum()))
    """
    found = _lint(tmp_path, {"train.py": train})
    assert ("train.py", 13, "SFL105") in found


def test_a_buffer_of_a_class_of_another_file_is_a_tensor_on_its_instances(tmp_path) -> None:
    losses = """
        import torch
        import torch.nn as nn
        class CenteredLoss(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.register_buffer("center", torch.zeros(dim))
                self.scale = 2.0
            def forward(self, x):
                return (x - self.center.to(x.device)).pow(2).mean()
    """
    train = """
        import torch
        from losses import CenteredLoss
        def train_epoch(model, loader, opt, loss_fn, writer):
            for step, x in enumerate(loader):
                loss = loss_fn(model(x.cuda()))
                loss.backward()
                opt.step()
                writer.add_scalar("center", loss_fn.center.norm(), step)
                writer.add_scalar("scale", loss_fn.scale, step)
                logger.debug("center %s", loss_fn.center[:4])
        def main(model, loader, opt, writer):
            loss_fn = CenteredLoss(8).cuda()
            train_epoch(model, loader, opt, loss_fn, writer)
    """
    found = _lint(tmp_path, {"losses.py": losses, "train.py": train})
    assert [f for f in found if f[0] == "train.py"] == [("train.py", 9, "SFL109")]


def test_a_closure_made_by_a_factory_of_another_file_runs_where_it_is_called(tmp_path) -> None:
    prep = """
        import torch
        def make_normalizer(mean, std, device):
            def normalize(x):
                mu = torch.tensor(mean, device=device)
                return x - mu
            return normalize
    """
    train = """
        import torch
        from prep import make_normalizer
        def main(model, opt, data, device):
            normalize = make_normalizer([0.5], [0.2], device)
            for x in data:
                model(normalize(x.to(device))).sum().backward()
                opt.step()
    """
    assert ("prep.py", 5, "SFL401") in _lint(tmp_path, {"prep.py": prep, "train.py": train})


def test_a_with_block_runs_the_context_managers_enter_and_exit(tmp_path) -> None:
    train = """
        import time
        import torch
        class StepTimer:
            def __enter__(self):
                self.t0 = time.perf_counter()
                return self
            def __exit__(self, *exc):
                torch.cuda.synchronize()
        def train(model, opt, loader):
            timer = StepTimer()
            for x in loader:
                with timer:
                    model(x.cuda()).sum().backward()
                    opt.step()
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 9, "SFL108")]


def test_a_list_of_instances_bound_to_a_name_calls_their_class(tmp_path) -> None:
    train = """
        import torch
        class ProgressLine:
            def __call__(self, loss):
                self.line = f"loss {loss:.4f}"
        def train_epoch(model, opt, loader, callbacks):
            for x in loader:
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                for cb in callbacks:
                    cb(loss.detach())
        def main(model, opt, loader):
            callbacks = [ProgressLine()]
            train_epoch(model, opt, loader, callbacks)
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 5, "SFL107")]


_METERS_IN_A_DICT = """
    import torch

    class Meter:
        def __init__(self):
            self.sum = 0.0

        def update(self, val, n=1):
            self.sum += float(val) * n

    def train(model, loader, opt, device):
        meters = {meters_value}
        for batch in loader:
            src, tgt = {unpacked}
            logits = model(src)
            loss = logits.sum()
            loss.backward()
            opt.step()
            hits = (logits.argmax(-1) == tgt)[tgt.ne(0)]
            meters["loss"].update(loss.detach())
"""


def test_a_dict_of_instances_runs_their_class_methods(tmp_path) -> None:
    """`meters["loss"].update(x)` on `meters = {k: Meter() for k in ...}` (or a dict literal of them) runs
    `Meter.update`; a dict of something else runs nothing by that path."""
    unpacked = 'batch["src"].to(device), batch["tgt"].to(device)'
    for value, expected in (('{k: Meter() for k in ("loss", "acc")}', True), ('{"loss": Meter(), "acc": Meter()}', True),
                            ('{k: [] for k in ("loss", "acc")}', False)):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        program = _METERS_IN_A_DICT.replace("{meters_value}", value).replace("{unpacked}", unpacked)
        assert (("train.py", 9, "SFL105") in lint_files(folder, {"train.py": program})) == expected, value


def test_names_unpacked_from_a_generator_take_its_element_kind(tmp_path) -> None:
    """`src, tgt = (batch[k].to(device) for k in ("src", "tgt"))`: both are device tensors."""
    program = _METERS_IN_A_DICT.replace("{meters_value}", "{}").replace(
        "{unpacked}", '(batch[k].to(device) for k in ("src", "tgt"))')
    assert ("train.py", 19, "SFL202") in lint_files(tmp_path, {"train.py": program})
    (tmp_path / "unknown").mkdir()  # items of unknown kind bind nothing
    unknown = program.replace("(batch[k].to(device) for k", "(opt.defaults[k] for k")
    assert not any(f[2] == "SFL202" for f in lint_files(tmp_path / "unknown", {"train.py": unknown}))
