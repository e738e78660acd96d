"""An annotation of a Python value (``int``, ``Sequence[int]``, ``Optional[float]``) says a parameter named like a batch
is none (``analysis.annotations``)."""
from __future__ import annotations

import libcst as cst
import pytest

from project_lint import lint_files
from syncfree_lint.analysis import kinds as K
from syncfree_lint.analysis.annotations import host_annotation_kind


@pytest.mark.parametrize("annotation,kind", [
    ("int", K.NUMBER), ("float", K.NUMBER), ("bool", K.NUMBER), ("str", K.OTHER),
    ("Sequence[int]", K.OTHER), ("typing.List[int]", K.OTHER), ("Tuple[int, ...]", K.OTHER), ("tuple[int, int]", K.OTHER),
    ("Optional[int]", K.NUMBER), ("Optional[Sequence[int]]", K.OTHER),
    ("torch.Tensor", None), ("List[torch.Tensor]", None), ("Union[int, Tensor]", None), ("Optional[Tensor]", None),
    ("Dict[str, int]", None), ("MyConfig", None),
])
def test_host_annotation_kind(annotation: str, kind) -> None:
    assert host_annotation_kind(cst.parse_expression(annotation)) == kind


def test_an_annotated_host_parameter_named_like_a_batch(tmp_path) -> None:
    program = """
        import torch
        from typing import Sequence

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def forward(self, x, batch_sizes: Sequence[int] = None):
                h = self.lin(x)
                a = torch.empty(batch_sizes[0], 4, device=x.device)
                return h[: a.shape[0]]

        def train(model, loader, opt):
            for x, y in loader:
                loss = model(x.cuda(), [8]).sum()
                loss.backward()
                opt.step()
    """
    findings = lint_files(tmp_path, {"net.py": program})
    assert ("net.py", 12, "SFL112") not in findings, findings  # annotated: a list of ints


def test_an_optional_annotation_filled_with_a_tensor(tmp_path) -> None:
    """`max_len: Optional[int] = None` filled by `lens.max()`: a tensor after all, when callers leave it out."""
    program = """
        import torch
        from typing import Optional

        def mask_from_lens(lens, max_len: Optional[int] = None):
            if max_len is None:
                max_len = lens.max()
            ids = torch.arange(0, max_len, device=lens.device)
            return ids[None] < lens[:, None]

        def train(model, loader, opt):
            for x, lens in loader:
                mask = mask_from_lens(lens.cuda())
                loss = (model(x.cuda()) * mask).sum()
                loss.backward()
                opt.step()
    """
    findings = lint_files(tmp_path, {"lens.py": program})
    assert ("lens.py", 8, "SFL112") in findings, findings
