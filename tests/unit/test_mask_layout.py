"""A boolean mask reshaped stays a mask (``valid.view(-1)``, ``keep.flatten()``): indexing with it is data-dependent.
A view to another dtype is not one (``mask.view(torch.uint8)``)."""
from __future__ import annotations

import pytest

from project_lint import lint_files
from syncfree_lint.knowledge.torch_api import LAYOUT_METHODS, MASK_FUNCTIONS


def test_layout_methods_change_no_values() -> None:
    assert {"view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "contiguous"} <= LAYOUT_METHODS
    # reductions and value maps are not layouts; a mask made by comparison is another table
    assert not LAYOUT_METHODS & {"sum", "mean", "any", "all", "float", "int", "to", "abs"}
    assert not LAYOUT_METHODS & MASK_FUNCTIONS


@pytest.mark.parametrize("index,expected", [
    ("valid.view(-1)", [("loss.py", 9, "SFL202")]),
    ("valid.flatten()", [("loss.py", 9, "SFL202")]),
    ("valid.reshape(-1).contiguous()", [("loss.py", 9, "SFL202")]),
    ("valid.view(torch.uint8).long().view(-1)", []),
])
def test_a_reshaped_mask_indexes_with_a_data_dependent_shape(tmp_path, index: str, expected) -> None:
    source = f"""
        import torch

        def train(model, loader, opt):
            for x, y, valid in loader:
                x, y, valid = x.cuda(), y.cuda(), valid.cuda()
                epe = (model(x) - y).abs().sum(1)
                valid = (valid >= 0.5) & (epe < 400)
                kept = epe.view(-1)[{index}]
                kept.sum().backward()
                opt.step()
    """
    assert lint_files(tmp_path, {"loss.py": source}) == expected
