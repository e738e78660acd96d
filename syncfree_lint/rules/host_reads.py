"""SFL1xx: device-to-host reads inside a step."""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from syncfree_lint.analysis.tensors import is_cpu_device, is_true, keyword_value, positional
from syncfree_lint.fixes import host_read_proof as proof
from syncfree_lint.fixes import item_fix
from syncfree_lint.fixes.plan import FixPlan
from syncfree_lint.rules.base import Rule, method_call, receiver

def _host_read_receiver(node: cst.Call, ctx) -> bool:
    """A receiver that may be a device tensor: not numpy, a number, a host tensor or a module."""
    return ctx.maybe_tensor(receiver(node))


class ItemCall(Rule):
    code = "SFL101"
    name = "item-in-step"
    message = "`.item()` in a step waits for the GPU; keep the value on device and read it at log intervals"
    doc = """
## What it does
Flags `t.item()` inside a training or evaluation step (a step loop, a step function, or a
helper called from one), unless it sits under a logging-interval guard.

## Why it syncs
`.item()` copies one number from the GPU to the host. The CPU must wait until every kernel
queued before it has finished, so the CPU stops queueing work and the GPU idles after it.
Once per step, this caps throughput at the latency of the slowest kernel chain.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    running_loss += loss.item()
```

## Use instead
```python
running_loss = torch.zeros((), device=device)
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    running_loss += loss.detach()
    if step % log_every == 0:
        print(float(running_loss) / (step + 1))
```

## Fix safety
Unsafe (`--unsafe-fixes`), and offered only where `fixes/host_read_proof.py` proves that the
program computes, prints and returns the same thing; otherwise `--show-fixes` prints why not.
A float (a loss) keeps its type through `float()`: `total += loss.item()` becomes
`total += loss.detach().double()` (float64, as Python floats add) and `v = loss.item()` becomes
`v = loss.detach()` (`.detach().clone()` when `loss` may be changed in place later, e.g.
`loss /= accum`); every other read of the name becomes `float(name)`. A count stays an int:
`correct += (pred == y).sum().item()` becomes `correct += (pred == y).sum()` (an int64 tensor on
the device) and every read becomes `int(correct)`, so `"Accuracy: 9912/10000"` prints the same.
A history list, `history.append(loss.item())`, holds `loss.detach()` and is read back once where
it is read (`fixes/host_list.py` lists the conditions); `meter.update(x.item(), n)` is declined.
For a number binding it is offered only when:

- the name is bound only by that statement in its function (or module), plus, for `+=`,
  `total = <number literal>` initialisations and resets: no other assignment, augmented
  assignment, `del`, `global`, parameter, loop or `with` target, and no use in a nested function,
  lambda, class or comprehension;
- the value is proven a float (a criterion or loss call, `.mean()`/`.norm()`/`.float()`-like, a
  true division, arithmetic with one of these, or a name whose every binding is one) or an
  integer count (`.sum()` of a comparison or `.eq()`, `count_nonzero`, `.long()`); not model
  outputs, attributes, `argmax` or unknown calls;
- for a float, every read is arithmetic or a comparison with a non-string, non-container operand,
  printing, an f-string (not `{name=}`), `%`/`str.format`/`format`/`round`/`abs`/`math.*`, a
  logging call, or a copy to another plain name; with an `int` initialiser (`total = 0`) only
  where `0` and `0.0` act alike (`/`, comparisons, `:.4f`). A count's `int(name)` is the same
  Python int anywhere, except in an f-string `{name=}`;
- every read runs less often than the step: under a guard, or, when the statement is in a step
  loop of a function that is not itself a step, outside every step loop (after it, or in the
  epoch code; not in a validation loop). The `.item()` itself is not guarded;
- for a float `+=` (float64 on the device), the file's code (not its comments) names CUDA and no
  device without float64 (MPS, XLA, XPU, HPU, NPU) nor an API that may pick one at run time
  (`torch.accelerator`, accelerate, lightning). Counts need no such check.

Not covered: a tensor changed in place through another function it was passed to, a helper that
holds its own step loop and is itself called once per step, complex-valued tensors, and other
modules importing a module-level accumulator.
"""

    node_types = (cst.Call, cst.Name)
    fix_title = "keep the value on the device and read it (`float()`/`int()`) where it is used"

    def check(self, node: cst.CSTNode, ctx) -> None:
        state = ctx.state(self)
        if isinstance(node, cst.Name):  # where each statement runs, for the reads the proof checks
            places = state.setdefault("places", {})
            if id(ctx.statement) not in places:
                places[id(ctx.statement)] = ctx.placement()
            return
        if isinstance(node, cst.Call) and method_call(node) == "item" and not node.args and _host_read_receiver(node, ctx):
            scope = ctx.function.node if ctx.function is not None else ctx.module
            site = proof.ItemSite(node, ctx.statement, scope, ctx.placement())
            build = lambda: item_fix.decide(site, state.get("places", {}), ctx.qualname, ctx.source,  # noqa: E731
                                         state.setdefault("scopes", {})).parts
            ctx.report(self, node, fix=FixPlan(self.fix_title, "unsafe", build))


class CpuCopy(Rule[cst.Call]):
    code = "SFL102"
    name = "cpu-copy-in-step"
    message = "`.cpu()` in a step copies to the host and waits for the GPU; move it out of the step or pass `non_blocking=True` to `.to('cpu')`"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `t.cpu()`, `t.to("cpu")`, `t.to(torch.device("cpu"))` and `t.to(device="cpu")` on a
tensor inside a step. Not flagged: `non_blocking=True` (no wait by itself), modules
(`model.cpu()`), values already on the host.

## Why it syncs
A device-to-host copy into pageable memory is synchronous: the host waits for the copy, and
the copy waits for every kernel queued before it.

## Example
```python
for batch in loader:
    out = model(batch)
    preds.append(out.argmax(-1).cpu())
```

## Use instead
```python
for batch in loader:
    out = model(batch)
    preds.append(out.argmax(-1))      # stays on the device
all_preds = torch.cat(preds).cpu()    # one copy after the loop
```
or `out.to("cpu", non_blocking=True)` into pinned memory, read after an event or at the end.

## Fix safety
No automatic fix: moving the copy changes where the data lives.
"""

    def check(self, node: cst.Call, ctx) -> None:
        name = method_call(node)
        if name == "cpu":
            if not node.args and _host_read_receiver(node, ctx):
                ctx.report(self, node)
        elif name == "to":
            target = keyword_value(node, "device")
            value = target if target is not None else positional(node, 0)
            if value is None or not is_cpu_device(value, ctx.imports):
                return
            blocking = keyword_value(node, "non_blocking")
            if blocking is not None and is_true(blocking):
                return
            if _host_read_receiver(node, ctx):
                ctx.report(self, node, "`.to('cpu')` in a step copies to the host and waits for the GPU; move it out of the step or pass `non_blocking=True`")


class NumpyRead(Rule[cst.Call]):
    code = "SFL103"
    name = "numpy-in-step"
    message = "`.numpy()` in a step copies to the host and waits for the GPU; keep tensors on device and convert after the loop"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `t.numpy()`, and `np.asarray(t)` / `np.array(t)` of a tensor, inside a step. After a
`.cpu()` on the same chain (`t.cpu().numpy()`), only the `.cpu()` is flagged: the copy has
already happened there.

## Why it syncs
NumPy arrays live in host memory, so the tensor has to be copied from the device first, and
the copy waits for every queued kernel.

## Example
```python
for x, y in loader:
    scores.append(model(x).softmax(-1).numpy())
```

## Use instead
```python
for x, y in loader:
    scores.append(model(x).softmax(-1))
scores = torch.cat(scores).cpu().numpy()  # once, after the loop
```

## Fix safety
No automatic fix: the consumer of the array decides where the conversion belongs.
"""

    def check(self, node: cst.Call, ctx) -> None:
        name = method_call(node)
        if name == "numpy" and not node.args and _host_read_receiver(node, ctx):
            ctx.report(self, node)
            return
        if isinstance(node.func, (cst.Attribute, cst.Name)):
            qual = ctx.qualname(node.func)
            if qual in ("numpy.asarray", "numpy.array", "numpy.asanyarray"):
                first = positional(node, 0)
                if first is not None and ctx.is_tensor(first):
                    ctx.report(self, node, f"`{qual.replace('numpy', 'np')}()` of a tensor in a step copies to the host and waits for the GPU; convert after the loop")


class TolistRead(Rule[cst.Call]):
    code = "SFL104"
    name = "tolist-in-step"
    message = "`.tolist()` in a step copies to the host and waits for the GPU; accumulate on device and convert once"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `t.tolist()` on a tensor inside a step (not after `.cpu()` on the same chain, where
the copy is already flagged).

## Why it syncs
Building Python objects needs the values on the host: a device-to-host copy that waits for
every queued kernel.

## Example
```python
for batch in loader:
    predictions.extend(model(batch).argmax(-1).tolist())
```

## Use instead
```python
for batch in loader:
    predictions.append(model(batch).argmax(-1))
predictions = torch.cat(predictions).tolist()
```

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx) -> None:
        if method_call(node) == "tolist" and not node.args and _host_read_receiver(node, ctx):
            ctx.report(self, node)


_CONVERTERS = {"float", "int", "bool", "complex"}


class PythonScalar(Rule[cst.Call]):
    code = "SFL105"
    name = "python-scalar-of-tensor"
    message = "converting a tensor to a Python number in a step waits for the GPU; keep the tensor and read it at log intervals"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `float(t)`, `int(t)`, `bool(t)`, `complex(t)`, `math.<fn>(t)` and `operator.index(t)`
on a value known to be a tensor, inside a step.

## Why it syncs
Each of these calls `t.item()` under the hood: a device-to-host copy that waits for every
queued kernel.

## Example
```python
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    history.append(float(loss))
```

## Use instead
```python
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    history.append(loss.detach())
history = torch.stack(history).tolist()  # once, after the loop
```
For math functions, use the `torch` twin (`torch.sqrt`, `torch.exp`), which stays on device.

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not node.args:
            return
        name: Optional[str] = None
        if isinstance(func, cst.Name) and func.value in _CONVERTERS and not ctx.imports.imported(func.value):
            name = func.value
        elif isinstance(func, (cst.Attribute, cst.Name)):
            qual = ctx.qualname(func) or ""
            if qual.startswith("math.") or qual == "operator.index":
                name = qual
        if name is None:
            return
        first = node.args[0].value
        if ctx.is_tensor(first):
            ctx.report(self, node, f"`{name}()` of a tensor in a step waits for the GPU; keep the tensor and read it at log intervals")


def truthy_sites(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The sub-expressions Python calls ``bool()`` on when ``expr`` is used as a condition."""
    if isinstance(expr, cst.BooleanOperation):
        yield from truthy_sites(expr.left)
        yield from truthy_sites(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from truthy_sites(expr.expression)
    else:
        yield expr


_NAN_CHECKS = ("isnan", "isinf", "isfinite", "isneginf", "isposinf")


class TensorTruthiness(Rule):
    code = "SFL106"
    name = "tensor-truthiness"
    message = "a tensor used as a condition waits for the GPU; use `torch.where` or check it at log intervals"
    node_types = (cst.If, cst.While, cst.Assert, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation, cst.CompIf)
    doc = """
## What it does
Flags a tensor used where Python needs a `bool`: `if t:`, `while t:`, `assert t`,
`x if t else y`, `t and u`, `not t`, including `if torch.isnan(loss):`,
`if (a == b).all():` and `if loss > 10:`. Needs positive evidence that the value is a tensor.

## Why it syncs
`bool(t)` reads the value on the host (`.item()`), so the CPU waits for every queued kernel
before it can choose a branch.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    if torch.isnan(loss):
        continue
    loss.backward()
    opt.step()
```

## Use instead
Make the decision on the device, or defer the check:
```python
for x, y in loader:
    loss = criterion(model(x), y)
    finite = torch.isfinite(loss)
    (torch.where(finite, loss, torch.zeros_like(loss))).backward()  # skip without a sync
    opt.step()
    bad_steps += ~finite                                            # read at log intervals
```
When the control flow really needs the value (early stopping, ranks agreeing to stop), read it
every N steps under an interval guard.

## Fix safety
No automatic fix: the branch structure has to change.
"""

    def check(self, node: cst.CSTNode, ctx) -> None:
        seen = ctx.state(self).setdefault("seen", set())
        if isinstance(node, (cst.If, cst.While, cst.Assert, cst.IfExp, cst.CompIf)):
            test = node.test
            where = {cst.If: "`if`", cst.While: "`while`", cst.Assert: "`assert`", cst.IfExp: "a conditional expression", cst.CompIf: "a comprehension `if`"}[type(node)]
            for site in truthy_sites(test):
                self._flag(site, where, ctx, seen)
            for sub in _bool_parts(test):
                seen.add(id(sub))
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            if id(node) not in seen:
                for site in truthy_sites(node):
                    self._flag(site, "`not`", ctx, seen)
                for sub in _bool_parts(node):
                    seen.add(id(sub))
        elif isinstance(node, cst.BooleanOperation) and id(node) not in seen:
            self._flag(node.left, f"`{'and' if isinstance(node.operator, cst.And) else 'or'}`", ctx, seen)
            for sub in _bool_parts(node):
                seen.add(id(sub))

    def _flag(self, site: cst.BaseExpression, where: str, ctx, seen: set) -> None:
        if id(site) in seen or not ctx.is_tensor(site):
            return
        seen.add(id(site))
        if _mentions(site, _NAN_CHECKS):
            message = (f"a NaN/inf check on a tensor in {where} waits for the GPU every step; "
                       "mask the update with `torch.where(torch.isfinite(loss), ...)` and count bad steps on device, or check at log intervals")
        else:
            message = f"a tensor used as a condition in {where} waits for the GPU; decide on device with `torch.where`, or check at log intervals"
        ctx.report(self, site, message)


def _bool_parts(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    yield expr
    if isinstance(expr, cst.BooleanOperation):
        yield from _bool_parts(expr.left)
        yield from _bool_parts(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from _bool_parts(expr.expression)


def _mentions(expr: cst.CSTNode, names: tuple) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in names:
            return True
        if isinstance(node, cst.Attribute):
            if node.attr.value in names:
                return True
            stack.append(node.value)
        elif isinstance(node, cst.Call):
            stack.append(node.func)
            stack.extend(a.value for a in node.args)
        elif isinstance(node, (cst.UnaryOperation,)):
            stack.append(node.expression)
        elif isinstance(node, cst.Comparison):
            stack.append(node.left)
    return False


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})
_PROGRESS_METHODS = frozenset({"set_postfix", "set_description", "set_postfix_str", "write"})


class TensorFormatting(Rule):
    code = "SFL107"
    name = "tensor-formatting"
    message = "formatting a tensor in a step waits for the GPU; format it at log intervals"
    node_types = (cst.Call, cst.FormattedStringExpression, cst.BinaryOperation)
    doc = """
## What it does
Flags turning a tensor into text inside a step: `print(t)`, f-strings `f"{t}"` and
`f"{t:.3f}"`, `str(t)`, `repr(t)`, `"%f" % t`, `"{}".format(t)`, `logging`/`logger.*(..., t)`,
and progress bars (`pbar.set_postfix(loss=t)`).

## Why it syncs
Formatting reads the tensor's values on the host, a device-to-host copy that waits for every
queued kernel. It hides well inside a log line that runs every step.

## Example
```python
for step, (x, y) in enumerate(loader):
    loss = step_fn(x, y)
    print(f"step {step} loss {loss:.4f}")
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    loss = step_fn(x, y)
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.4f}")
```

## Fix safety
No automatic fix: which interval to log at is the user's choice.
"""

    def check(self, node: cst.CSTNode, ctx) -> None:
        if isinstance(node, cst.FormattedStringExpression):
            if ctx.is_tensor(node.expression):
                ctx.report(self, node.expression, "formatting a tensor in an f-string in a step waits for the GPU; format it at log intervals")
            return
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
                values = [el.value for el in node.right.elements] if isinstance(node.right, cst.Tuple) else [node.right]
                for value in values:
                    if ctx.is_tensor(value):
                        ctx.report(self, value, "`%`-formatting a tensor in a step waits for the GPU; format it at log intervals")
            return
        if not isinstance(node, cst.Call):
            return
        func = node.func
        what = None
        if isinstance(func, cst.Name) and func.value in ("print", "str", "repr", "format") and not ctx.imports.imported(func.value):
            what = f"`{func.value}()`"
        elif isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr == "format" and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString)):
                what = "`str.format()`"
            elif attr in _LOG_METHODS and _is_logger(func.value, ctx):
                what = f"`{attr}()` logging"
            elif attr in _PROGRESS_METHODS and attr != "write":
                what = f"`{attr}()`"
        if what is None:
            return
        for arg in node.args:
            if ctx.is_tensor(arg.value):
                ctx.report(self, arg.value, f"{what} of a tensor in a step waits for the GPU; format it at log intervals")


def _is_logger(expr: cst.BaseExpression, ctx) -> bool:
    qual = ctx.qualname(expr) or ""
    if qual == "logging" or qual.startswith("logging."):
        return True
    name = expr.attr.value if isinstance(expr, cst.Attribute) else getattr(expr, "value", "")
    return isinstance(name, str) and ("log" in name.lower())


class ExplicitSynchronize(Rule[cst.Call]):
    code = "SFL108"
    name = "explicit-synchronize"
    message = "`synchronize()` in a step blocks the host until the GPU is idle; remove it or time with CUDA events read at log intervals"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags explicit waits inside a step: `torch.cuda.synchronize()` (and the `torch.xpu`, `torch.mps`,
`torch.accelerator` twins), `<stream>.synchronize()`, `<event>.synchronize()` and
`torch.cuda.current_stream().synchronize()`.

## Why it syncs
That is what it is for: the host blocks until the device has drained its queue. In a step it
is usually left over from timing code and empties the pipeline every step.

## Example
```python
for x, y in loader:
    t0 = time.perf_counter()
    train_step(x, y)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
```

## Use instead
```python
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for step, (x, y) in enumerate(loader):
    if step % 100 == 0:
        start.record()
    train_step(x, y)
    if step % 100 == 0:
        end.record()
        end.synchronize()               # once per 100 steps
        print(start.elapsed_time(end))
```

## Fix safety
No automatic fix: the wait may guard a measurement or a host buffer.
"""

    def check(self, node: cst.Call, ctx) -> None:
        if method_call(node) != "synchronize":
            if isinstance(node.func, cst.Name):
                qual = ctx.qualname(node.func) or ""
                if qual == "synchronize" and not node.args:  # synchronize = torch.cuda.synchronize
                    ctx.report(self, node)
                elif qual.startswith("torch.") and qual.endswith(".synchronize"):
                    ctx.report(self, node, f"`{qual}()` in a step blocks the host until the GPU is idle; remove it or time with CUDA events read at log intervals")
            return
        qual = ctx.qualname(node.func) or ""
        if qual.startswith("torch.") or not qual.startswith(("numpy.", "threading.", "multiprocessing.")):
            shown = qual if qual.startswith("torch.") else "synchronize"
            ctx.report(self, node, f"`{shown}()` in a step blocks the host until the GPU is idle; remove it or time with CUDA events read at log intervals")


RULES = (ItemCall, CpuCopy, NumpyRead, TolistRead, PythonScalar, TensorTruthiness, TensorFormatting, ExplicitSynchronize)
