"""SFL107: a tensor turned into text in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.instances import class_of_kind
from syncfree_lint.knowledge.sinks import LOGGER_METHODS, QUIET_LOGGER_METHODS
from syncfree_lint.rules.base import Rule

_PROGRESS_METHODS = frozenset({"set_postfix", "set_description", "set_postfix_str"})


class TensorFormatting(Rule):
    code = "SFL107"
    name = "tensor-formatting"
    messages = {
        "default": "formatting a tensor in a step waits for the GPU; format it at log intervals",
        "f_string": "formatting a tensor in an f-string in a step waits for the GPU; format it at log intervals",
        "percent": "`%`-formatting a tensor in a step waits for the GPU; format it at log intervals",
        "call": "{what} of a tensor in a step waits for the GPU; format it at log intervals",
    }
    node_types = (cst.Call, cst.FormattedStringExpression, cst.BinaryOperation)
    invalid = (
        """
        def train(loader, step_fn):
            for step, (x, y) in enumerate(loader):
                loss = step_fn(x, y)
                loss.backward()
                print(f"step {step} loss {loss:.4f}")
        """,
        """
        import logging

        def train(model, loader, optimizer):
            for x, y in loader:
                loss = model(x).mean()
                loss.backward()
                optimizer.step()
                logging.info("loss %s", loss)
        """,
        """
        PROGRESS = "step {:>5d} loss {:.4f}"

        def train(model, loader, optimizer):
            for step, (x, y) in enumerate(loader):
                loss = model(x).mean()
                loss.backward()
                optimizer.step()
                print(PROGRESS.format(step, loss))
        """,
    )
    valid = (
        """
        def train(loader, step_fn):
            for step, (x, y) in enumerate(loader):
                loss = step_fn(x, y)
                loss.backward()
                if step % 100 == 0:
                    print(f"step {step} loss {loss.item():.4f}")
        """,
        """
        def train(model, loader, optimizer):
            for step, (x, y) in enumerate(loader):
                model(x).mean().backward()
                optimizer.step()
                print(f"step {step}")
        """,
    )
    doc = """
## What it does
Flags turning a tensor into text inside a step: `print(t)`, f-strings `f"{t}"` and
`f"{t:.3f}"`, `str(t)`, `repr(t)`, `"%f" % t`, `"{}".format(t)`, `logging`/`logger.*(..., t)` (not `logger.debug(..., t)`: off at the default level, its arguments are never formatted),
and progress bars (`pbar.set_postfix(loss=t)`).

## Why it syncs
Formatting reads the tensor's values on the host, a device-to-host copy that waits for every
queued kernel. It hides well inside a log line that runs every step.

## Example
```python
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss:.4f}")
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.4f}")
```

## Fix safety
No automatic fix: which interval to log at is the user's choice.
"""

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:
        if isinstance(node, cst.FormattedStringExpression):
            if ctx.is_tensor(node.expression):
                ctx.report(self, node.expression, "f_string")
            return
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
                values = [el.value for el in node.right.elements] if isinstance(node.right, cst.Tuple) else [node.right]
                for value in values:
                    if ctx.is_tensor(value):
                        ctx.report(self, value, "percent")
            return
        if not isinstance(node, cst.Call):
            return
        func = node.func
        what = None
        if isinstance(func, cst.Name) and func.value in ("print", "str", "repr", "format") and not ctx.is_imported(func.value):
            what = f"`{func.value}()`"
        elif isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr == "format" and (isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))
                                     or _names_constant(func.value)):
                what = "`str.format()`"  # of a literal, or of a template constant (`PROGRESS.format(...)`)
            elif attr in LOGGER_METHODS and attr not in QUIET_LOGGER_METHODS and _is_logger(func.value, ctx):
                what = f"`{attr}()` logging"
            elif attr in _PROGRESS_METHODS:
                what = f"`{attr}()`"
        if what is None:
            return
        for arg in node.args:
            if ctx.is_tensor(arg.value):
                ctx.report(self, arg.value, "call", what=what)


def _names_constant(expr: cst.BaseExpression) -> bool:
    """``BAR`` or ``cfg.LINE_FMT``: an upper-case name, by convention a constant (a template string here)."""
    name = expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) else ""
    return isinstance(name, str) and name.isupper()


def _is_logger(expr: cst.BaseExpression, ctx: SemanticModel) -> bool:
    qual = ctx.qualname(expr) or ""
    if qual == "logging" or qual.startswith("logging."):
        return True
    if ctx.instance_class(expr) is not None or class_of_kind(ctx.kind(expr)) is not None:
        return False  # an object of a known class: what its `log` does is read in its body
    name = expr.attr.value if isinstance(expr, cst.Attribute) else getattr(expr, "value", "")
    return isinstance(name, str) and ("log" in name.lower())
