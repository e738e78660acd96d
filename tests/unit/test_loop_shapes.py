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
