"""Calling an ``nn.Module`` runs its ``forward``: the call's arguments fill ``forward``'s parameters, and a
``forward`` that returns a tuple gives the caller each element's kind (``logits, mask = tagger(tokens,
lengths)``). A class of this file or of another; a class that defines ``__call__`` runs that instead."""
from __future__ import annotations

from project_lint import lint_files

_MODEL = """
    import torch
    import torch.nn as nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.out = nn.Linear(8, 3)

        def forward(self, tokens, lengths):
            max_len = lengths.max()
            tokens = tokens[:, :max_len]
            mask = torch.arange(tokens.size(1), device=tokens.device)[None, :] < lengths[:, None]
            return self.out(tokens), mask
"""

_TRAIN = """
    import torch
    import torch.nn.functional as F
    {imports}

    def masked_ce(logits, tags, mask):
        return F.cross_entropy(logits[mask], tags[mask])

    def main(loader):
        device = "cuda"
        model = Tagger().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for tokens, tags, lengths in loader:
            tokens, tags, lengths = tokens.to(device), tags.to(device), lengths.to(device)
            logits, mask = model(tokens, {lengths})
            loss = masked_ce(logits, tags, mask)
            loss.backward()
            opt.step()
"""


def test_a_module_call_fills_forward_and_returns_its_tuple(tmp_path) -> None:
    train = _TRAIN.replace("{imports}", "from tagger import Tagger").replace("{lengths}", "lengths")
    findings = lint_files(tmp_path, {"tagger.py": _MODEL, "train.py": train})
    assert ("tagger.py", 12, "SFL112") in findings, findings  # a device length as a slice bound
    assert ("train.py", 7, "SFL202") in findings, findings  # the mask forward returned
    (tmp_path / "one").mkdir()
    one = _MODEL + _TRAIN.replace("{imports}", "").replace("{lengths}", "lengths").replace(
        "    import torch\n", "", 1)
    found = lint_files(tmp_path / "one", {"one.py": one})
    assert {("one.py", 12, "SFL112"), ("one.py", 20, "SFL202")} <= set(found), found


def test_host_lengths_passed_to_forward_are_no_device_bound(tmp_path) -> None:
    train = _TRAIN.replace("{imports}", "from tagger import Tagger").replace("{lengths}", "lengths.cpu()")
    findings = lint_files(tmp_path, {"tagger.py": _MODEL, "train.py": train})
    assert ("tagger.py", 12, "SFL112") not in findings, findings


def test_a_class_with_its_own_call_runs_that(tmp_path) -> None:
    model = _MODEL.replace("        def forward(self, tokens, lengths):",
                           "        def __call__(self, tokens, lengths):\n"
                           "            return tokens, tokens\n\n"
                           "        def forward(self, tokens, lengths):")
    train = _TRAIN.replace("{imports}", "from tagger import Tagger").replace("{lengths}", "lengths")
    findings = lint_files(tmp_path, {"tagger.py": model, "train.py": train})
    assert ("tagger.py", 15, "SFL112") not in findings, findings


def test_a_nested_pattern_unpacks_a_structure_not_a_tensor(tmp_path) -> None:
    """`x, (h, w) = self.embed(x)`: the sizes a patch embedding returns beside its tensor are no device scalars
    (a module's call is taken as a tensor when its class is not known; a nested pattern says it is not one)."""
    program = """
        import torch
        import torch.nn as nn

        class Positions(nn.Module):
            def forward(self, b, h, w):
                return torch.arange(1, h + 1, device="cuda")[None].repeat(b, w)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed, self.pos = nn.Conv2d(3, 8, 4), Positions()

            def forward(self, x):
                x, {pattern} = self.embed(x)
                return x + self.pos(x.shape[0], h, w)
    """
    nested = lint_files(tmp_path, {"net.py": program.replace("{pattern}", "(h, w)")})
    assert not any(f[2] == "SFL112" for f in nested), nested
    (tmp_path / "flat").mkdir()
    flat = lint_files(tmp_path / "flat", {"net.py": program.replace("{pattern}", "h, w")})
    assert ("net.py", 7, "SFL112") in flat, flat


def test_parts_unpacked_from_a_host_tensor_stay_on_the_host(tmp_path) -> None:
    """A multi-crop wrapper handed device crops: the crop sizes it counts are a host tensor, so are the counts
    unpacked from `unique_consecutive` and the bounds summed from them (no slice bound read from the device)."""
    program = """
        import torch
        import torch.nn as nn

        class MultiCrop(nn.Module):
            def __init__(self, backbone):
                super().__init__()
                self.backbone = backbone

            def forward(self, crops):
                sizes = torch.tensor([c.shape[-1] for c in crops])
                _, counts = torch.unique_consecutive(sizes, return_counts=True)
                feats, start = [], 0
                for end in torch.cumsum(counts, 0):
                    feats.append(self.backbone(torch.cat(crops[start:end])))
                    start = end
                return torch.cat(feats)

        def train(backbone, loader, opt):
            model = MultiCrop(backbone).cuda()
            for views in loader:
                crops = [v.cuda() for v in views]
                model(crops).sum().backward()
                opt.step()
    """
    assert not any(f[2] == "SFL112" for f in lint_files(tmp_path, {"crops.py": program}))


def test_a_kind_learned_late_by_a_caller_refines_what_its_callee_learned(tmp_path) -> None:
    """The caller first sees ``model(...)`` as one tensor, then learns that ``forward`` returns (tensor, mask): the
    function it hands ``mask`` to, in the model's file, learns the mask (not the tensor of the first round)."""
    model = """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.out = nn.Linear(8, 3)

            def forward(self, x, lengths):
                mask = torch.arange(x.size(1), device=x.device)[None, :] < lengths[:, None]
                return self.out(x), mask

        def masked_loss(logits, tags, mask):
            return F.cross_entropy(logits[mask], tags[mask])
    """
    train = """
        from tagger import Tagger, masked_loss

        def main(loader, opt):
            model = Tagger().cuda()
            for x, tags, lengths in loader:
                x, tags, lengths = x.cuda(), tags.cuda(), lengths.cuda()
                logits, mask = model(x, lengths)
                loss = masked_loss(logits, tags, mask)
                loss.backward()
                opt.step()
    """
    found = lint_files(tmp_path, {"tagger.py": model, "train.py": train})
    assert ("tagger.py", 16, "SFL202") in found
