"""An on-policy iteration is one step (``frequency.FrequencyMixin._close_loop``): a loop that runs
the model with gradients off (or acts in an environment) and then updates on what it collected in a
nested loop that is not over a data loader. And a class of another file that is an ``nn.Module``
makes a module when constructed there (``run_kinds.module_classes``)."""
from __future__ import annotations

from typing import Dict, Tuple

from syncfree_lint.analysis.run_kinds import module_classes
from syncfree_lint.analysis.filefacts import FileFacts

from project_lint import lint_files


_lint = lint_files


_ROLLOUT = """
    import torch
    import torch.nn as nn

    class Policy(nn.Module):
        def forward(self, x):
            return x

    @torch.no_grad()
    def sample(model, prompt):
        return model(prompt)

    def main(device, iterations, opt):
        policy = Policy().to(device)
        for it in range(iterations):
            prompt = torch.randn(8, 4, device=device)
            {collect}
            for mb in torch.randperm(8, device=device).split(2):
                loss = policy(seq[mb]).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(seq.mean().item())
"""


def test_a_rollout_with_gradients_off_then_minibatch_updates_is_one_step(tmp_path) -> None:
    found = _lint(tmp_path, {"pg.py": _ROLLOUT.format(collect="seq = sample(policy, prompt)")})
    assert ("pg.py", 23, "SFL101") in found


def test_a_model_run_under_no_grad_in_the_loop_body_collects_too(tmp_path) -> None:
    collect = "with torch.no_grad():\n                seq = policy(prompt)"
    assert ("pg.py", 24, "SFL101") in _lint(tmp_path, {"pg.py": _ROLLOUT.format(collect=collect)})


def test_data_made_without_the_model_is_an_epoch_of_minibatches(tmp_path) -> None:
    found = _lint(tmp_path, {"pg.py": _ROLLOUT.format(collect="seq = prompt * 2")})
    assert ("pg.py", 23, "SFL101") not in found


def test_an_epoch_loop_over_a_loader_stays_an_epoch_loop(tmp_path) -> None:
    train = """
        import torch

        def train(model, loader, val_x, opt, epochs):
            for epoch in range(epochs):
                with torch.no_grad():
                    ref = model(val_x)
                for x, y in loader:
                    loss = (model(x) - y).pow(2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                print(ref.mean().item())
    """
    assert _lint(tmp_path, {"train.py": train}) == []


def _facts(classes: Dict[str, Tuple[str, ...]]) -> FileFacts:
    facts = FileFacts("/p/x.py", "x", "/p")
    facts.classes = classes
    return facts


def test_module_classes_follow_bases_across_files() -> None:
    found = module_classes([
        _facts({"nets.Base": ("torch.nn.Module",), "nets.Lit": ("pytorch_lightning.LightningModule",)}),
        _facts({"model.Net": ("nets.Base",), "model.Deep": ("model.Net",), "model.Meter": ("object",)}),
    ])
    assert {"nets.Base", "nets.Lit", "model.Net", "model.Deep"} <= found
    assert "model.Meter" not in found


def test_an_imported_module_class_moved_to_the_device_is_a_module_not_a_tensor(tmp_path) -> None:
    net = """
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                return x * 2
    """
    train = """
        from net import Net
        def main(device, data, opt):
            policy = Net().to(device)
            for x in data:
                y = policy(x)
                opt.step()
                print(float(policy), float(y))
    """
    assert _lint(tmp_path, {"net.py": net, "train.py": train}) == [("train.py", 8, "SFL105")]


def test_a_loop_over_models_written_out_is_not_an_evaluation_step(tmp_path) -> None:
    train = """
        import torch
        import torch.nn as nn

        class Criterion(nn.Module):
            def forward(self, net, x):
                return net(x).mean()

        @torch.no_grad()
        def validate(model, ema, val_x):
            criterion = Criterion()
            for net, scope in {models}:
                loss = criterion(net, val_x)
                torch.cuda.synchronize()
    """
    assert _lint(tmp_path, {"train.py": train.format(models='[(model, "val"), (ema, "val_ema")]')}) == []
    assert _lint(tmp_path, {"train.py": train.format(models="batches")}) == [("train.py", 14, "SFL108")]


def test_an_evaluation_loop_hands_the_model_and_an_item_to_a_helper(tmp_path) -> None:
    train = """
        import torch

        def infer(model, image):
            return model(image[None])[0]

        @torch.no_grad()
        def validate(model, volumes, sampler):
            for image, label in volumes:
                pred = infer(model, image)
                torch.cuda.synchronize()
            for seeds in sampler:
                sub = sampler.sample(seeds)
                out = model(sub.x)
                torch.cuda.synchronize()
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 11, "SFL108"), ("train.py", 15, "SFL108")]


_GAN = """
    import torch

    def train(G, D, opt_g, opt_d, loader, r1_every):
        for step, real in enumerate(loader):
            d_loss = D(real).mean() - D(G(real)).mean()
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            if step % r1_every == 0:
                r1 = D(real).pow(2).mean()
                opt_d.zero_grad()
                r1.backward()
                opt_d.step()
                print(r1.item())
"""


def test_a_lazy_regulariser_beside_the_optimizer_step_is_an_interval(tmp_path) -> None:
    assert _lint(tmp_path, {"gan.py": _GAN}) == []


def test_gradient_accumulation_holds_the_only_optimizer_step(tmp_path) -> None:
    train = """
        def train(model, opt, loader, accum):
            for step, (x, y) in enumerate(loader):
                loss = (model(x) - y).pow(2).mean() / accum
                loss.backward()
                if (step + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()
                    print(loss.item())
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 9, "SFL101")]


def test_torch_unique_of_a_host_tensor_reads_nothing_back(tmp_path) -> None:
    train = """
        import torch
        def train(model, opt, loader):
            for x, y in loader:
                out = model(x.cuda())
                out.sum().backward()
                opt.step()
                best = out.argmax(-1).cpu()
                for row in best:
                    kept = torch.unique_consecutive(row)
                classes = torch.unique(out.argmax(-1))
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 8, "SFL102"), ("train.py", 11, "SFL203")]


def test_an_accumulation_continue_leaves_the_optimizer_step_per_step(tmp_path) -> None:
    train = """
        import torch
        def train(model, opt, loader, accum, log_every):
            for i, (x, y) in enumerate(loader):
                loss = (model(x) - y).pow(2).mean() / accum
                loss.backward()
                if (i + 1) % accum != 0:
                    continue
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if not torch.isfinite(norm):
                    continue
                opt.step()
            for i, (x, y) in enumerate(loader):
                loss = (model(x) - y).pow(2).mean()
                loss.backward()
                opt.step()
                if i % log_every != 0:
                    continue
                print(loss.item())
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 10, "SFL106")]


def test_code_after_a_with_block_that_returns_is_a_retry_path(tmp_path) -> None:
    train = """
        import torch
        def retry(func):
            def wrapped(x):
                with ignore_oom():
                    return func(x)
                return func(x.cpu())
            return wrapped
        def train(model, opt, loader):
            step = retry(model)
            for x in loader:
                step(x).sum().backward()
                opt.step()
    """
    assert _lint(tmp_path, {"train.py": train}) == []


def test_a_with_return_inside_a_branch_guards_nothing_after_the_branch(tmp_path) -> None:
    train = """
        import torch
        class Shape(torch.nn.Module):
            def forward(self, ims):
                if isinstance(ims, torch.Tensor):
                    with torch.autocast("cuda"):
                        return ims * 2
                return torch.as_tensor(ims).cuda()
    """
    assert _lint(tmp_path, {"train.py": train}) == [("train.py", 8, "SFL403")]
