"""Calls the code does not type: a method on a receiver of unknown class, resolved by its name when one
project class defines it (``calls.by_method_name``), and functions passed to another file's function
that calls them where it calls the parameter (``callgraph.passed_edges``)."""
from __future__ import annotations

import textwrap
from typing import List

import pytest

from syncfree_lint import engine
from syncfree_lint.config import Config
from syncfree_lint.knowledge.library_methods import LIBRARY_METHOD_NAMES

from project_lint import lint_files

_TRAIN = """
    def train(model, opt, loader, device, monitor):
        for x, y in loader:
            loss = model(x.to(device)).sum()
            loss.backward()
            opt.step()
            monitor.{call}
"""


_lint = lint_files


def test_a_method_only_one_project_class_defines_is_run_by_its_name(tmp_path) -> None:
    monitor = """
        class Monitor:
            def observe(self, loss):
                print(loss.item())
    """
    found = _lint(tmp_path, {"monitor.py": monitor, "train.py": _TRAIN.format(call="observe(loss)")})
    assert ("monitor.py", 4, "SFL101") in found


def test_a_method_two_classes_define_is_not_guessed(tmp_path) -> None:
    monitor = """
        class Monitor:
            def observe(self, loss):
                print(loss.item())
        class Quiet:
            def observe(self, loss):
                return float(loss)
    """
    found = _lint(tmp_path, {"monitor.py": monitor, "train.py": _TRAIN.format(call="observe(loss)")})
    assert not [f for f in found if f[0] == "monitor.py"]


def test_a_do_nothing_declaration_does_not_make_a_name_ambiguous(tmp_path) -> None:
    monitor = """
        class Base:
            def observe(self, loss):
                raise NotImplementedError
        class Monitor(Base):
            def observe(self, loss):
                print(loss.item())
    """
    found = _lint(tmp_path, {"monitor.py": monitor, "train.py": _TRAIN.format(call="observe(loss)")})
    assert ("monitor.py", 7, "SFL101") in found


@pytest.mark.parametrize("method", ["update", "step", "log", "view", "add_scalar", "state_dict"])
def test_names_library_objects_share_are_not_resolved(tmp_path, method: str) -> None:
    assert method in LIBRARY_METHOD_NAMES
    monitor = f"""
        class Monitor:
            def {method}(self, loss):
                print(loss.item())
    """
    found = _lint(tmp_path, {"monitor.py": monitor, "train.py": _TRAIN.format(call=f"{method}(loss)")})
    assert not [f for f in found if f[0] == "monitor.py"]


def test_a_receiver_of_known_kind_is_not_resolved_by_name(tmp_path) -> None:
    """`model.summarize(x)` on a module: not the project's `Report.summarize`."""
    monitor = """
        class Report:
            def summarize(self, loss):
                print(loss.item())
    """
    train = _TRAIN.format(call="observe(loss)").replace("monitor.observe(loss)", "model.summarize(loss)")
    found = _lint(tmp_path, {"monitor.py": monitor, "train.py": train})
    assert not [f for f in found if f[0] == "monitor.py"]


def test_library_method_names_are_methods_of_those_classes() -> None:
    torch = pytest.importorskip("torch")
    import logging

    classes = (torch.Tensor, torch.nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler,
               torch.amp.GradScaler, dict, list, set, tuple, str, logging.Logger)
    for cls in classes:
        public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n, None))}
        assert public <= LIBRARY_METHOD_NAMES, (cls, sorted(public - LIBRARY_METHOD_NAMES)[:10])


_CLIENT = """
    class Client:
        def __init__(self, loader):
            self.loader = loader
        def local_train(self, model, opt, device, on_step=None, at_end=None):
            for x, y in self.loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                opt.step()
                if on_step is not None:
                    on_step(loss)
            if at_end is not None:
                at_end(loss)
"""


@pytest.mark.parametrize("argument,line,per_step", [
    ("on_step=record", 4, True),
    ("record", 4, True),
    ("None, record", 4, False),
    ("at_end=record", 4, False),
])
def test_a_function_passed_to_another_files_function_runs_where_it_calls_the_parameter(
        tmp_path, argument: str, line: int, per_step: bool) -> None:
    run = f"""
        from client import Client
        def record(loss):
            print(loss.item())
        def main(model, opt, device, loaders):
            clients = [Client(loader) for loader in loaders]
            for client in clients:
                client.local_train(model, opt, device, {argument})
    """
    found = _lint(tmp_path, {"client.py": _CLIENT, "run.py": run})
    assert (("run.py", line, "SFL101") in found) is per_step


_SELECTORS = """
    import torch
    def hardest(losses, k):
        return losses.topk(k).indices
    def above_mean(losses, k):
        keep = (losses > losses.mean()).sum()
        return losses.topk(keep).indices
    SELECTORS = {"hardest": hardest, "above_mean": above_mean}
"""


@pytest.mark.parametrize("pick,call", [
    ("select = SELECTORS[name]", "select(per_sample, 4)"),
    ("select = functools.partial(SELECTORS[name], k=4)", "select(per_sample)"),
    ("select = SELECTORS.get(name)", "select(per_sample, 4)"),
    ("pass", "SELECTORS[name](per_sample, 4)"),
])
def test_a_function_of_a_dispatch_table_in_another_file_runs_where_the_table_is_called(
        tmp_path, pick: str, call: str) -> None:
    train = f"""
        import functools
        from selectors_ import SELECTORS
        def train(model, opt, loader, device, name):
            {pick}
            for x, y in loader:
                per_sample = model(x.to(device)).sum(1)
                idx = {call}
                per_sample[idx].mean().backward()
                opt.step()
    """
    found = _lint(tmp_path, {"selectors_.py": _SELECTORS, "train.py": train})
    assert ("selectors_.py", 7, "SFL112") in found


def test_a_table_called_once_outside_the_step_is_not_per_step(tmp_path) -> None:
    train = """
        from selectors_ import SELECTORS
        def train(model, opt, loader, device, name, bank):
            chosen = SELECTORS[name](bank, 4)
            for x, y in loader:
                model(x.to(device)).sum().backward()
                opt.step()
    """
    found = _lint(tmp_path, {"selectors_.py": _SELECTORS, "train.py": train})
    assert not [f for f in found if f[0] == "selectors_.py"]


def test_a_table_of_the_same_file(tmp_path) -> None:
    source = _SELECTORS + """
    def train(model, opt, loader, device, name):
        for x, y in loader:
            per_sample = model(x.to(device)).sum(1)
            per_sample[SELECTORS[name](per_sample, 4)].mean().backward()
            opt.step()
    """
    found = _lint(tmp_path, {"one.py": source})
    assert ("one.py", 7, "SFL112") in found


@pytest.mark.parametrize("display,members", [
    ('{"a": f, "b": g}', ["f", "g"]),
    ("[f, nn.functional.relu]", ["f"]),
    ("(f,)", ["f"]),
    ('{"small": 4, "large": f}', []),
    ("{**base, 'a': f}", []),
    ("[f(x) for f in fs]", []),
])
def test_table_members(display: str, members: List[str]) -> None:
    import libcst as cst

    from syncfree_lint.analysis.dispatch_tables import _table_members

    assert _table_members(cst.parse_expression(display)) == members


_OPT_IN = """
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--real-labels", default={default!r}, type=str)
    class Labels:
        def add_result(self, output):
            return output.cpu().numpy()
    def validate(args, model, loader, device):
        {build}
        for x, y in loader:
            out = model(x.to(device))
            if real is not None:
                real.add_result(out)
"""


@pytest.mark.parametrize("default,build,guarded", [
    ("", "real = Labels() if args.real_labels else None", True),
    (None, "real = Labels() if args.real_labels else None", True),
    ("", "if args.real_labels:\n            real = Labels()\n        else:\n            real = None", True),
    ("labels.json", "real = Labels() if args.real_labels else None", False),
    ("", "real = Labels() if args.real_labels else Labels()", False),
    ("", "real = Labels()", False),
])
def test_an_object_built_only_under_an_opt_in_option_guards_what_tests_it(
        tmp_path, default, build: str, guarded: bool) -> None:
    found = _lint(tmp_path, {"val.py": _OPT_IN.format(default=default, build=build)})
    assert (("val.py", 7, "SFL102") in found) is not guarded


@pytest.mark.parametrize("test,reported", [
    ("isinstance(value, (np.ndarray, np.number))", False),
    ("isinstance(value, np.ndarray)", False),
    ("isinstance(value, float)", False),
    ("isinstance(value, (np.ndarray, torch.Tensor))", True),
    ("isinstance(value, torch.Tensor)", True),
    ("hasattr(value, 'numel')", True),
])
def test_an_isinstance_branch_says_what_a_name_is(tmp_path, test: str, reported: bool) -> None:
    source = f"""
        import numpy as np
        import torch
        def train(model, opt, loader, device, log):
            for x, y in loader:
                value = model(x.to(device)).sum()
                value.backward()
                opt.step()
                if {test}:
                    log.append(value.item())
                log.append(value.item())
    """
    found = _lint(tmp_path, {"t.py": source})
    assert ("t.py", 11, "SFL101") in found  # after the branch, the name is what it was
    assert (("t.py", 10, "SFL101") in found) is reported


def test_a_namespace_folder_beside_the_script_is_nearer_than_a_copy_in_another_project(tmp_path) -> None:
    helpers = """
        def log_grads(model):
            return [p.grad.norm().item() for p in model.parameters()]
    """
    train = """
        from common import helpers
        def train(model, opt, loader, device):
            for x, y in loader:
                model(x.to(device)).sum().backward()
                helpers.log_grads(model)
                opt.step()
    """
    for project in ("speech", "vision"):
        (tmp_path / project / "common").mkdir(parents=True)
        (tmp_path / project / "common" / "helpers.py").write_text(textwrap.dedent(helpers))
    (tmp_path / "speech" / "train.py").write_text(textwrap.dedent(train))
    result = engine.run([str(tmp_path)], Config(), jobs=1)
    reported = {d.path.replace(str(tmp_path) + "/", "") for d in result.diagnostics}
    assert reported == {"speech/common/helpers.py"}


def test_what_a_method_called_by_its_name_returns_is_learned(tmp_path) -> None:
    renderer = """
        import torch
        class Renderer:
            def __init__(self, net):
                self.net = net
            def render_views(self, rays):
                return torch.sigmoid(self.net(rays))
    """
    train = """
        def train(model, opt, loader, device, renderer):
            for x, y in loader:
                rgb = renderer.render_views(x.to(device))
                (rgb - y.to(device)).pow(2).mean().backward()
                opt.step()
                if rgb.max() > 1:
                    print("saturated")
    """
    assert ("train.py", 7, "SFL106") in _lint(tmp_path, {"renderer.py": renderer, "train.py": train})


@pytest.mark.parametrize("holder,passed,line", [
    ("", "on_step=record", 6),
    ("class Runner:\n    def record(self, loss):\n        best.append(max(0.0, loss))\n    def go(self, client, model, opt, device):\n        client.local_train(model, opt, device, on_step=self.record)\n", "", 9),
])
def test_a_function_passed_to_another_file_learns_the_kinds_it_is_called_with(
        tmp_path, holder: str, passed: str, line: int) -> None:
    run = textwrap.dedent("""
        import torch
        from client import Client
        best = []
        def record(loss):
            best.append(max(0.0, loss))
    """) + holder + (textwrap.dedent(f"""
        def main(model, opt, device, loaders):
            for client in [Client(loader) for loader in loaders]:
                client.local_train(model, opt, device, {passed})
    """) if passed else "")
    found = _lint(tmp_path, {"client.py": _CLIENT, "run.py": run})
    assert ("run.py", line, "SFL106") in found


_MONITOR = """
    import torch
    class Saturation:
        def __init__(self):
            self.count = 0
        def __call__(self, module, inputs, output):
            self.count += int((output.abs() > 10).any())
"""


@pytest.mark.parametrize("register,line,per_step", [
    ("model.head.register_forward_hook(Saturation())", 7, True),
    ("model.head.register_forward_hook(monitor)", 7, True),
    ("model.head.register_forward_hook(nan_guard('head'))", 6, True),
    ("torch.nn.modules.module.register_module_forward_hook(nan_guard('all'))", 6, True),
    ("model.head.register_forward_hook", 7, False),  # named, never registered
])
def test_a_forward_hook_runs_at_every_forward(tmp_path, register: str, line: int, per_step: bool) -> None:
    train = f"""
        import torch
        from monitor import Saturation
        def nan_guard(name):
            def hook(module, inputs, output):
                if not torch.isfinite(output).all():
                    raise FloatingPointError(name)
            return hook
        def main(model, opt, loader):
            monitor = Saturation()
            {register}
            for x, y in loader:
                model(x.cuda()).sum().backward()
                opt.step()
    """
    found = _lint(tmp_path, {"monitor.py": _MONITOR, "train.py": train})
    path = "monitor.py" if line == 7 else "train.py"
    code = "SFL105" if line == 7 else "SFL106"
    assert ((path, line, code) in found) is per_step


def test_per_pass_hook_registrations_are_module_and_tensor_methods() -> None:
    torch = pytest.importorskip("torch")
    from syncfree_lint.knowledge.frequency import PER_PASS_HOOK_REGISTRATIONS

    for name in PER_PASS_HOOK_REGISTRATIONS:
        assert hasattr(torch.nn.Module, name) or hasattr(torch.Tensor, name) \
            or hasattr(torch.nn.modules.module, name), name


def test_a_hook_registered_and_removed_around_one_forward_runs_there(tmp_path) -> None:
    source = """
        import torch
        def check(module, inputs):
            assert module.ready.item() == 0
        def initialize(model, batch):
            handles = [m.register_forward_pre_hook(check) for m in model.modules()]
            model(batch)
            for handle in handles:
                handle.remove()
        def main(model, opt, loader):
            initialize(model, next(iter(loader)))
            for x, y in loader:
                model(x.cuda()).sum().backward()
                opt.step()
    """
    assert not _lint(tmp_path, {"t.py": source})


def test_what_a_method_of_an_instance_of_a_known_class_returns_is_learned(tmp_path) -> None:
    """`renderer = Renderer(net)`: `renderer.render_views(x)` returns what that class's method returns,
    even where another class defines a method of the same name."""
    renderer = """
        import torch
        class Renderer:
            def __init__(self, net):
                self.net = net
            def render_views(self, rays):
                return torch.sigmoid(self.net(rays))
        class Other:
            def render_views(self, rays):
                return rays
    """
    train = """
        from renderer import Renderer
        def train(model, opt, loader, device, net):
            renderer = Renderer(net)
            for x, y in loader:
                rgb = renderer.render_views(x.to(device))
                (rgb - y.to(device)).pow(2).mean().backward()
                opt.step()
                if rgb.max() > 1:
                    print("saturated")
    """
    assert ("train.py", 9, "SFL106") in _lint(tmp_path, {"renderer.py": renderer, "train.py": train})


def test_a_module_method_on_a_model_handed_in_is_run_by_its_name(tmp_path) -> None:
    """`self.model.log_likelihood(x, y)` where the trainer is handed its model by another file: the one module class
    of the project that defines the method; not a method of that name on a class that is not a module."""
    model = """
        import torch
        from torch.distributions import Categorical

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.head = torch.nn.Linear(4, 3)

            def log_likelihood(self, x, y):
                return Categorical(logits=self.head(x)).log_prob(y)
    """
    report = """
        class Report:
            def {method}(self, x, y):
                print(x.sum().item())
    """
    trainer = """
        class Trainer:
            def __init__(self, model, opt):
                self.model, self.opt = model, opt

            def fit(self, loader):
                for x, y in loader:
                    ll = self.model.{method}(x.cuda(), y.cuda())
                    loss = -ll.mean()
                    loss.backward()
                    self.opt.step()
    """
    found = _lint(tmp_path, {"model.py": model, "trainer.py": trainer.format(method="log_likelihood"),
                             "report.py": report.format(method="summarize")})
    assert ("model.py", 11, "SFL111") in found
    (tmp_path / "b").mkdir()
    found = _lint(tmp_path / "b", {"model.py": model, "trainer.py": trainer.format(method="summarize"),
                                   "report.py": report.format(method="summarize")})
    assert not [f for f in found if f[0] == "report.py"]
