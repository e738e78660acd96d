"""A call reaches only the functions that can take its arguments: ``LOSSES[name](...)`` of a registry of functions
with different parameters hands each call's kinds to those that accept that many positional arguments and those
keywords (``arguments._accepts``)."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_REGISTRY = """
    import torch
    import torch.nn.functional as F

    LOSSES = {}

    def register(name):
        def deco(fn):
            LOSSES[name] = fn
            return fn
        return deco

    @register("bce")
    def bag_bce(logit, target, pos_weight=1.0):
        weight = torch.tensor(pos_weight, device=logit.device)
        return F.binary_cross_entropy_with_logits(logit, target, pos_weight=weight)

    @register("inst")
    def instance_loss(logits, attn, sizes, labels, frac=0.1):
        return (logits * attn).mean() + sizes.float().mean() * frac
"""

_TRAIN = """
    from losses import LOSSES

    def train(model, opt, loader, cfg):
        for x, sizes, y in loader:
            x, sizes, y = x.cuda(), sizes.cuda(), y.cuda()
            logit, attn = model(x)
            loss = LOSSES["bce"](logit, y, cfg["pos_weight"]) + LOSSES["inst"](logit, attn, sizes, y, 0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize("rest,found", [("", True), (", *rest", False)])
def test_a_call_with_more_arguments_than_a_function_takes_does_not_teach_it(tmp_path, rest, found):
    """The five-argument call cannot run `bag_bce`: its third argument (a device tensor) says nothing of
    `pos_weight`, a number from the config, so building a tensor of it per step is reported. With `*rest`, `bag_bce`
    could take that call too, and its device tensor makes `pos_weight` one (no report)."""
    registry = _REGISTRY.replace("pos_weight=1.0)", f"pos_weight=1.0{rest})")
    result = lint_files(tmp_path, {"losses.py": registry, "train.py": _TRAIN})
    assert (("losses.py", 15, "SFL401") in result) is found
