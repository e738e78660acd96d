"""A parameter named like a batch is a size when every call passes a number (``coords_grid(batch, h, w)``) or a
switch when it defaults to a bool (``forward(self, feat, sample=True)``); parts of a shape are Python ints
(``b, n = x.shape[:2]``)."""
from __future__ import annotations

from project_lint import lint_files

_GRID = """
    import torch
    import torch.nn as nn

    def coords_grid(batch, ht, wd, device):
        ys, xs = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device), indexing="ij")
        return torch.stack([xs, ys]).float()[None].repeat(batch, 1, 1, 1)

    class Flow(nn.Module):
        def forward(self, image):
            {size}
            return coords_grid({batch}, h, w, image.device)

    class Actor(nn.Module):
        def forward(self, feat, sample=True):
            return feat + torch.randn_like(feat) if sample else feat

    def train(model, actor, loader, opt):
        for image in loader:
            image = image.cuda()
            loss = model(image).mean() + actor(image, sample=False).mean()
            loss.backward()
            opt.step()
"""


def test_a_batch_parameter_every_call_gives_a_number_is_a_size(tmp_path) -> None:
    source = _GRID.format(size="b, _, h, w = image.shape", batch="b")
    assert lint_files(tmp_path, {"flow.py": source}) == []


def test_parts_of_a_shape_slice_are_numbers(tmp_path) -> None:
    source = _GRID.format(size="b, c = image.shape[:2]\n            h, w = image.shape[-2:]", batch="b")
    assert lint_files(tmp_path, {"flow.py": source}) == []


def test_a_batch_parameter_given_a_device_tensor_is_still_read(tmp_path) -> None:
    # (`n` known to be on the device: a parameter taken for a batch by its name alone and used as a size is a size)
    source = _GRID.format(size="b, _, h, w = image.shape\n            n = image.cuda().sum().long()", batch="n")
    assert lint_files(tmp_path, {"flow.py": source}) == [("flow.py", 7, "SFL112")]
