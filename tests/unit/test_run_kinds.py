"""Kinds across files (``analysis.run_kinds``): what the run teaches a file, from hand-built facts,
and the engine's rounds on real files."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from syncfree_lint import engine
from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.filefacts import STEP, Edge, ExternalKinds, FileFacts
from syncfree_lint.analysis.run_kinds import merge, plan, teachers
from syncfree_lint.config import Config

ROOT = "/proj"


def facts(path: str, module: str, functions: List[str] = (), **fields) -> FileFacts:
    out = FileFacts(path, module, ROOT, **fields)
    out.functions = {f"{module}.{name}": f"{path}::{name}" for name in functions}
    return out


TENSOR_ARG = (("tensor", "number"), ())
NUMBER_ARG = (("number", "number"), ())
OBJECT_ARG = (("object:launch.Logger",), ())

CASES = {
    "a return kind reaches the caller that asked": (
        [facts("train.py", "train", unknown_imports={"losses.compute"}, has_step=True),
         facts("losses.py", "losses", ["compute"], returns={"losses.py::compute": "tensor"})],
        {"train.py": ExternalKinds(returns=(("losses.compute", "tensor"),))},
    ),
    "a file where nothing runs per step learns no return kind": (
        [facts("tool.py", "tool", ["main"], unknown_imports={"losses.compute"}),
         facts("losses.py", "losses", ["compute"], returns={"losses.py::compute": "tensor"})],
        {},
    ),
    "a helper a step reaches learns return kinds": (
        [facts("train.py", "train", edges=[Edge(STEP, "util.py::helper", False, ROOT, False, ())]),
         facts("util.py", "util", ["helper"], unknown_imports={"losses.compute"}),
         facts("losses.py", "losses", ["compute"], returns={"losses.py::compute": "numpy"})],
        {"util.py": ExternalKinds(returns=(("losses.compute", "numpy"),))},
    ),
    "no request, nothing taught": (
        [facts("train.py", "train"), facts("losses.py", "losses", ["compute"], returns={"losses.py::compute": "tensor"})],
        {},
    ),
    "an unknown return teaches nothing": (
        [facts("train.py", "train", unknown_imports={"losses.compute"}, has_step=True),
         facts("losses.py", "losses", ["compute"])],
        {},
    ),
    "a step's tensor argument reaches a helper that reads its parameter": (
        [facts("train.py", "train", calls_out=[("report.log", TENSOR_ARG, STEP)]),
         facts("report.py", "report", ["log"], unknown_params={"report.py::log"})],
        {"report.py": ExternalKinds(calls_in=(("log", TENSOR_ARG),))},
    ),
    "a call made once (module level) teaches nothing": (
        [facts("train.py", "train", calls_out=[("report.log", TENSOR_ARG, "")]),
         facts("report.py", "report", ["log"], unknown_params={"report.py::log"})],
        {},
    ),
    "a call from a function no step reaches teaches nothing": (
        [facts("train.py", "train", ["setup"], calls_out=[("report.log", TENSOR_ARG, "train.py::setup")]),
         facts("report.py", "report", ["log"], unknown_params={"report.py::log"})],
        {},
    ),
    "a call from a helper a step reaches teaches": (
        [facts("train.py", "train", ["helper"], calls_out=[("report.log", TENSOR_ARG, "train.py::helper")],
               edges=[Edge(STEP, "train.py::helper", False, ROOT, False, ())]),
         facts("report.py", "report", ["log"], unknown_params={"report.py::log"})],
        {"report.py": ExternalKinds(calls_in=(("log", TENSOR_ARG),))},
    ),
    "numbers alone teach nothing": (
        [facts("train.py", "train", calls_out=[("report.log", NUMBER_ARG, STEP)]),
         facts("report.py", "report", ["log"], unknown_params={"report.py::log"})],
        {},
    ),
    "every call is sent along with the tensor one, so the helper can weigh them": (
        [facts("train.py", "train", calls_out=[("report.log", NUMBER_ARG, STEP), ("report.log", TENSOR_ARG, STEP)]),
         facts("report.py", "report", ["log"], unknown_params={"report.py::log"})],
        {"report.py": ExternalKinds(calls_in=(("log", NUMBER_ARG), ("log", TENSOR_ARG)))},
    ),
    "a helper whose parameters are all known needs nothing": (
        [facts("train.py", "train", calls_out=[("report.log", TENSOR_ARG, STEP)]),
         facts("report.py", "report", ["log"])],
        {},
    ),
    "an instance set-up code passes teaches a file where a step runs": (
        [facts("launch.py", "launch", ["main"], calls_out=[("trainer.fit", OBJECT_ARG, "launch.py::main")]),
         facts("trainer.py", "trainer", ["fit"], unknown_params={"trainer.py::fit"}, has_step=True)],
        {"trainer.py": ExternalKinds(calls_in=(("fit", OBJECT_ARG),))},
    ),
    "an instance passed to a file where nothing runs per step teaches nothing": (
        [facts("launch.py", "launch", ["main"], calls_out=[("report.write", OBJECT_ARG, "launch.py::main")]),
         facts("report.py", "report", ["write"], unknown_params={"report.py::write"})],
        {},
    ),
    "a file the pre-filter skipped is parsed when a step passes it a tensor": (
        [facts("train.py", "train", calls_out=[("pkg.report.log", TENSOR_ARG, STEP)]),
         facts("pkg/report.py", "pkg.report", skipped=True)],
        {"pkg/report.py": ExternalKinds(calls_in=(("log", TENSOR_ARG),))},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_plan(name: str) -> None:
    all_facts, expected = CASES[name]
    assert plan(all_facts, {f.path for f in all_facts}) == expected


def test_only_reported_files_learn() -> None:
    all_facts, _ = CASES["a return kind reaches the caller that asked"]
    assert plan(all_facts, {"losses.py"}) == {}


def test_teachers_are_the_files_that_call_a_reported_file() -> None:
    all_facts = [
        facts("train.py", "train", calls_out=[("report.log", NUMBER_ARG, STEP)]),
        facts("eval.py", "eval", calls_out=[("losses.compute", TENSOR_ARG, STEP)]),
        facts("report.py", "report", ["log"]),
        facts("losses.py", "losses", ["compute"]),
        facts("pkg/fmt.py", "pkg.fmt", skipped=True),
        facts("tool.py", "tool", calls_out=[("pkg.fmt.show", TENSOR_ARG, STEP)]),
    ]
    assert teachers(all_facts, {"report.py"}) == {"train.py"}
    assert teachers(all_facts, {"pkg/fmt.py"}) == {"tool.py"}
    assert teachers(all_facts, {"train.py"}) == set()


@pytest.mark.parametrize("kinds,expected", [
    (["tensor", "other"], "(tensor,other)"),
    (["tensor", None, "number"], "(tensor,?,number)"),
    (["number", "other"], None),  # no device tensor: nothing worth knowing element by element
    # a nested tuple keeps its own parts (`(q, k, v), (n_mem, length)`): a size in it stays a number
    (["(tensor,number)", "number"], "((tensor,number),number)"),
    (["((tensor,?),number)", None, "mask"], "(((tensor,?),number),?,mask)"),
])
def test_tuple_kinds(kinds, expected) -> None:
    kind = tensors.tuple_kind(kinds)
    assert kind == expected
    if expected is not None:
        assert tensors.tuple_elements(kind) == kinds
    assert tensors.tuple_elements("tensor") is None and tensors.tuple_elements(None) is None


def test_merge_keeps_what_was_learned() -> None:
    first = ExternalKinds(returns=(("a.f", "tensor"),), calls_in=(("g", TENSOR_ARG),))
    later = ExternalKinds(returns=(("a.h", "numpy"),))
    assert merge(first, later) == ExternalKinds(returns=(("a.f", "tensor"), ("a.h", "numpy")),
                                                calls_in=(("g", TENSOR_ARG),))
    assert merge(None, later) == later


def _project(tmp_path: Path, files: Dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '0'\n")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


CHAIN = {
    "lib/__init__.py": "",
    # no torch word at all: the pre-filter skips this file until a step passes it a tensor
    "lib/fmt.py": '''
        def show(value, step):
            print(f"{step}: {value:.3f}")
        ''',
    "lib/losses.py": '''
        import torch.nn.functional as F

        def compute(model, x, y):
            return F.mse_loss(model(x), y)
        ''',
    "train.py": '''
        from lib.fmt import show
        from lib.losses import compute

        def train(model, loader, opt, device):
            for step, (x, y) in enumerate(loader):
                x, y = x.to(device), y.to(device)
                loss = compute(model, x, y)
                opt.zero_grad()
                opt.step()
                show(loss, step)
        ''',
}


def test_a_learned_return_teaches_a_third_file(tmp_path: Path) -> None:
    """``loss`` is a tensor only once train.py learns what compute returns; only then does the call
    of ``show`` teach fmt.py (a second round), a file the pre-filter skipped."""
    project = _project(tmp_path, CHAIN)
    whole = engine.run([str(project)], Config())
    assert [(Path(d.path).name, d.line, d.code) for d in whole.diagnostics] == [("fmt.py", 3, "SFL107")]
    alone = engine.run([str(project / "lib" / "fmt.py")], Config(), project=True)
    assert [(Path(d.path).name, d.line, d.code) for d in alone.diagnostics] == [("fmt.py", 3, "SFL107")]


def test_stdin_buffer_learns_from_its_project(tmp_path: Path) -> None:
    project = _project(tmp_path, CHAIN)
    text = (project / "lib" / "fmt.py").read_text()
    found = engine.lint_text(str(project / "lib" / "fmt.py"), text, Config(), project=True)
    assert [(d.line, d.code) for d in found] == [(3, "SFL107")]


LIST_RETURN = {
    "utils.py": '''
        import torch

        def accuracy(output, target, topk=(1,)):
            _, pred = output.topk(max(topk), 1)
            correct = pred.t().eq(target.view(1, -1))
            res = []
            for k in topk:
                res.append(correct[:k].reshape(-1).float().sum(0, keepdim=True) * (100.0 / target.size(0)))
            return res
        ''',
    "train.py": '''
        import torch
        from utils import accuracy

        def train(model, loader, optimizer, writer):
            for step, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                out = model(x)
                out.mean().backward()
                optimizer.step()
                acc1, acc5 = accuracy(out, y, topk=(1, 5))
                writer.add_scalar("acc1", acc1, step)
        ''',
}


def test_a_list_of_device_tensors_returned_from_another_file(tmp_path: Path) -> None:
    """``res.append(tensor)`` makes ``res`` a list of device tensors; the caller unpacks tensors.
    Linted alone, train.py first teaches utils.py what it passes, then learns what comes back."""
    project = _project(tmp_path, LIST_RETURN)
    expected = [("train.py", 12, "SFL109")]
    whole = engine.run([str(project)], Config())
    assert [(Path(d.path).name, d.line, d.code) for d in whole.diagnostics] == expected
    alone = engine.run([str(project / "train.py")], Config(), project=True)
    assert [(Path(d.path).name, d.line, d.code) for d in alone.diagnostics] == expected


HOOKS = {
    "trainer.py": '''
        import torch

        class Callback:
            def on_step_end(self, trainer, logs):
                pass

        class Trainer:
            def __init__(self, model, optimizer, callbacks):
                self.model, self.optimizer, self.callbacks = model, optimizer, callbacks

            def fit(self, loader):
                for x, y in loader:
                    loss = self.model(x.cuda()).mean()
                    loss.backward()
                    self.optimizer.step()
                    for cb in self.callbacks:
                        cb.on_step_end(self, {"loss": loss.detach()})
        ''',
    "train.py": '''
        import torch
        from trainer import Callback

        class NanGuard(Callback):
            def on_step_end(self, trainer, logs):
                if not torch.isfinite(logs["loss"]):
                    raise RuntimeError("non-finite loss")
        ''',
}


def test_a_hook_declared_in_a_context_file_is_a_step_for_a_file_linted_alone(tmp_path: Path) -> None:
    project = _project(tmp_path, HOOKS)
    for result in (engine.run([str(project)], Config()), engine.run([str(project / "train.py")], Config(), project=True)):
        assert ("train.py", 7) in [(Path(d.path).name, d.line) for d in result.diagnostics]


PARTIAL = {
    "matching.py": '''
        import torch

        def assign(labels):
            return torch.zeros(labels.shape[0], 8, dtype=torch.long, device=labels.device) + labels[:, None]

        def ohem(logits, target):
            pos = target > 0
            count = pos.sum(dim=1)
            return logits.sum(), pos, count
        ''',
    "model.py": '''
        import torch
        from matching import assign, ohem

        class WithLoss(torch.nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, images, labels):
                logits = self.net(images)
                target = assign(labels)
                loss, pos, count = ohem(logits, target)
                return loss / max(count.sum(), 1)
        ''',
    "train.py": '''
        from model import WithLoss

        def train(net, loader, opt):
            model = WithLoss(net).cuda()
            for images, labels in loader:
                loss = model(images.cuda(), labels.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
        ''',
}


def test_a_returned_tuple_learned_in_part_is_asked_again(tmp_path: Path) -> None:
    """``ohem`` returns ``(tensor,?,?)`` until a round tells it its ``target`` is a device tensor (what ``assign``
    returns, learned the round before); model.py keeps asking for what it returns, so ``count`` is a tensor in the
    end and ``max(count.sum(), 1)`` a comparison on the host."""
    assert tensors.incomplete("(tensor,?,?)") and tensors.incomplete("((tensor,?),number)")
    assert not tensors.incomplete("(tensor,mask,tensor)") and not tensors.incomplete("tensor")
    project = _project(tmp_path, PARTIAL)
    whole = engine.run([str(project)], Config())
    assert [(Path(d.path).name, d.line, d.code) for d in whole.diagnostics] == [("model.py", 14, "SFL106")]
