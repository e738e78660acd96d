"""SFL101's display-only suggestion (fixes/display_interval.py): a value shown every step is
shown every 100 steps instead. Offered only for statements that only show values (no string
spanning lines), in a step loop counted with `enumerate`; never applied by --fix. The suggested programs run."""
from __future__ import annotations

import contextlib
import io
import textwrap

import pytest

from syncfree_lint.config import Config
from syncfree_lint.engine import lint_text
from syncfree_lint.fixes.apply import fix_text

PROGRAM = """\
import torch


class Bar:
    def set_postfix(self, **values):
        print("bar", values)


class Tracker:
    def log(self, values, step=None):
        print("tracked", step, values)


def train(loader, bar, tracker):
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Linear(3, 2).to(device)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {loop}:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
{body}
{after}

torch.manual_seed(1)
train([(torch.randn(4, 3), torch.randint(0, 2, (4,))) for _ in range(150)], Bar(), Tracker())
"""
ENUMERATED = "for step, (x, y) in enumerate(loader)"


def program(body: str, loop: str = ENUMERATED, after: str = "") -> str:
    return PROGRAM.format(loop=loop, body=textwrap.indent(textwrap.dedent(body), " " * 8), after=after)


def suggestions(text: str):
    found = [d for d in lint_text("train.py", text, Config()) if d.code == "SFL101"]
    assert found, "SFL101 not reported: the case tests nothing"
    return [d for d in found if d.fix is not None and d.fix.applicability == "display"]


def run(text: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, "train.py", "exec"), {"__name__": "__main__"})
    return out.getvalue()


OFFERED = {
    "print": ("print(f'step {step} loss {loss.item():.4f}')\n", 1),
    "print over several lines": ("print(\n    f'step {step}',\n    loss.item(),\n)\n", 1),
    "logger-like progress bar": ("bar.set_postfix(loss=loss.item())\n", 1),
    "dict shown by the lines after it": ("logs = {'loss': loss.detach().item(), 'step': step}\n"
                                         "bar.set_postfix(**logs)\n"
                                         "tracker.log(logs, step=step)\n", 2),
}


@pytest.mark.parametrize("name", sorted(OFFERED))
def test_offered_as_a_guard_and_the_suggested_program_runs(name):
    body, lines = OFFERED[name]
    text = program(body)
    [found] = suggestions(text)
    assert "every 100 steps" in found.fix.title
    assert fix_text("train.py", text, lambda p, t: lint_text(p, t, Config()), lambda d: d.fix.applies(True)).fixed == text
    suggested = fix_text("train.py", text, lambda p, t: lint_text(p, t, Config()),
                         lambda d: d.fix is not None and d.fix.applies(True, suggestions=True)).fixed
    guarded = textwrap.indent(textwrap.dedent(body), " " * 12)
    assert "        if step % 100 == 0:\n" + guarded in suggested
    assert not suggestions_or_none(suggested)
    shown_before, shown_after = run(text).splitlines(), run(suggested).splitlines()
    assert len(shown_before) == 150 * lines  # `lines` shown per step, 150 steps
    assert shown_after == shown_before[:lines] + shown_before[100 * lines:101 * lines]  # steps 0 and 100


def suggestions_or_none(text: str):
    return [d for d in lint_text("train.py", text, Config()) if d.code == "SFL101"]


DECLINED = {
    "no step counter": ("print(loss.item())\n", "for x, y in loader", ""),
    "kept as a value": ("msg = f'{loss.item():.4f}'\nprint(msg)\n", ENUMERATED, ""),
    "dict used after the loop": ("logs = {'loss': loss.item()}\nbar.set_postfix(**logs)\n", ENUMERATED,
                                 "    print(logs)\n"),
    "a string over several lines": ('print("""loss\n%s""" % loss.item())\n', ENUMERATED, ""),
    "not directly in the loop": ("if loss.requires_grad:\n    print(loss.item())\n", ENUMERATED, ""),
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_not_offered(name):
    body, loop, after = DECLINED[name]
    assert not suggestions(program(body, loop, after))


def test_a_loop_counted_by_a_local_int():
    """`seen += 1` in a loop without `enumerate`: the guard uses that counter."""
    text = program("seen += 1\nprint(f'seen {seen} loss {loss.item():.4f}')\n", "seen = 0\n    for x, y in loader")
    [found] = suggestions(text)
    assert "`if seen % 100 == 0:`" in found.fix.title
    suggested = fix_text("train.py", text, lambda p, t: lint_text(p, t, Config()),
                         lambda d: d.fix is not None and d.fix.applies(True, suggestions=True)).fixed
    assert run(suggested).splitlines() == [line for line in run(text).splitlines() if line.startswith("seen 100 ")]


def test_not_offered_for_a_counter_bound_otherwise():
    text = program("seen += 1\nseen = len(y)\nprint(loss.item())\n", "seen = 0\n    for x, y in loader")
    assert not suggestions(text)
