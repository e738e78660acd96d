"""SFL101's unsafe fix is offered only where fixes/host_read_proof.py proves it keeps behaviour.

Each case is a small training program (a step loop over ``loader`` that steps the optimizer).
DECLINED cases must still report SFL101 but offer no fix, and must be declined for the reason
named in the table (so a case cannot pass by failing some other condition). ACCEPTED cases must
be fixed with the edits named in the table; then the original and the fixed program are both
RUN (CPU torch, seeded, tiny tensors) and must print exactly the same text.
"""
from __future__ import annotations

import contextlib
import io
import textwrap

import pytest

from syncfree_lint.config import Config
from syncfree_lint.engine import lint_text
from syncfree_lint.fixes import host_read_proof
from syncfree_lint.fixes.apply import fix_text

HEADER = """\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 3).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(6)]


class Log:
    def info(self, message, *args):
        print("INFO", message % args)

    def log(self, values, step=None):
        print("LOG", sorted(values.items()), step)

    def add_scalar(self, tag, value, step):
        print("SCALAR", tag, value, step)


logger = writer = tracker = Log()
"""

STEP = """\
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
"""


DEVICE_LINE = 'device = "cuda" if torch.cuda.is_available() else "cpu"'
OTHER_DEVICES = {"accelerator_api": "device = torch.accelerator.current_accelerator()", "no_cuda_named": "device = pick()"}


def program(body: str) -> str:
    lines = []
    for line in textwrap.dedent(body).splitlines():
        if line.strip() == "<STEP>":
            indent = line[: len(line) - len(line.lstrip())]
            lines.extend(indent + step for step in textwrap.dedent(STEP).splitlines())
        else:
            lines.append(line)
    return HEADER + "\n\n" + "\n".join(lines) + "\n"


CONFIG = Config(select=("SFL101",))


def lint(path, text):
    return lint_text(path, text, CONFIG)


# name -> (program body, edits expected in the fixed text)
ACCEPTED = {
    "accumulator_read_after_the_loop": ("""
        def train():
            for epoch in range(2):
                running = 0.0
                for x, y in loader:
                    <STEP>
                    running += loss.item()
                print(f"epoch {epoch} loss {running / len(loader):.4f}", running, running * 2 > 1)

        train()
        """, ["running += loss.detach().double()", "{float(running) / len(loader):.4f}", "float(running) * 2 > 1"]),
    "value_read_at_log_intervals": ("""
        def train():
            for step, (x, y) in enumerate(loader):
                <STEP>
                lossf = loss.item()
                if step % 2 == 0:
                    print(step, lossf, f"{lossf:.3f}", "%.5f" % lossf, "{}".format(lossf), round(lossf, 3))
                    print("%s and %r" % (lossf, -lossf), math.isfinite(lossf), f"{lossf!r}")

        train()
        """, ["lossf = loss.detach()", "print(step, float(lossf), f\"{float(lossf):.3f}\""]),
    "in_place_change_later_gets_a_clone": ("""
        def train():
            for step, (x, y) in enumerate(loader):
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                v = loss.item()
                loss /= 2
                loss.backward()
                optimizer.step()
                if step % 3 == 0:
                    print(step, v)

        train()
        """, ["v = loss.detach().clone()", "print(step, float(v))"]),
    "int_initialiser_read_by_division_and_float_format": ("""
        def evaluate():
            total = 0
            with torch.no_grad():
                for x, y in loader:
                    out = model(x.to(device))
                    total += F.cross_entropy(out, y.to(device), reduction="sum").item()
            print(f"{total / len(loader):.6f} {total:.4f} {total > 1.0}")

        evaluate()
        """, ["total += F.cross_entropy(out, y.to(device), reduction=\"sum\").detach().double()",
              "{float(total) / len(loader):.6f} {float(total):.4f} {float(total) > 1.0}"]),
    "logging_calls": ("""
        def train():
            for epoch in range(2):
                running = 0.0
                for x, y in loader:
                    <STEP>
                    running += loss.item()
                logger.info("epoch %d loss %.6f", epoch, running)
                writer.add_scalar("loss", running, epoch)
                tracker.log({"loss": running, "mean": running / len(loader)}, step=epoch)

        train()
        """, ["logger.info(\"epoch %d loss %.6f\", epoch, float(running))", "{\"loss\": float(running),"]),
    "step_function_with_a_guarded_read": ("""
        def train_step(x, y, step):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            lossf = loss.item()
            if step % 2 == 0:
                print("step", step, lossf)

        for step, (x, y) in enumerate(loader):
            train_step(x.to(device), y.to(device), step)
        """, ["lossf = loss.detach()", "print(\"step\", step, float(lossf))"]),
    "mean_and_division_receivers": ("""
        def train():
            for step, (x, y) in enumerate(loader):
                <STEP>
                acc = (out.argmax(1) == y).float().mean().item()
                half = (loss / 2).item()
                if step % 2 == 1:
                    print(step, acc, half)

        train()
        """, ["acc = (out.argmax(1) == y).float().mean().detach()", "half = (loss / 2).detach()",
              "print(step, float(acc), float(half))"]),
    "module_level_loop": ("""
        running = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item()
        print(running, running / len(loader))
        """, ["running += loss.detach().double()", "print(float(running), float(running) / len(loader))"]),
    "epoch_function_returns_arithmetic_and_name_copy": ("""
        def train_one_epoch():
            total = 0.0
            for x, y in loader:
                <STEP>
                total += loss.item()
            last = total
            print(last)
            return total / len(loader)

        print(train_one_epoch())
        """, ["total += loss.detach().double()", "last = float(total)", "return float(total) / len(loader)"]),
    "loss_rebound_by_division_then_read_after_loop": ("""
        def train():
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss = loss / 2
                loss.backward()
                optimizer.step()
                lossf = loss.item()
            print(lossf, float(lossf))

        train()
        """, ["lossf = loss.detach()", "print(float(lossf), float(lossf))"]),
}

LOOP = """
def train():
    total = 0.0
    for step, (x, y) in enumerate(loader):
        <STEP>
        {stmt}
        {inside}
    {after}

train()
"""


def loop(stmt: str = "v = loss.item()", inside: str = "pass", after: str = "pass") -> str:
    return LOOP.format(stmt=stmt, inside=inside, after=after)


ACCEPTED.update({
    "count_of_comparison": (loop("total += (out.argmax(1) == y).sum().item()", after="print(total, total / 30)")
                            .replace("total = 0.0", "total = 0"),
                            ["total += (out.argmax(1) == y).sum()", "print(int(total), int(total) / 30)"]),
    "eq_sum_count_formatted": (loop("correct += out.argmax(1).eq(y).sum().item()",
                                    after="print(f'Accuracy: {correct}/30', '{}/{}'.format(correct, 30), [correct])")
                               .replace("total = 0.0", "correct = 0"),
                               ["correct += out.argmax(1).eq(y).sum()", "{int(correct)}/30", "[int(correct)]"]),
    "long_cast_value": (loop("k = loss.long().item()", after="print(k, k + 1)"),
                        ["k = loss.long().detach()", "print(int(k), int(k) + 1)"]),
    # a weighted accumulation (the mean over samples): float64 times a Python int is the same product
    "weighted_by_batch_size": (loop("total += loss.item() * x.size(0)", after="print(total / 30, f'{total:.6f}')"),
                               ["total += loss.detach().double() * x.size(0)", "print(float(total) / 30"]),
    "weighted_by_len_first": (loop("total += len(y) * loss.item()", after="print(total)"),
                              ["total += len(y) * loss.detach().double()", "print(float(total))"]),
    # backpropagated: autograd needs a floating tensor, so the one value the name holds is a float
    "backpropagated_model_output": (loop("extra = model(x).sum()\n        extra.backward()\n"
                                         "        total += extra.item()", after="print(total)"),
                                    ["total += extra.detach().double()", "print(float(total))"]),
    # a count started as a float prints as a float: an int64 counter from 0, read with float()
    "count_started_as_a_float": (loop("total += (out.argmax(1) == y).sum().item()", after="print(total, f'{total}')"),
                                 ["total = 0\n", "total += (out.argmax(1) == y).sum()",
                                  "print(float(total), f'{float(total)}')"]),
    # an int32 count is widened: a Python int never wraps
    "int32_count_widened": (loop("n += (out.argmax(1) == y).sum().int().item()", after="print(n)")
                            .replace("total = 0.0", "n = 0"),
                            ["n += (out.argmax(1) == y).sum().int().long()", "print(int(n))"]),
    # aliases through names, both ways: the kept value needs its own storage
    "alias_through_a_name_gets_a_clone": (loop("raw = loss.detach()\n        v = raw.item()\n        loss /= 2",
                                               "if step % 3 == 0:\n            print(step, v)"),
                                          ["v = raw.detach().clone()", "print(step, float(v))"]),
    "view_changed_in_place_gets_a_clone": (loop("v = loss.item()\n        flat = loss.view(-1)\n        flat.mul_(0.5)",
                                                "if step % 3 == 0:\n            print(step, v)"),
                                           ["v = loss.detach().clone()", "print(step, float(v))"]),
    "reset_after_logging": (loop("total += loss.item()", "if step % 2 == 0:\n            print(total)\n            total = 0.0"),
                            ["total += loss.detach().double()", "print(float(total))"]),
    "int_reset_read_by_division": (loop("total += loss.item()",
                                        "if step % 2 == 1:\n            print(f'{total / 2:.5f}')\n            total = 0"),
                                   ["total += loss.detach().double()", "{float(total) / 2:.5f}"]),
})

# name -> (program body, a phrase of the reason it is declined)
DECLINED = {
    # not the fixed statement form: containers and strings are never wrapped
    "dict_of_item": (loop("logs = {'loss': loss.detach().item()}", after="print(logs)"), "not `name +="),
    "fstring_of_item": (loop("msg = f'loss {loss.item():.4f}'", "if step % 2 == 0:\n            print(msg)"), "not `name +="),
    "divided_item": (loop("total += loss.item() / x.size(0)", after="print(total)"), "not `name +="),
    "weighted_count": (loop("total += (out.argmax(1) == y).sum().item() * 2", after="print(total)"),
                       "not proven to be a float"),
    "count_started_as_an_int_and_a_float": (loop("total += (out.argmax(1) == y).sum().item()",
                                                 "if step % 2 == 0:\n            print(total)\n            total = 0",
                                                 after="print(total)"), "both as an int and as a float"),
    "count_in_a_self_documenting_fstring": (loop("total += (out.argmax(1) == y).sum().item()",
                                                 after="print(f'{total / 30=}')").replace("total = 0.0", "total = 0"),
                                            "prints the expression's text"),
    "backpropagated_then_rebound": (loop("extra = model(x).sum()\n        extra.backward()\n"
                                         "        extra = out.argmax()\n        total += extra.item()", after="print(total)"),
                                    "not proven"),
    # the value is not proven a float
    "argmax": (loop("k = out.argmax().item()", after="print(k)"), "not proven"),
    "model_output_sum": (loop("v = model(x).sum().item()", after="print(v)"), "not proven"),
    "attribute_receiver": (loop("v = optimizer.param_groups[0]['lr'].item()", after="print(v)"), "not proven"),
    "tuple_unpacked_loss": (loop("a, b = loss, out\n        v = a.item()", after="print(v)"), "not proven"),
    "parameter_receiver": ("""
        def record(loss, step):
            v = loss.item()
            if step % 2 == 0:
                print(v)

        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = criterion(out, y.to(device))
            loss.backward()
            optimizer.step()
            record(loss, step)
        """, "not proven"),
    # other bindings of the name
    "other_assignment": (loop(after="v = 'done'\n    print(v)"), "another binding"),
    "division_of_the_accumulator": (loop("total += loss.item()", after="total /= len(loader)\n    print(total)"), "another binding"),
    "del": (loop(after="print(v)\n    del v"), "another binding"),
    "loop_target": (loop(after="for v in range(2):\n        print(v)"), "another binding"),
    "global": ("""
        v = 0.0
        def train():
            global v
            for x, y in loader:
                <STEP>
                v = loss.item()

        train()
        print(v)
        """, "bound another way"),
    "nested_function": (loop(after="def show():\n        print(v)\n    show()"), "nested"),
    "lambda": (loop(after="show = lambda: v\n    print(show())"), "nested"),
    "comprehension": (loop(after="print([v for _ in range(2)])"), "nested"),
    "tensor_initialiser": (loop("total2 += loss.item()", after="print(total2)").replace("total = 0.0", "total2 = torch.zeros(())"),
                           "another binding"),
    "no_initialiser": (loop("total2 += loss.item()", after="print(total2)"), "no `name = <number>`"),  # linted, not run
    "parameter_accumulator": ("""
        def train(total):
            for x, y in loader:
                <STEP>
                total += loss.item()
            print(total)

        train(0.0)
        """, "parameter"),
    # a read where a float and a tensor (or 0 and 0.0) differ
    "returned": (loop(after="return v"), "Return"),
    "subscript_on_it": (loop(after="print(v.real)"), "Attribute"),
    "dict_key": (loop(after="seen = {v: 1}\n    print(seen)"), "DictElement"),
    "index": (loop(after="print([1, 2][v])"), "Index"),
    "int_call": (loop(after="print(int(v))"), "passed to a function"),
    "range_call": (loop(after="print(list(range(v)))"), "passed to a function"),
    "json": (loop(after="import json\n    print(json.dumps(v))"), "passed to a function"),
    "isinstance": (loop(after="print(isinstance(v, float))"), "passed to a function"),
    "unknown_function": (loop(after="history = []\n    history.append(v)"), "passed to a function"),
    "is_comparison": (loop(after="print(v is None)"), "`is`"),
    "stored_in_attribute": (loop(after="model.last = v"), "Assign"),
    "stored_in_list": (loop(after="print([v, 1])"), "Element"),
    "star_unpacking": (loop(after="print(*v)"), "unpacked"),
    "truth_value": (loop(after="print(v or 1.0)"), "BooleanOperation"),
    "fstring_self_documenting": (loop(after="print(f'{v=}')"), "`{name=}`"),
    "count_fstring_self_documenting": (loop("total += (out.argmax(1) == y).sum().item()", after="print(f'{total=}')")
                                       .replace("total = 0.0", "total = 0"), "`{name=}`"),
    "count_of_model_output": (loop("total += model(x).argmax(1).sum().item()", after="print(total)")
                              .replace("total = 0.0", "total = 0"), "not proven"),
    "int_initialiser_printed": (loop("total += loss.item()", after="print(total)").replace("total = 0.0", "total = 0"),
                                "int"),
    "int_initialiser_added": (loop("total += loss.item()", after="print(total + 1)").replace("total = 0.0", "total = 0"),
                              "0 and 0.0 differ"),
    # reads that stay in the step: the sync would only move
    "read_per_step": (loop("total += loss.item()", "print(total)"), "step frequency"),
    "read_in_validation_loop": (loop("total += loss.item()", after="for xv, yv in loader:\n        print(total)"),
                                "step frequency"),
    "compared_per_step": (loop(inside="if v > 10.0:\n                break"), "step frequency"),
    "step_function_read_unguarded": ("""
        def train_step(x, y):
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            v = loss.item()
            print(v)

        for x, y in loader:
            train_step(x.to(device), y.to(device))
        """, "step frequency"),
    # `+=` accumulates in float64: only where the device is CUDA or the CPU
    "mps_file": (loop("total += loss.item()", after="print(total)").replace(
        "def train():", "use_mps = torch.backends.mps.is_available()\n\ndef train():"), "needs CUDA"),
    "accelerator_api": (loop("total += loss.item()", after="print(total)"), "needs CUDA"),  # header swapped below
    "no_cuda_named": (loop("total += loss.item()", after="print(total)"), "needs CUDA"),
}


@pytest.fixture
def reasons(monkeypatch):
    seen = []
    decide = host_read_proof.decide

    def recording(*args, **kwargs):
        proof = decide(*args, **kwargs)
        seen.append(proof.reason)
        return proof

    monkeypatch.setattr(host_read_proof, "decide", recording)
    return seen


def run(text: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, "program.py", "exec"), {"__name__": "__main__"})
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_declined(name, reasons):
    body, phrase = DECLINED[name]
    text = program(body).replace(DEVICE_LINE, OTHER_DEVICES.get(name, DEVICE_LINE))
    compile(text, name, "exec")
    found = [d for d in lint("program.py", text) if d.code == "SFL101"]
    assert found, f"{name}: SFL101 not reported, the case tests nothing"
    offered = [d.format() for d in found if d.fix is not None and d.fix.edits]
    assert not offered, f"{name}: a fix was offered:\n" + "\n".join(offered)
    assert any(phrase in reason for reason in reasons), (name, reasons)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_fix_is_offered_and_runs_the_same(name, reasons):
    body, expected = ACCEPTED[name]
    text = program(body)
    result = fix_text("program.py", text, lint, lambda d: True)
    assert result.changed, (name, reasons)
    for snippet in expected:
        assert snippet in result.fixed, f"{name}: {snippet!r} missing from\n{result.fixed[len(HEADER):]}"
    assert not [d for d in lint("program.py", result.fixed) if d.code == "SFL101" and d.fix is not None and d.fix.edits]
    original, fixed = run(text), run(result.fixed)
    assert original.strip(), f"{name}: the program prints nothing"
    assert fixed == original, f"{name}:\n--- original\n{original}\n--- fixed\n{fixed}"


def test_the_clone_is_needed():
    """Without `.clone()` the in-place `loss /= 2` would reach the detached value."""
    body, _ = ACCEPTED["in_place_change_later_gets_a_clone"]
    text = program(body)
    result = fix_text("program.py", text, lint, lambda d: True)
    unclone = result.fixed.replace("loss.detach().clone()", "loss.detach()")
    assert run(unclone) != run(text)


def test_float32_accumulation_would_differ():
    """Why `+=` accumulates in float64: summing float32 values in float32 changes the printed sum."""
    body, _ = ACCEPTED["accumulator_read_after_the_loop"]
    text = program(body)
    result = fix_text("program.py", text, lint, lambda d: True)
    assert run(result.fixed.replace("loss.detach().double()", "loss.detach()")) != run(text)
