"""Property test for the SFL101 fixes on running programs: random training programs built from
the shapes the fixes rewrite (float and count accumulators started as `0`, `0.0` or `0.`, weighted
sums, int32 counts, history lists, values kept through an alias that is later changed in place,
running-average meters started as `0` or `0.0`, updated or never updated, read whole or formatted)
and the reads that may follow them (after the loop, under a log guard, formatted, compared,
`{name=}`), fixed with every fix (`--unsafe-fixes`), then both versions run on the sync guard's
CPU stand-in device.

Each must print exactly the same text, and the fixed one must not sync more. A wrong rewrite
(a count printed as `82` instead of `82.0`, a view changed by `loss /= 2`, an int32 sum that
wraps, an expression's text changed inside `{x=}`) fails here with the program that shows it.
"""
from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from syncfree import guard  # noqa: E402
from syncfree_lint.config import Config  # noqa: E402
from syncfree_lint.engine import lint_text  # noqa: E402
from syncfree_lint.fixes.apply import fix_text  # noqa: E402

HEADER = """\
import torch

FALLBACK = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class IntMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count if self.count else 0


class FloatMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / self.count if self.count else 0.0


def train(device):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 3).to(device)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = [(torch.randn(5, 3), torch.randint(0, 3, (5,))) for _ in range(STEPS)]
{inits}
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        out = model(x)
        loss = criterion(out, y)
{body}
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
{guarded}
{after}
"""
STEPS = 4

ACCUMULATED = ["loss.item()", "loss.item() * x.size(0)", "len(y) * loss.item()", "(out.argmax(1) == y).sum().item()",
               "(out.argmax(1) == y).sum().int().item()", "out.argmax(1).eq(y).sum().item()"]
INITS = ["0", "0.0", "0."]
NUMBER_READS = ["print({n})", "print(f'{{{n}:.6f}}')", "print(f'{{{n}}}')", "print({n} / 7)", "print(repr({n}))",
                "print(f'{{{n}=}}')", "print({n} > 1)", "print('%s' % {n})", "print(str({n}), {n} * 2)"]
LIST_READS = ["print({n})", "print(sum({n}))", "print({n}[-1])", "print(f'{{{n}[0]=}}')", "print(len({n}))",
              "print(max({n}), sorted({n}))", "for v in {n}:\n        print(v)"]
VALUE_READS = ["print(step, {n})", "print(f'{{{n}:.5f}}')", "print(f'{{{n}=}}')"]
# reads of `avg` (divided by the count: the fix declines) and of `sum` (added to: the fix may apply)
METER_READS = ["print({n}.avg)", "print(f'{{{n}.avg:.6f}}')", "print(f'{{{n}.avg}}')", "print({n}.avg / 7)",
               "print(repr({n}.avg))", "print(f'{{{n}.avg=}}')", "print({n}.sum > 1, {n}.count)",
               "print('{{m.avg:.4f}} of {{m.count}}'.format(m={n}))", "print([{n}.avg])",
               "print({n}.sum)", "print(f'{{{n}.sum:.6f}}')", "print(f'{{{n}.sum}}')", "print({n}.sum / 7)",
               "print(repr({n}.sum))", "print('{{m.sum:.4f}} of {{m.count}}'.format(m={n}))", "print([{n}.sum])"]
METER_UPDATES = ["{n}.update(loss.item(), x.size(0))", "{n}.update(loss.item())", "{n}.update(loss.item() * 3, 2)",
                 "{n}.update((out.argmax(1) == y).sum().item(), len(y))"]


@st.composite
def programs(draw):
    inits, body, guarded, after = [], [], [], []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["sum", "list", "value", "alias", "meter"]))
        if kind == "sum":
            name = f"total{i}"
            inits.append(f"{name} = {draw(st.sampled_from(INITS))}")
            body.append(f"{name} += {draw(st.sampled_from(ACCUMULATED))}")
            after += [draw(st.sampled_from(NUMBER_READS)).format(n=name)]
        elif kind == "list":
            name = f"history{i}"
            inits.append(f"{name} = []")
            value = draw(st.sampled_from(["loss.item()", "(out.argmax(1) == y).sum().item()"]))
            body.append(f"{name}.append({value})")
            after += [draw(st.sampled_from(LIST_READS)).format(n=name)]
        elif kind == "meter":
            name = f"meter{i}"
            inits.append(f"{name} = {draw(st.sampled_from(['IntMeter', 'FloatMeter']))}()")
            first = draw(st.sampled_from([0, 2, STEPS]))  # from the first step, later, or never
            body.append(f"if step >= {first}:")
            body.append("    " + draw(st.sampled_from(METER_UPDATES)).format(n=name))
            if draw(st.booleans()):
                body.append(f"{name}.update(0.25)")  # a second update, with a Python float
            after += [draw(st.sampled_from(METER_READS)).format(n=name)]
        else:
            name = f"value{i}"
            if kind == "alias":
                body.append(f"raw{i} = loss.detach()")
                body.append(f"{name} = raw{i}.item()")
            else:
                body.append(f"{name} = loss.item()")
            guarded.append(draw(st.sampled_from(VALUE_READS)).format(n=name))
    if draw(st.booleans()):
        body.append("loss /= 2")  # in place: reaches every `.detach()` view of this step's loss
    text = HEADER.format(
        inits="\n".join("    " + line for line in inits),
        body="\n".join("        " + line for line in body),
        guarded="        if step % 2 == 0:\n" + "\n".join("            " + line for line in guarded) if guarded else "",
        after="\n".join("    " + line for line in after),
    )
    return text.replace("STEPS", str(STEPS))


def lint(path, text):
    return lint_text(path, text, Config())


def run(text: str, path: str):
    """What the program prints, and the host syncs it makes, on the stand-in device."""
    namespace = {"__name__": "program"}
    exec(compile(text, path, "exec"), namespace)
    printed = io.StringIO()
    with guard.stand_in() as device:
        with guard.no_host_sync(mode="record") as recorder, contextlib.redirect_stdout(printed):
            namespace["train"](device)
    return printed.getvalue(), sum(1 for event in recorder.events if event.filename == path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fixed_random_programs_print_the_same_and_sync_less(text):
    compile(text, "program.py", "exec")
    result = fix_text("program.py", text, lint, lambda d: d.fix is not None and d.fix.applies(True))
    before, syncs_before = run(text, "original.py")
    after, syncs_after = run(result.fixed, "fixed.py")
    assert after == before, f"fixed program prints something else\n--- original\n{text}\n--- fixed\n{result.fixed}"
    assert syncs_after <= syncs_before, f"more syncs after the fix\n{result.fixed}"


def test_the_programs_get_fixes():
    """The generator reaches the fixes: a typical draw is rewritten (the property is not vacuous)."""
    text = HEADER.format(inits="    total = 0.\n    history = []", body="        total += loss.item() * x.size(0)\n"
                         "        history.append((out.argmax(1) == y).sum().item())", guarded="",
                         after="    print(total, history)").replace("STEPS", str(STEPS))
    result = fix_text("program.py", text, lint, lambda d: d.fix is not None and d.fix.applies(True))
    assert "loss.detach().double() * x.size(0)" in result.fixed and "history.append((out.argmax(1) == y).sum())" \
        in result.fixed.replace(".detach()", "")
    before, syncs_before = run(text, "original.py")
    after, syncs_after = run(result.fixed, "fixed.py")
    assert after == before and syncs_after < syncs_before


@pytest.mark.parametrize("meter", ["IntMeter", "FloatMeter"])
def test_the_meter_programs_get_fixes(meter):
    """A meter draw is rewritten too (the random draws also hold meters never updated)."""
    text = HEADER.format(inits=f"    meter = {meter}()", body="        meter.update(loss.item(), x.size(0))",
                         guarded="", after="    print(meter.sum, [meter.sum])").replace("STEPS", str(STEPS))
    result = fix_text("program.py", text, lint, lambda d: d.fix is not None and d.fix.applies(True))
    assert "meter.update(loss.detach().double(), x.size(0))" in result.fixed
    before, syncs_before = run(text, "original.py")
    after, syncs_after = run(result.fixed, "fixed.py")
    assert after == before and syncs_after < syncs_before
