"""Loops of other shapes and masks kept in variables: a ``while`` loop that draws its batches with
``next()`` runs once per batch; a mask's rows are masks, and a mask anywhere in an index makes it
data-dependent."""
from __future__ import annotations

import textwrap
from typing import Set, Tuple

import pytest

from syncfree_lint import engine
from syncfree_lint.config import Config


def reported(source: str) -> Set[Tuple[int, str]]:
    return {(d.line, d.code) for d in engine.lint_text("loop.py", textwrap.dedent(source), Config())}


WHILE_LOOPS = [
    """
    import torch
    def evaluate(model, val_loader):
        data_iter = iter(val_loader)
        while True:
            batch = next(data_iter, None)
            if batch is None:
                break
            with torch.no_grad():
                out = model(batch)
            print(out.max().item())
    """,
    """
    import torch
    def train(model, train_loader, optimizer, max_steps):
        train_iter = iter(train_loader)
        step = 0
        while step < max_steps:
            try:
                x, y = next(train_iter)
            except StopIteration:
                train_iter = iter(train_loader)
                x, y = next(train_iter)
            loss = model(x.cuda()).mean()
            print(loss.item())
            step += 1
    """,
]


@pytest.mark.parametrize("source", WHILE_LOOPS)
def test_a_while_loop_that_draws_batches_is_a_step_loop(source: str) -> None:
    item_line = next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if ".item()" in line)
    assert (item_line, "SFL101") in reported(source)


def test_a_while_loop_over_anything_else_is_not() -> None:
    source = """
    import torch
    def summarize(results):
        pending = list(results)
        while pending:
            value = pending.pop()
            print(value.item())
    """
    assert not reported(source)


@pytest.mark.parametrize("index,expected", [
    ("x[keep[i]]", True), ("x[keep, 1:]", True), ("x[keep]", True), ("x[i, 1:]", False), ("x[idx]", False),
])
def test_masks_kept_in_variables(index: str, expected: bool) -> None:
    source = f"""
    import torch
    def train(model, loader, optimizer):
        model.train()
        for x, y in loader:
            out = model(x)
            keep = out[..., 4] > 0.25
            idx = out.argmax(-1)
            for i in range(2):
                picked = {index}
            picked.sum().backward()
            optimizer.step()
    """
    assert any(code == "SFL202" for _, code in reported(source)) is expected


@pytest.mark.parametrize("source,why", [
    (WHILE_LOOPS[1], "step loop (draws batches with next())"),
    ("""
    import torch
    def step(model, x, optimizer):
        model(x).mean().backward()
        optimizer.step()

    def train(model, data, optimizer):
        model = model.cuda()
        for x in data:
            step(model, x, optimizer)
            print(model(x).sum().item())
    """, "step loop (calls step(), which steps)"),
    ("""
    import torch
    def train(model, data, opt):
        model = model.cuda()
        for x in data:
            loss = model(x).mean()
            loss.backward()
            opt.step()
            print(loss.item())
    """, "step loop (calls loss.backward())"),
])
def test_the_reach_says_what_makes_the_loop_a_step(source: str, why: str) -> None:
    found = engine.lint_text("loop.py", textwrap.dedent(source), Config())
    assert any(d.reach and d.reach[0][1] == why for d in found), [d.reach for d in found]


def test_an_epoch_loop_that_clears_gradients_before_its_batch_loop_is_not_a_step_loop() -> None:
    source = """
    import torch
    def train(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            optimizer.zero_grad()
            for x, y in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            torch.save(model.state_dict(), "last.pt")
            print(loss.item())
    """
    assert reported(source) == set()


def test_accumulation_outer_loop_that_steps_stays_a_step_loop() -> None:
    source = """
    import torch
    def train(model, loader, optimizer):
        for chunks in loader:
            optimizer.zero_grad()
            for x in chunks:
                model(x.cuda()).mean().backward()
            optimizer.step()
            print(model(chunks[0].cuda()).mean().item())
    """
    assert any(code == "SFL101" for _, code in reported(source))


def test_report_guarded_names_the_guard() -> None:
    source = textwrap.dedent("""
    import torch
    def train(model, loader, optimizer, log_every=50):
        for step, (x, y) in enumerate(loader):
            loss = model(x.cuda()).mean()
            loss.backward()
            optimizer.step()
            if step % log_every == 0:
                print(loss.item())
    """)
    plain = engine.lint_text("loop.py", source, Config())
    guarded = engine.lint_text("loop.py", source, Config(report_guarded=True))
    assert plain == []
    [finding] = guarded
    assert finding.guarded and finding.reach[-1] == ("loop.py:8", "guarded by `if step % log_every == 0:`")


EVAL_WITH_MASKS = """
import torch
def evaluate(model, loader, device, cuda, save_hybrid=False):
    model.eval()
    for step, (im, targets) in enumerate(loader):
        if cuda:
            im = im.to(device, non_blocking=True)
            targets = targets.to(device)
        preds = model(im)
        for i, pred in enumerate(preds):
            labels = targets[targets[:, 0] == i, 1:]
        hybrid = [targets[targets[:, 0] == i] for i in range(4)] if save_hybrid else []
        shown = targets[targets[:, 0] == 0] if step % 100 == 0 else None
        late = targets[targets[:, 0] == 1] if step > 3 else None
"""


def test_a_batch_one_branch_moves_to_the_device_is_a_device_tensor_after_it() -> None:
    """``if cuda: targets = targets.to(device)``: on a run with a GPU the mask indexing syncs."""
    assert (11, "SFL202") in reported(EVAL_WITH_MASKS)


def test_a_conditional_expression_guards_its_body_like_an_if() -> None:
    """The body of ``a if save_hybrid else b`` (an opt-in option) or ``a if step % 100 == 0 else b``
    runs less than once per step; a test on anything else does not lower the frequency."""
    lines = {line for line, code in reported(EVAL_WITH_MASKS) if code == "SFL202"}
    assert 12 not in lines and 13 not in lines
    assert 14 in lines


ROLLOUT = """
import torch
def collect(agent, envs, buffer, device, num_steps):
    next_obs = torch.zeros(4, 8, device=device)
    for step in range(num_steps):
        with torch.no_grad():
            action = agent(next_obs)
        obs, reward, done, truncated, infos = envs.step(action.cpu().numpy())
        next_obs = torch.tensor(obs, device=device)
        if "episode" in infos:
            returns = infos["episode"]["r"][infos["_episode"]].tolist()
        buffer.append(reward)
    print(next_obs.sum().item())
"""


def test_a_loop_that_steps_an_environment_runs_once_per_step() -> None:
    """A rollout acts in its environment each iteration: the copy of the action to the host and
    the observation copied back are per-step syncs; what the environment returns is host data."""
    found = reported(ROLLOUT)
    assert (8, "SFL102") in found and (9, "SFL401") in found
    assert not any(line == 11 for line, _ in found)  # numpy from the environment's info
    assert not any(line == 13 for line, _ in found)  # after the rollout: once per call


def test_rollout_loop_says_why() -> None:
    result = engine.lint_text("loop.py", textwrap.dedent(ROLLOUT), Config())
    hops = [hop for d in result if d.line == 8 for hop in d.reach]
    assert any("calls envs.step()" in what for _, what in hops)


@pytest.mark.parametrize("source,line,expected", [
    # every item of a batch moved by a comprehension, then unpacked: device tensors
    ("""
     import torch
     def step(model, batch, device):
         text, lens = [x.to(device, non_blocking=True) for x in batch]
         for b in range(lens.shape[0]):
             n = int(lens[b])
         model(text).mean().backward()
     """, 6, True),
    # a field of each item moved (`x["instances"].to(d)`) may be another object: not said
    ("""
     import torch
     def step(model, batch, device):
         gt = [x["instances"].to(device) for x in batch]
         if gt[0].has("masks"):
             pass
         model(batch).mean().backward()
     """, 5, False),
    # a batch object moved whole keeps its fields on the device
    ("""
     import torch
     def train(model, loader, optimizer, device):
         for data in loader:
             data = data.to(device, non_blocking=True)
             valid = data.y == data.y
             loss = model(data.x)[valid].mean()
             loss.backward()
             optimizer.step()
     """, 7, True),
    # a parameter called `batch` whose default is a number is a size, not a batch
    ("""
     import torch
     def make(steps=30, batch=16):
         return torch.randn(steps * batch, 8)
     def train(model, loader, optimizer):
         for x, y in loader:
             model(x.cuda()).mean().backward()
             optimizer.step()
             make()
     """, 4, False),
])
def test_batches_moved_whole_or_item_by_item(source: str, line: int, expected: bool) -> None:
    assert any(found == line for found, _ in reported(source)) is expected


EARLY_RETURNS = """
import torch
class Tracker:
    def __init__(self):
        self.losses = []
    def mean_loss(self):
        if not self.losses:
            return float("nan")
        return torch.cat(self.losses).mean().item()
    def log(self, should_log):
        if not should_log:
            return
        return torch.cat(self.losses).mean().item()
def train(model, loader, optimizer, tracker: Tracker, args):
    for x, y in loader:
        loss = model(x.cuda()).mean()
        loss.backward()
        optimizer.step()
        tracker.losses.append(loss.detach())
        print(tracker.mean_loss(), tracker.log(args.log))
"""


def test_an_early_return_of_a_value_is_not_a_frequency_guard() -> None:
    """``if not self.losses: return float("nan")`` answers an empty input: the read after it runs
    every step; ``if not should_log: return`` (nothing returned) is the early-exit guard."""
    lines = {line for line, _ in reported(EARLY_RETURNS)}
    assert 9 in lines and 13 not in lines


def test_star_args_of_a_step_are_a_tuple() -> None:
    source = """
    import torch.nn as nn
    class Wrap(nn.Module):
        def forward(self, *inputs, **kwargs):
            inputs = list(inputs) if inputs else []
            return inputs
    """
    assert not reported(source)
