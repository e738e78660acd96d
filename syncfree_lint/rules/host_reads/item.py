"""SFL101: ``.item()`` in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.scope_index import FileContext
from syncfree_lint.edits import FixPlan
from syncfree_lint.fixes import host_read_proof as proof
from syncfree_lint.fixes import item_fix
from syncfree_lint.rules.base import Rule, method_call
from syncfree_lint.rules.host_reads._common import host_read_receiver


class ItemCall(Rule):
    code = "SFL101"
    name = "item-in-step"
    messages = {
        "default": "`.item()` in a step waits for the GPU; keep the value on device and read it at log intervals",
    }
    evidence = (".item(",)
    invalid = (
        """
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                print(loss.item())
        """,
        """
        def training_step(self, batch, batch_idx):
            loss = self.model(batch).mean()
            self.losses.append(loss.item())
            return loss
        """,
    )
    valid = (
        """
        def train(model, loader, optimizer, criterion):
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    print(loss.item())
        """,
        """
        def train(model, loader, optimizer, criterion):
            total = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                total = total + loss.detach()
            print(total.item())
        """,
    )
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
`v = loss.detach()` (`.detach().clone()` when `loss`, or a name sharing its storage such as
`raw = loss.detach()` or `flat = loss.view(-1)`, may be changed in place later, e.g.
`loss /= accum`); every other read of the name becomes `float(name)`. A count stays an int:
`correct += (pred == y).sum().item()` becomes `correct += (pred == y).sum()` (an int64 tensor on
the device) and every read becomes `int(correct)`, so `"Accuracy: 9912/10000"` prints the same.
A narrower count (`.int()`) gets `.long()`: a Python int never wraps, an int32 sum does past
2**31. A count started as a float (`correct = 0.`) starts at `0` and is read as `float(correct)`,
so it still prints `82.0`, exact below 2**53 as the Python float was.
A history list, `history.append(loss.item())`, holds `loss.detach()` and is read back once where
it is read (`fixes/host_list.py` lists the conditions). A running-average meter,
`losses.update(loss.item(), x.size(0))`, takes `loss.detach().double()` when its class only adds,
multiplies and divides the value (timm's `AverageMeter`, or a class of the same file proven to;
`fixes/meter_update.py` lists the conditions): it computes the same doubles on the device, its
formatted reads (`f"{losses.avg:.4f}"`, `"{m.avg:.3f}".format(m=losses)`) print the same, and its
other reads, which must be off the step, get the Python number back (`float(losses.avg)`, or
`torch.as_tensor(losses.avg).item()` where a fresh meter's int `0` must stay an int).
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

`total += loss.item() * x.size(0)` (a Python number weight: `x.size(0)`, `len(...)`,
`x.shape[0]`, `numel()`, a literal, a name bound only to numbers) is summed the same way, in float64.

Not covered: a tensor changed in place through another function it was passed to, a helper that
holds its own step loop and is itself called once per step, complex-valued tensors, and other
modules importing a module-level accumulator.

Where no fix is proven and the `.item()` only feeds what the step shows (`print`, a logger, a
progress bar, a writer or tracker; or a dict shown by the lines right after it), directly in a
step loop with a counter (`enumerate`, or a local int it adds 1 to) and no string spanning lines, a
display-only suggestion puts it under `if step % 100 == 0:`. It changes what the program shows (fewer lines), so `--fix` never applies
it; `--show-fixes` lists it, `--diff --suggestions` prints it, editors offer it as a code action.
"""

    node_types = (cst.Call, cst.Name)
    fix_title = "keep the value on the device and read it (`float()`/`int()`) where it is used"

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:
        state = ctx.state(self)
        if isinstance(node, cst.Name):  # where each statement runs, for the reads the proof checks
            places = state.setdefault("places", {})
            statement = ctx.current_statement()
            if id(statement) not in places:
                places[id(statement)] = ctx.placement()
            return
        if isinstance(node, cst.Call) and method_call(node) == "item" and not node.args and host_read_receiver(node, ctx):
            context = state.get("context")
            if context is None:  # one per file: the module, and what the run says about other files
                context = state["context"] = FileContext(ctx.enclosing_scopes()[-1], ctx.imported_dtype,  # type: ignore[arg-type]
                                                         ctx.imported_meter, ctx.is_imported)
            site = proof.ItemSite(node, ctx.current_statement(), ctx.current_scope(), ctx.placement(), context)
            build = lambda: item_fix.parts(site, state.get("places", {}), ctx.qualname, ctx.source_text(),  # noqa: E731
                                           state.setdefault("scopes", {}))
            ctx.report(self, node, fix=FixPlan(self.fix_title, "unsafe", build))
