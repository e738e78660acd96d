"""SFL101's meter fix (fixes/meter_update.py, analysis/meter_class.py, knowledge/meters.py): offered for
`meter.update(loss.item(), n)` only when the meter's class adds, multiplies and divides the value and
the program reads the meter off the step; every other shape is declined with its reason.

The fixed programs themselves are run in tests/integration/test_fix_programs.py (sfl101_meter_*).
"""
from __future__ import annotations

import libcst as cst
import pytest

from syncfree_lint.config import Config
from syncfree_lint.engine import lint_text
from syncfree_lint.analysis.meter_class import shape_of
from syncfree_lint.knowledge.meters import KNOWN_METERS

#: a class written for this test in the shape timm's AverageMeter has (the knowledge entry)
TIMM_SHAPED = """\
class AverageMeter:
    \"\"\"Average and current value.\"\"\"

    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count if self.count else 0
"""


def _class(text: str) -> cst.ClassDef:
    [cls] = [s for s in cst.parse_module(text).body if isinstance(s, cst.ClassDef)]
    return cls


def test_knowledge_entries_have_the_shape_their_classes_have():
    derived = shape_of(_class(TIMM_SHAPED))
    assert derived == KNOWN_METERS["timm.utils.AverageMeter"] == KNOWN_METERS["timm.utils.metrics.AverageMeter"]


NOT_METERS = {
    "a base class": (TIMM_SHAPED.replace("class AverageMeter:", "class AverageMeter(Base):"), "has a base class"),
    "a branch on the value": (TIMM_SHAPED.replace("self.val = val\n", "self.val = val if val > 0 else 0\n"),
                              "more than `+ - * /`"),
    "a method reading a field": (TIMM_SHAPED + "\n    def __str__(self):\n        return f'{self.avg:.3f}'\n",
                                 "`AverageMeter.__str__`: it reads `self.avg`"),
    "__dict__": (TIMM_SHAPED + "\n    def summary(self):\n        return dict(self.__dict__)\n", "`__dict__`"),
    "self handed on": (TIMM_SHAPED + "\n    def share(self, out):\n        out.append(self)\n", "hands `self`"),
    "a tensor reset": (TIMM_SHAPED.replace("self.sum = 0\n", "self.sum = torch.zeros(())\n"),
                       "something other than a number literal"),
    "a history": (TIMM_SHAPED.replace("self.val = val\n", "self.history.append(val)\n"),
                  "other than `self.f = ...`"),
    "a power": (TIMM_SHAPED.replace("val * n", "val ** 2"), "more than `+ - * /`"),
}


@pytest.mark.parametrize("name", sorted(NOT_METERS))
def test_classes_that_are_not_proven_meters(name):
    text, reason = NOT_METERS[name]
    shape = shape_of(_class(text))
    assert isinstance(shape, str) and reason in shape, shape


def test_float_started_meter_with_a_property():
    text = """\
class Meter(object):
    def __init__(self):
        self.total, self.n = 0.0, 0

    def update(self, value, n=1):
        self.total += value * n
        self.n += n

    @property
    def mean(self):
        return self.total / self.n
"""
    shape = shape_of(_class(text))
    assert not isinstance(shape, str)
    assert shape.fields == ("mean", "total") and not shape.int_start and shape.weight == (1, "n")
    assert shape.divided == ("mean",)


@pytest.mark.parametrize("update,divided", [
    ("self.avg = self.sum / self.count", ("avg",)),
    ("self.avg = self.sum / 2", ()),            # a power of two: the reciprocal is exact
    ("self.avg = self.sum / 0.25", ()),
    ("self.avg = self.sum / 3", ("avg",)),
    ("self.avg = self.sum / self.val", ()),     # a tensor by a tensor: divided on the device as Python does
    ("self.avg = (self.sum / self.count) * 2", ("avg",)),
])
def test_fields_divided_by_a_host_number(update, divided):
    text = TIMM_SHAPED.replace("self.avg = self.sum / self.count if self.count else 0", update)
    shape = shape_of(_class(text))
    assert not isinstance(shape, str), shape
    assert shape.divided == divided


HEADER = TIMM_SHAPED + """

import torch

device = torch.device("cuda")
model = torch.nn.Linear(3, 2).to(device)
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader, keep):
    losses = AverageMeter()
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
"""
LINE = HEADER.count("\n")

OFFERED = {
    "f-string at a log interval": ("        if i % 50 == 0:\n            print(f'{losses.val:.4f} ({losses.sum:.4f})')\n",
                                   []),
    "str.format keyword": ("    print('{m.sum:.3f} of {m.count}'.format(m=losses))\n", []),
    "returned": ("    return losses.sum\n", ["torch.as_tensor(losses.sum).item()"]),
    "divided after the loop": ("    print(losses.sum / 2)\n", ["float(losses.sum)"]),
    "reset at the epoch end": ("    losses.reset()\n", []),
}


def test_weighted_value():
    found = finding("", HEADER.replace("losses.update(loss.item(), x.size(0))", "losses.update(loss.item() * 4, x.size(0))"))
    assert found.fix is not None and [e.content for e in found.fix.edits] == ["detach().double"], found.fix_declined
    found = finding("", HEADER.replace("losses.update(loss.item(), x.size(0))", "losses.update(loss.item() * y, x.size(0))"))
    assert found.fix is None and "`k` not proven a Python number" in found.fix_declined

DECLINED = {
    "read every step": ("        print(f'{losses.val:.4f}')\n", "a read stays at step frequency"),
    "the average, divided by a count": ("    print(f'{losses.avg:.4f}')\n", "`losses.avg` is divided by a count"),
    "the average through str.format": ("    print('{m.avg:.3f}'.format(m=losses))\n", "`losses.avg` is divided by a count"),
    "handed to another function": ("    keep(losses)\n", "handed to other code (`keep(losses)`)"),
    "self-documenting f-string": ("    print(f'{losses.sum=}')\n", "is read where a tensor would act differently"),
    "a field assigned": ("    losses.avg = 0\n", "`losses.avg` is assigned"),
    "an unknown method": ("    losses.synchronize()\n", "`losses.synchronize()` is not a method"),
}


def finding(tail: str, header: str = HEADER):
    [found] = [d for d in lint_text("train.py", header + tail, Config(select=("SFL101",))) if d.line == LINE]
    return found


@pytest.mark.parametrize("name", sorted(OFFERED))
def test_offered(name):
    tail, reads = OFFERED[name]
    found = finding(tail)
    assert found.fix is not None and found.fix.applicability == "unsafe", found.fix_declined
    texts = [edit.content for edit in found.fix.edits]
    assert texts == ["detach().double"] + reads


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_declined(name):
    tail, reason = DECLINED[name]
    found = finding(tail)
    assert found.fix is None and reason in (found.fix_declined or ""), found.fix_declined


def test_declined_without_cuda_float64():
    found = finding("", HEADER.replace('torch.device("cuda")', 'torch.device("mps")'))
    assert found.fix is None and "float64 on the device needs CUDA" in found.fix_declined


def test_declined_when_the_count_is_a_tensor():
    found = finding("", HEADER.replace("x.size(0))", "y.sum())"))
    assert found.fix is None and "the count is not proven a Python number" in found.fix_declined


def test_several_updates_read_back_with_float_only_where_zero_and_float_agree():
    tail = "        losses.update(loss.item(), 1)\n    return losses.sum\n"
    found = finding(tail)
    assert found.fix is None and "the meter has other updates" in found.fix_declined


def test_library_meter_from_knowledge():
    header = HEADER.replace(TIMM_SHAPED, "from timm.utils import AverageMeter\n")
    line = header.count("\n")
    [found] = [d for d in lint_text("train.py", header + "    return losses.sum\n", Config(select=("SFL101",)))
               if d.line == line]
    assert found.fix is not None, found.fix_declined
    assert [e.content for e in found.fix.edits] == ["detach().double", "torch.as_tensor(losses.sum).item()"]
    [found] = [d for d in lint_text("train.py", header + "    return losses.avg\n", Config(select=("SFL101",)))
               if d.line == line]
    assert found.fix is None and "`losses.avg` is divided by a count" in found.fix_declined


def test_unknown_imported_meter_declined():
    header = HEADER.replace(TIMM_SHAPED, "from mylib import AverageMeter\n")
    line = header.count("\n")
    [found] = [d for d in lint_text("train.py", header, Config(select=("SFL101",))) if d.line == line]
    assert found.fix is None and "not known to only add the value" in found.fix_declined


# ---------------------------------------------------------------- a meter class of another file
def _project(tmp_path, files):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '0'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


TRAIN = """\
import torch
from utils import AverageMeter

device = torch.device("cuda")


def train(model, loader, criterion, optimizer):
    losses = AverageMeter()
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
    return losses.sum
"""


@pytest.mark.parametrize("meter, fixed", [(TIMM_SHAPED, True),
                                           (TIMM_SHAPED + "\n    def __str__(self):\n        return str(self.avg)\n", False)])
def test_meter_class_of_another_file(tmp_path, meter, fixed):
    """utils.py has no torch word (the pre-filter skips it): train.py's fix asks for its class, the
    run parses it and teaches the shape, whole and with train.py linted alone."""
    from syncfree_lint import engine

    project = _project(tmp_path, {"utils.py": meter, "train.py": TRAIN})
    for paths, alone in (([str(project)], False), ([str(project / "train.py")], True)):
        result = engine.run(paths, Config(select=("SFL101",)), project=alone)
        [found] = [d for d in result.diagnostics if d.line == 14]
        if fixed:
            assert found.fix is not None, (alone, found.fix_declined)
            assert [e.content for e in found.fix.edits] == ["detach().double", "torch.as_tensor(losses.sum).item()"]
        else:
            assert found.fix is None and "not known to only add the value" in found.fix_declined


UTILS = """\
import torch
import torch.distributed as dist


def reduce_tensor(tensor):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    rt /= dist.get_world_size()
    return rt


def top_index(out):
    return out.argmax(1)
"""


@pytest.mark.parametrize("value, fixed", [("reduce_tensor(loss)", True), ("top_index(loss)", False)])
def test_result_dtype_of_a_function_of_another_file(tmp_path, value, fixed):
    """`loss = reduce_tensor(loss)` keeps the loss's dtype: train.py's fix asks, utils.py tells
    (`number_kind.return_dtype`: "same:0"), whole and with train.py alone."""
    from syncfree_lint import engine

    train = TRAIN.replace("from utils import AverageMeter", "from utils import reduce_tensor, top_index") \
        .replace("        losses.update(loss.item(), x.size(0))", f"        loss = {value}\n        losses.update(loss.item(), x.size(0))")
    project = _project(tmp_path, {"utils.py": UTILS, "train.py": TIMM_SHAPED + "\n\n" + train})
    line = (TIMM_SHAPED + "\n\n" + train).splitlines().index("        losses.update(loss.item(), x.size(0))") + 1
    for paths, alone in (([str(project)], False), ([str(project / "train.py")], True)):
        result = engine.run(paths, Config(select=("SFL101",)), project=alone)
        [found] = [d for d in result.diagnostics if d.line == line]
        if fixed:
            assert found.fix is not None, (alone, found.fix_declined)
        else:
            assert found.fix is None and "not proven to be a float" in found.fix_declined


def test_meter_class_rebound_in_the_module_is_not_followed():
    """`AverageMeter = dict`-like rebinding after the class: a call may run something else."""
    header = HEADER.replace("\n\nimport torch\n", "\n\nAverageMeter = type('AverageMeter', (), {})\nimport torch\n")
    line = header.count("\n")
    [found] = [d for d in lint_text("train.py", header, Config(select=("SFL101",))) if d.line == line]
    assert found.fix is None and "not known to only add the value" in found.fix_declined
