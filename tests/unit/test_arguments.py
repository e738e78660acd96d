"""Argument kinds flow into the parameters of a file's own functions (``analysis/arguments.py``),
and the table of iterators over a model's own tensors (``knowledge/torch_api.OWN_TENSOR_ITERATORS``)."""
from __future__ import annotations

from typing import Dict

import libcst as cst
import pytest

from syncfree_lint.analysis import tensors as T
from syncfree_lint.analysis.arguments import PASSED, Seeds, analyse
from syncfree_lint.analysis.module import ModuleAnalysis
from syncfree_lint.engine import lint_text
from syncfree_lint.config import Config
from syncfree_lint.knowledge import torch_api as api

PRELUDE = 'import torch\nimport numpy\nx = torch.randn(3, device="cuda")\nn = numpy.ones(3)\n'


def seeds_of(source: str) -> Seeds:
    source = PRELUDE + source

    def walk(kinds: Seeds, returns) -> ModuleAnalysis:
        analysis = ModuleAnalysis("t.py", source, cst.parse_module(source), [], frozenset(), parameter_kinds=kinds,
                                  earlier_returns=returns)
        analysis.run()
        return analysis

    seeds = analyse(walk).parameter_seeds()
    return {q: {k: v for k, v in kinds.items() if not k.endswith(PASSED)} for q, kinds in seeds.items()}


@pytest.mark.parametrize("source,expected", [
    # one call passing a device tensor
    ("def f(a):\n    pass\nf(x)\n", {"f": {"a": T.TENSOR}}),
    # `super().__init__(...)` runs the base's method, not a subclass's override with other parameters
    ("class B:\n    def __init__(self, a, last=None):\n        pass\n"
     "class C(B):\n    def __init__(self, a, warmup):\n        super().__init__(a, x)\n"
     "class D(C):\n    def __init__(self, a, warmup, b):\n        super().__init__(a, 1.0)\n",
     {"B.__init__": {"last": T.TENSOR}, "C.__init__": {"warmup": T.NUMBER}}),
    # by keyword, and a keyword-only parameter
    ("def f(a, *, b):\n    pass\nf(b=x, a=1.0)\n", {"f": {"a": T.NUMBER, "b": T.TENSOR}}),
    # a device tensor at one call and an unknown value at another: the tensor call syncs
    ("def f(a):\n    pass\nf(x)\nf(unknown)\n", {"f": {"a": T.TENSOR}}),
    # a device tensor at one call and numpy at another: no agreement
    ("def f(a):\n    pass\nf(x)\nf(n)\n", {}),
    # host kinds need every call to agree and be known
    ("def f(a):\n    pass\nf(n)\nf(unknown)\n", {}),
    ("def f(a):\n    pass\nf(n)\nf(n * 2)\n", {"f": {"a": T.NUMPY}}),
    # a parameter a call leaves to its default is unknown at that call
    ("def f(a, b=None):\n    pass\nf(n)\nf(n, n)\n", {"f": {"a": T.NUMPY}}),
    # positional arguments after *args are not known
    ("def f(a, b):\n    pass\nf(*rest, x)\n", {}),
    # `*` of a sequence of device tensors: this parameter and the rest are device tensors
    ("def f(a, b, c):\n    pass\nf(n, *tuple(t.to('cuda') for t in batch))\n",
     {"f": {"a": T.NUMPY, "b": T.TENSOR, "c": T.TENSOR}}),
    ("def f(a, b):\n    pass\nf(*[x, x])\n", {}),
    # a module built from a class and moved reads as a tensor here; its class is what the callee learns
    ("from models import Net\ndef f(m):\n    pass\nnet = Net().to('cuda')\nf(net)\n",
     {"f": {"m": "module-object:models.Net"}}),
    # `*` of a call returning a tuple of known parts: each part in turn
    ("def g(t):\n    return t.cuda(), 3\ndef f(a, b, c):\n    pass\nf(*g(n), x)\n",
     {"f": {"a": T.TENSOR, "b": T.NUMBER}, "g": {"t": T.NUMPY}}),
    # methods called on self skip self; a static method does not
    ("class C:\n    def m(self, a):\n        pass\n    def run(self):\n        self.m(x)\n", {"C.m": {"a": T.TENSOR}}),
    ("class C:\n    @staticmethod\n    def m(a):\n        pass\n    def run(self):\n        self.m(x)\n", {"C.m": {"a": T.TENSOR}}),
    # a helper's helper learns on the second walk, in a file that has a step
    ("def g(b):\n    pass\ndef f(a):\n    g(a)\ndef step(opt):\n    x.backward()\n    opt.step()\n    f(x)\n",
     {"f": {"a": T.TENSOR}, "g": {"b": T.TENSOR}}),
    # ... and not in a file without one (nothing there runs per step)
    ("def g(b):\n    pass\ndef f(a):\n    g(a)\nf(x)\n", {"f": {"a": T.TENSOR}}),
    # seeds are computed whatever the annotation; the walk prefers an annotation that names a kind
    ("def f(a: int):\n    pass\nf(x)\n", {"f": {"a": T.TENSOR}}),
    # a `**` parameter collects the keywords no other parameter takes: a dict of device tensors when one is
    ("def f(a, **kw):\n    pass\nf(x, loss=x, lr=0.1)\n", {"f": {"a": T.TENSOR, "kw": T.TENSORS}}),
    ("def f(a, **kw):\n    pass\nf(a=x, lr=0.1)\n", {"f": {"a": T.TENSOR}}),
    ("def f(a, *, b, **kw):\n    pass\nf(n, b=x)\n", {"f": {"a": T.NUMPY, "b": T.TENSOR}}),
])
def test_parameter_seeds(source: str, expected: Dict[str, Dict[str, str]]) -> None:
    assert {q: k for q, k in seeds_of(source).items() if k} == expected


def _findings(source: str) -> list:
    return sorted((d.code, d.line) for d in lint_text("t.py", source, Config()))


STEP = (
    "import torch\n"
    "def show(v):\n"
    "    print(f'{v:.3f}')\n"
    "def train(model, loader, opt):\n"
    "    for x in loader:\n"
    "        loss = model(x.cuda()).sum()\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        show({arg})\n"
)


@pytest.mark.parametrize("arg,expected", [
    ("loss", [("SFL107", 3)]),          # the helper formats a device tensor every step
    ("loss.item()", [("SFL101", 9)]),   # the read is at the call; the helper formats a number
    ("float(loss)", [("SFL105", 9)]),
])
def test_a_helper_reports_what_the_step_passes_it(arg: str, expected: list) -> None:
    assert _findings(STEP.replace("{arg}", arg)) == expected


def test_values_a_helper_collects_by_keyword_are_formatted_tensors() -> None:
    source = STEP.replace("def show(v):\n    print(f'{v:.3f}')", "def show(**metrics):\n    print(' '.join(f'{k}={v:.3f}' for k, v in metrics.items()))")
    assert _findings(source.replace("{arg}", "loss=loss, lr=0.1")) == [("SFL107", 3)]
    assert _findings(source.replace("{arg}", "loss=loss.item(), lr=0.1")) == [("SFL101", 9)]


def test_a_number_annotation_does_not_hide_the_tensor_passed() -> None:
    # annotations are not enforced: the value formatted is the tensor the step passed
    source = STEP.replace("def show(v):", "def show(v: float):").replace("{arg}", "loss")
    assert _findings(source) == [("SFL107", 3)]


def test_a_tensor_annotation_wins_over_the_calls() -> None:
    source = STEP.replace("def show(v):", "def show(v: torch.Tensor):").replace("{arg}", "loss.cpu().numpy()")
    assert ("SFL107", 3) in _findings(source)


@pytest.mark.parametrize("method", sorted(api.OWN_TENSOR_ITERATORS))
def test_loops_over_own_tensors_are_not_loaders(method: str) -> None:
    source = (
        "import torch\n"
        "def move(model, device):\n"
        f"    for p in model.{method}():\n"
        "        p = p.to(device)\n"
        "        print(p.sum().item())\n"
    )
    assert _findings(source) == []


def test_a_loop_that_moves_its_items_is_a_loader_loop() -> None:
    source = (
        "import torch\n"
        "def evaluate(model, batches, device):\n"
        "    for p in batches:\n"
        "        p = p.to(device)\n"
        "        print(model(p).sum().item())\n"
    )
    assert _findings(source) == [("SFL101", 5)]


SWITCH = (
    "import torch\n"
    "def step(model, x, opt, dump=False):\n"
    "    loss = model(x.cuda()).sum()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    if dump:\n"
    "        print(loss.item())\n"
    "def train(model, loader, opt, mode):\n"
    "    for x in loader:\n"
    "        {call}\n"
)


@pytest.mark.parametrize("call,reported", [
    ("step(model, x, opt)", False),              # off by default and never set: an opt-in switch
    ("step(model, x, opt, dump=False)", False),
    ("step(model, x, opt, dump=mode)", True),    # a mode the caller chooses: the branch may run every step
    ("step(model, x, opt, mode)", True),
])
def test_a_false_default_is_a_switch_unless_a_call_sets_it(call: str, reported: bool) -> None:
    assert (("SFL101", 7) in _findings(SWITCH.replace("{call}", call))) is reported


def _lines(source: str, code: str = "") -> set:
    import textwrap
    return {d.line for d in lint_text("t.py", textwrap.dedent(source), Config()) if d.code.startswith(code or "SFL")}


EPOCH_FUNCTION = """
import torch
import torch.nn as nn

def train_one_epoch(model, criterion, optimizer, scaler, loader, device):
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        aux = criterion(model(x), y)
        print(float(aux))
        scaler.scale(aux).backward()
        scaler.step(optimizer)
        scaler.update()
        before = scaler.get_scale()

def main():
    device = torch.device("cuda")
    model = nn.Linear(3, 3).to(device)
    criterion = nn.CrossEntropyLoss()
    scaler = torch.cuda.amp.GradScaler()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_one_epoch(model, criterion, optimizer, scaler, [], device)
"""


def test_an_epoch_function_learns_what_its_caller_passes() -> None:
    """A function holding a step loop runs its loop per step whoever calls it: the module passed
    as ``criterion`` makes ``criterion(...)`` a tensor, and the GradScaler instance keeps its class
    (not just "not a tensor"), so ``get_scale()`` is known to read the device."""
    assert {9, 13} <= _lines(EPOCH_FUNCTION)


ZIPPED = """
import torch

class Evaluator:
    def update(self, outputs, targets):
        for out, tgt in zip(outputs, targets):
            a = tgt["boxes"].numpy()
            b = out.max().item()

def evaluate(model, loader, device, evaluator):
    model.eval()
    for images, targets in loader:
        images = images.to(device, non_blocking=True)
        evaluator.update(model(images), targets)

def main():
    evaluator = Evaluator()
    evaluate(None, [], "cuda", evaluator)
"""


def test_zip_binds_each_name_from_its_own_iterable() -> None:
    """``targets`` is a batch the loop never moves: its items are on the host; the model's outputs
    are on the device."""
    found = _lines(ZIPPED)
    assert 7 not in found and 8 in found


@pytest.mark.parametrize("loop,expected", [
    ("for p in model.parameters():\n                v = float(p.grad.norm())", True),
    ("for name, p in model.named_parameters():\n                v = float(p.grad.norm())", True),
    ("for name, p in model.named_parameters():\n                v = p.numel() if p.requires_grad else 0", False),
])
def test_a_models_own_tensors_are_device_tensors(loop: str, expected: bool) -> None:
    source = f"""
    import torch
    def train(model, loader, optimizer):
        for x, y in loader:
            model(x.cuda()).mean().backward()
            optimizer.step()
            {loop}
    """
    assert bool(_lines(source, "SFL1")) is expected
    assert not _lines(source, "SFL0")


_DATACLASS = '''
from dataclasses import dataclass
from typing import Any
import torch


@dataclass
class StepState:
    batch: Any
    scale: float = 1.0


def phase_loss(model, st):
    n = int(st.batch.sum())
    return model(st.batch).mean() * n


def train(model, loader, opt):
    for batch in loader:
        st = StepState({given})
        loss = phase_loss(model, st)
        loss.backward()
        opt.step()
'''


@pytest.mark.parametrize("given,reported", [
    ("batch=batch.cuda()", True), ("batch.cuda(), 2.0", True), ("batch=torch.zeros(4)", False),
    ("scale=2.0, batch=torch.ones(4)", False),
])
def test_a_dataclass_field_holds_what_its_constructions_give(given: str, reported: bool) -> None:
    """``StepState(batch=batch.cuda())`` of a dataclass with no ``__init__`` of its own: its instances' ``batch`` is
    a device tensor, so ``int(st.batch.sum())`` in a helper the step calls reads it back."""
    assert _findings(_DATACLASS.format(given=given)) == ([("SFL105", 14)] if reported else [])
