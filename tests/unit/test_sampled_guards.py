"""Branches a few sampled steps take (``if random.random() < 0.001:``) are logging guards; a method that
``torch.Tensor`` does not have says its receiver is not a tensor after all."""
from __future__ import annotations

import libcst as cst
import pytest

from syncfree_lint.analysis.guards import is_sampled_rarely
from syncfree_lint.analysis.imports import ImportMap

from project_lint import lint_files

_LOOP = """
    import random
    import numpy as np

    def evaluate(model, loader):
        for x in loader:
            out = model(x.cuda())
            if {test}:
                print("sample", out)
"""


@pytest.mark.parametrize("test,guarded", [
    ("random.random() < 0.001", True), ("0.05 > np.random.rand()", True), ("random.random() < 0.5", False),
    ("random.random() > 0.001", False), ("len(x) > 0", False),
])
def test_a_branch_taken_on_sampled_steps_is_a_guard(tmp_path, test, guarded):
    found = lint_files(tmp_path, {"loop.py": _LOOP.format(test=test)})
    assert (not [f for f in found if f[1] == 9]) is guarded


def test_is_sampled_rarely_reads_the_draw_through_imports():
    imports = ImportMap()
    statement = cst.parse_module("import numpy.random as npr\n").body[0]
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Import)
    imports.add_import(statement.body[0])
    assert is_sampled_rarely(cst.parse_expression("npr.random() <= 0.01"), imports.qualname)
    assert not is_sampled_rarely(cst.parse_expression("npr.random() <= 0.9"), imports.qualname)


_DETECTIONS = """
    def filter_outputs(model, loader, min_score):
        for images in loader:
            outputs = model(images.cuda())
            for out in outputs:
                instances = out["instances"]
                if not instances.has("scores"):
                    continue
                print(instances.scores.sum().item())
"""


def test_a_method_tensors_lack_leaves_the_value_unknown(tmp_path):
    found = lint_files(tmp_path, {"filt.py": _DETECTIONS})
    assert not [f for f in found if f[1] == 7]  # `instances.has("scores")`: a Python bool


def test_an_item_read_of_a_model_output_is_still_a_tensor(tmp_path):
    """`outputs[obj].get("mask")` of a model's dict of outputs: `get` is a dict's, and its result a device tensor."""
    found = lint_files(tmp_path, {"crit.py": """
        def train(model, loader, opt):
            for x in loader:
                outputs = model(x.cuda())
                for obj in outputs:
                    mask = outputs[obj].get("mask", None)
                    if mask is not None and not mask.any():
                        continue
                    outputs[obj]["out"].sum().backward()
                opt.step()
    """})
    assert ("crit.py", 7, "SFL106") in found


def test_a_distribution_method_gives_device_data(tmp_path):
    """`Categorical(logits=out).log_prob(y)`: `log_prob` is not a tensor method, and its result is a device tensor."""
    found = lint_files(tmp_path, {"nll.py": """
        from torch.distributions import Categorical

        def train(model, loader, opt, history):
            for x, y in loader:
                out = model(x.cuda())
                nll = -Categorical(logits=out, validate_args=False).log_prob(y.cuda()).mean()
                nll.backward()
                opt.step()
                history.append(float(nll))
    """})
    assert ("nll.py", 10, "SFL105") in found
