"""Calls through objects (``analysis.instances``): a method reached through an instance runs as
often as the call, whatever way the code says which class the instance has."""
from __future__ import annotations

import textwrap
from typing import Set

import pytest

from syncfree_lint import engine
from syncfree_lint.config import Config

CLASSES = """
import torch

class Meter:
    def add(self, value):
        self.last = value.item()

class Loss:
    def __call__(self, scores, labels):
        return scores[labels >= 0].mean()

class Other:
    def add(self, value):
        return value
"""


def lines_reported(body: str) -> Set[int]:
    source = CLASSES + textwrap.dedent(body)
    return {d.line for d in engine.lint_text("objects.py", source, Config()) if d.code.startswith("SFL")}


ITEM_LINE = 6  # `self.last = value.item()` in Meter.add
MASK_LINE = 10  # `scores[labels >= 0]` in Loss.__call__


@pytest.mark.parametrize("body,line", [
    ("""
     def train(model, loader, optimizer):
         meter = Meter()
         for x, y in loader:
             loss = model(x).mean()
             loss.backward()
             optimizer.step()
             meter.add(loss.detach())
     """, ITEM_LINE),
    ("""
     def train(model, loader, optimizer):
         criterion = Loss()
         for x, y in loader:
             loss = criterion(model(x), y)
             loss.backward()
             optimizer.step()
     """, MASK_LINE),
    ("""
     def train(model, loader, optimizer, meter: Meter):
         for x, y in loader:
             loss = model(x).mean()
             loss.backward()
             optimizer.step()
             meter.add(loss.detach())
     """, ITEM_LINE),
    ("""
     class Trainer:
         meter: Meter

         def train_step(self, model, batch, optimizer):
             loss = model(batch).mean()
             loss.backward()
             optimizer.step()
             self.meter.add(loss.detach())
     """, ITEM_LINE),
    ("""
     class Trainer:
         def __init__(self):
             self.criterion = Loss()

         def train_step(self, model, batch, optimizer):
             x, y = batch
             loss = self.criterion(model(x), y)
             loss.backward()
             optimizer.step()
     """, MASK_LINE),
])
def test_method_through_an_instance_is_reached(body: str, line: int) -> None:
    assert line in lines_reported(body)


@pytest.mark.parametrize("body", [
    """
    def train(model, loader, optimizer):
        meter = Meter()
        meter = Other()
        for x, y in loader:
            loss = model(x).mean()
            loss.backward()
            optimizer.step()
            meter.add(loss.detach())
    """,
    """
    def train(model, loader, optimizer, log_every=100):
        meter = Meter()
        for step, (x, y) in enumerate(loader):
            loss = model(x).mean()
            loss.backward()
            optimizer.step()
            if step % log_every == 0:
                meter.add(loss.detach())
    """,
    """
    def train(model, loader, optimizer):
        meter = Meter()
        for x, y in loader:
            loss = model(x).mean()
            loss.backward()
            optimizer.step()
        meter.add(loss.detach())
    """,
])
def test_instance_calls_that_do_not_run_every_step(body: str) -> None:
    assert ITEM_LINE not in lines_reported(body)


FUNCTIONS = """
import functools
import torch

def log_loss(loss):
    print(loss.item())

def train_step(model, batch, optimizer):
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    return loss
"""
LOG_ITEM_LINE = 6  # `print(loss.item())` in log_loss


def reported_lines(body: str) -> Set[int]:
    source = FUNCTIONS + textwrap.dedent(body)
    return {d.line for d in engine.lint_text("callables.py", source, Config())}


@pytest.mark.parametrize("body", [
    """
    def train(model, loader, optimizer):
        log = torch.compile(log_loss)
        for batch in loader:
            log(train_step(model, batch, optimizer))
    """,
    """
    def train(model, loader, optimizer):
        log = functools.partial(log_loss)
        for batch in loader:
            log(train_step(model, batch, optimizer))
    """,
    """
    def train(model, loader, optimizer):
        for batch in loader:
            losses = [train_step(model, batch, optimizer)]
            list(map(log_loss, losses))
    """,
])
def test_a_function_used_as_a_value_is_reached(body: str) -> None:
    assert LOG_ITEM_LINE in reported_lines(body)


def test_a_wrapper_built_in_a_step_does_not_run_its_function() -> None:
    body = """
    def train(model, loader, optimizer):
        for batch in loader:
            loss = train_step(model, batch, optimizer)
            later = functools.partial(log_loss, loss)
    """
    assert LOG_ITEM_LINE not in reported_lines(body)


def test_a_function_passed_to_a_parameter_runs_where_the_parameter_is_called() -> None:
    body = """
    def run(loop_fn, loader, model, optimizer):
        for batch in loader:
            loss = train_step(model, batch, optimizer)
            loop_fn(loss)

    def main(model, loader, optimizer):
        run(log_loss, loader, model, optimizer)
    """
    assert LOG_ITEM_LINE in reported_lines(body)


def test_a_passed_step_makes_the_callers_loop_a_step_loop() -> None:
    body = """
    def run(step_fn, model, data, optimizer):
        for batch in data:
            loss = step_fn(model, batch, optimizer)
            print(loss.item())

    def main(model, data, optimizer):
        run(train_step, model, data, optimizer)
    """
    lines = reported_lines(body)
    assert any(line > 14 for line in lines), lines


def test_a_function_passed_to_a_parameter_called_once_is_not_per_step() -> None:
    body = """
    def finish(callback, loss):
        callback(loss)

    def train(model, loader, optimizer):
        for batch in loader:
            loss = train_step(model, batch, optimizer)
        finish(log_loss, loss)
    """
    assert LOG_ITEM_LINE not in reported_lines(body)


def test_a_name_holding_a_functions_result_is_not_the_function() -> None:
    body = """
    def build(model):
        return model.weight.sum().item()

    def train(model, loader, optimizer):
        total = build(model)
        for batch in loader:
            loss = train_step(model, batch, optimizer)
            print(loss.detach(), total)
    """
    source = FUNCTIONS + textwrap.dedent(body)
    build_line = next(i for i, line in enumerate(source.splitlines(), 1) if "weight.sum().item()" in line)
    assert build_line not in reported_lines(body)
