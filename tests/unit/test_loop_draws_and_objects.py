"""Shapes of per-step code seen on new programs: a ``for`` loop that draws each batch with ``next()`` and moves it
itself; a custom autograd function's ``apply`` returns tensors; ``batch.mask`` of a batch object moved to the device
is a mask; a list of dicts of moved tensors is a container of device tensors; a switch kept from an ``__init__``
parameter that defaults to ``True`` is on; a mask write of scalar arithmetic is a fill."""
from __future__ import annotations

from project_lint import lint_files


def test_a_for_loop_that_draws_and_moves_each_batch_is_a_step_loop(tmp_path) -> None:
    source = """
        import torch

        @torch.no_grad()
        def evaluate(model, batches, n_batches, device):
            seen = set()
            for _ in range(n_batches):
                x = next(batches).to(device)
                seen.update(torch.unique(model(x).argmax(1)).tolist())
            return len(seen)

        def count(batches, n):
            for _ in range(n):
                x = next(batches)
            return torch.unique(x).tolist()
    """
    found = lint_files(tmp_path, {"evaluate.py": source})
    assert ("evaluate.py", 9, "SFL104") in found and not [f for f in found if f[1] == 15]


def test_the_apply_of_an_autograd_function_gives_a_tensor(tmp_path) -> None:
    source = """
        import torch

        class Clamp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                return helper(z)

            @staticmethod
            def backward(ctx, g):
                return g

        def train(model, loader, opt):
            for x in loader:
                out = Clamp.apply(model(x.cuda()))
                assert out.abs().max() < 10
                out.sum().backward()
                opt.step()
    """
    assert lint_files(tmp_path, {"train.py": source}) == [("train.py", 16, "SFL106")]


def test_a_mask_field_of_a_batch_object_on_the_device(tmp_path) -> None:
    source = """
        import torch.nn.functional as F

        def masked_loss(pred, gt, mask):
            return F.l1_loss(pred[mask], gt[mask])

        def train(model, batches, opt, device, steps):
            for _ in range(steps):
                batch = next(batches).to(device)
                loss = masked_loss(model(batch.feats), batch.poses, batch.valid_mask)
                loss.backward()
                opt.step()
    """
    found = lint_files(tmp_path, {"train.py": source})
    assert found == [("train.py", 5, "SFL202"), ("train.py", 5, "SFL202")]


def test_a_list_of_dicts_of_moved_tensors(tmp_path) -> None:
    source = """
        def train(model, loader, opt, device):
            for images, targets in loader:
                targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
                first = targets[0]["boxes"]
                if (first[:, 2:] <= first[:, :2]).any():
                    continue
                model(images.to(device), targets).sum().backward()
                opt.step()
    """
    assert lint_files(tmp_path, {"train.py": source}) == [("train.py", 6, "SFL106")]


_SWITCH = """
    import torch
    import torch.nn as nn

    class Guarded(nn.Module):
        def __init__(self, dim=-1, debug={default}):
            super().__init__()
            self.dim, self.debug = dim, debug
            self.proj = nn.Linear(4, 4)

        def forward(self, z):
            out = self.proj(z).softmax(self.dim)
            if self.debug:
                assert (out.sum(self.dim) - 1).abs().max() < 1e-3
            return out

    def train(model, loader, opt):
        for x in loader:
            model(x.cuda()).sum().backward()
            opt.step()
"""


def test_a_switch_on_by_default_runs_every_step(tmp_path) -> None:
    assert lint_files(tmp_path, {"guarded.py": _SWITCH.format(default="True")}) == [("guarded.py", 14, "SFL106")]


def test_a_switch_off_by_default_is_an_opt_in(tmp_path) -> None:
    assert lint_files(tmp_path, {"guarded.py": _SWITCH.format(default="False")}) == []


def test_a_mask_write_of_scalar_arithmetic_is_a_fill(tmp_path) -> None:
    source = """
        import torch

        class Codebook(torch.nn.Module):
            def __init__(self, num_codes):
                super().__init__()
                self.num_codes = num_codes
                self.register_buffer("usage", torch.zeros(num_codes))

            def forward(self, x):
                dead = self.usage < 0.01
                self.usage[dead] = 1.0 / self.num_codes
                self.usage[dead] = x.mean()
                return x
    """
    assert lint_files(tmp_path, {"codebook.py": source}) == [("codebook.py", 13, "SFL202")]


def test_a_for_loop_that_moves_each_part_of_a_drawn_batch(tmp_path) -> None:
    source = """
        import torch

        @torch.no_grad()
        def evaluate(model, batches, n_batches, device):
            for _ in range(n_batches):
                x, y = (t.to(device) for t in next(batches))
                hits = (model(x).argmax(1) == y).nonzero()
            return hits
    """
    assert lint_files(tmp_path, {"evaluate.py": source}) == [("evaluate.py", 8, "SFL201")]


def test_what_a_drawing_loop_does_not_move_stays_on_the_host(tmp_path) -> None:
    # the loop moves the features it feeds the model; the labels it reads back were never moved
    found = lint_files(tmp_path, {"evaluate.py": """
        import torch

        def evaluate(model, stream, n_batches, device):
            errors = 0
            for _ in range(n_batches):
                feats, lens, labels = next(stream)
                hyps = model(feats.to(device), lens.to(device))
                for b in range(len(hyps)):
                    ref = labels[b, : lens[b]].tolist()
                    errors += int(hyps[b].argmax().item() != ref[0])
            return errors
    """})
    assert [line for _, line, _ in found] == [11]  # the model's output is read back; the labels are not


def test_a_counter_beside_a_batch_of_a_named_iterator(tmp_path) -> None:
    # `data_iter = enumerate(loader)`; `for i, (x, y) in data_iter`: `i` counts, and `step + i` stays a number
    found = lint_files(tmp_path, {"train.py": """
        import torch

        def train(model, loader, opt, step=0):
            data_iter = enumerate(loader)
            for i, (x, y) in data_iter:
                loss = model(x.cuda()).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if (1.0 + step + i) / (10 + step + i) > 0.5:
                    pass
    """})
    assert found == []


def test_a_batch_whose_parts_the_function_moves_itself_is_on_the_host(tmp_path) -> None:
    found = lint_files(tmp_path, {"meta.py": """
        import torch

        def forward_backward(model, images, opt):
            crops = images["crops"].cuda(non_blocking=True)
            upper = images["upperbound"]
            buffer = crops.new_zeros(upper + 2, 4)
            loss = model(crops).mean() + buffer.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(crops.max().item())
    """})
    assert [(line, code) for _, line, code in found] == [(12, "SFL101")]


def test_a_reshaped_part_of_a_host_batch_moved_is_an_input_transfer(tmp_path) -> None:
    # the function moves parts of its batch itself: `.squeeze(1).to(device)` of one is the batch's transfer, not a
    # tensor built on the host (SFL403)
    found = lint_files(tmp_path, {"prep.py": """
        import torch

        def step(model, batch, opt, device):
            tokens = batch["tokens"].squeeze(1).to(device=device, dtype=torch.int)
            ids = batch["ids"].to(device)
            loss = model(tokens, ids).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """})
    assert found == []


def test_a_batch_parameter_converted_then_moved_was_handed_on_the_host(tmp_path):
    """`[torch.from_numpy(np.asarray(x)).to(self.device) for x in batch]`: the function moves the batch's parts
    itself, after converting them, so `np.asarray(x)` reads host data, not the device."""
    found = lint_files(tmp_path, {"trainer.py": """
        import numpy as np
        import torch

        class Trainer:
            def __init__(self, model, opt, get_batch, device):
                self.model, self.opt, self.get_batch, self.device = model, opt, get_batch, device

            def _to_device(self, batch):
                return [torch.from_numpy(np.asarray(x)).to(self.device) for x in batch]

            def train_step(self):
                x, y = self._to_device(self.get_batch())
                loss = (self.model(x) - y).pow(2).mean()
                loss.backward()
                self.opt.step()
    """})
    assert not [f for f in found if f[1] == 10 and f[2] == "SFL103"]
