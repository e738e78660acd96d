"""SFL111: a library call that waits for the device inside, in a step."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.analysis.call_args import keyword_value, positional
from syncfree_lint.knowledge.syncing_api import (
    MULTINOMIAL_FUNCTIONS, MULTINOMIAL_WHY, NONFINITE_CHECKED_FUNCTIONS, NONFINITE_CHECKED_WHY, READING_FUNCTIONS,
    READING_METHODS, SCALER_ONLY_METHODS, SYNCING_ARGUMENT_METHODS, SYNCING_FUNCTIONS, SYNCING_METHODS,
    VALIDATING_DISTRIBUTION_WHY,
    VALIDATION_OFF_SWITCH, validating_distribution,
)
from syncfree_lint.rules.base import Rule, method_call, receiver


class SyncingCall(Rule[cst.Call]):
    code = "SFL111"
    name = "syncing-call-in-step"
    messages = {
        "default": "`{call}` in a step waits for the GPU: it {why}; call it at log intervals or once per epoch",
    }
    evidence = ("barrier", "_object", "get_scale", "GradScaler", "equal", "allclose", "is_nonzero", "assert_close", "LBFGS",
                "multinomial", "error_if_nonfinite", "distributions", "ReduceLROnPlateau")
    node_types = (cst.Call,)
    invalid = (
        """
        import torch.distributed as dist
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x).mean().backward()
                optimizer.step()
                dist.barrier()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            scaler = torch.cuda.amp.GradScaler()
            for x, y in loader:
                scaler.scale(model(x).mean()).backward()
                scaler.step(optimizer)
                scaler.update()
                print(scaler.get_scale())
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                probs = model(x).softmax(-1)
                picked = torch.multinomial(probs, 1)
                probs.gather(1, picked).log().mean().backward()
                optimizer.step()
        """,
        """
        import torch
        from torch.distributions import Normal
        def train(policy, loader, optimizer):
            for obs, act in loader:
                mean, log_std = policy(obs)
                dist = Normal(mean, log_std.exp())
                (-dist.log_prob(act).sum(-1).mean()).backward()
                optimizer.step()
        """,
    )
    valid = (
        """
        import torch
        from torch.distributions import Normal
        def train(policy, loader, optimizer):
            for obs, act in loader:
                mean, log_std = policy(obs)
                dist = Normal(mean, log_std.exp(), validate_args=False)
                (-dist.log_prob(act).sum(-1).mean()).backward()
                optimizer.step()
        """,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                probs = model(x).softmax(-1)
                picked = torch.multinomial(probs, 2, replacement=True)[:, :1]
                probs.gather(1, picked).log().mean().backward()
                optimizer.step()
        """,
        """
        import torch.distributed as dist
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x).mean().backward()
                optimizer.step()
            dist.barrier()
        """,
        """
        import torch
        def train(model, loader, optimizer, log_every=100):
            scaler = torch.cuda.amp.GradScaler()
            for step, (x, y) in enumerate(loader):
                scaler.scale(model(x).mean()).backward()
                scaler.step(optimizer)
                scaler.update()
                if step % log_every == 0:
                    print(scaler.get_scale())
        """,
    )
    doc = """
## What it does
Flags library calls that wait for the device inside, though nothing at the call reads a tensor:
`torch.distributed.barrier()`, the object collectives (`all_gather_object`,
`broadcast_object_list`, ...), and a `GradScaler`'s `get_scale()` and `state_dict()` (the
receiver built as `GradScaler()`, or any receiver not known to be something else for
`get_scale`, a method only loss scalers have); `torch.optim.LBFGS.step(closure)`;
`ReduceLROnPlateau.step(value)` of a device tensor (it compares `float(value)` with the best so far); and the comparisons that answer with a Python
bool (`torch.equal`, `torch.allclose`, `torch.is_nonzero`, `torch.testing.assert_close` and the
`.equal()` / `.allclose()` / `.is_nonzero()` methods) when a device tensor is compared; a `torch.distributions`
distribution (`Normal`, `Categorical`, ...) built from device tensors with argument validation on (no
`validate_args=False`, and no `Distribution.set_default_validate_args(False)` in the file); and two calls that wait only
with some arguments: `torch.multinomial` (or `.multinomial()`) of device probabilities drawing one sample or drawing
without replacement (the default), and `clip_grad_norm_(..., error_if_nonfinite=True)`. The calls are listed in
`knowledge/syncing_api.py`.

## Why it syncs
`barrier()` blocks the host until every rank reaches it; under NCCL it also waits for the work
queued on the device. The object collectives pickle their objects through host memory, reading
back any tensor they hold. `torch.equal(a, b)` compares on the device, then copies the one-bool
answer to the host. `GradScaler.get_scale()` returns a Python float: it calls `.item()` on
the scale tensor; `state_dict()` does the same for the scale and the growth tracker.
`LBFGS.step` runs the closure up to `max_iter` times and converts the loss and the gradient
norms to Python numbers to decide when to stop. `torch.multinomial` validates the probabilities
(finite, non-negative, a positive sum) with `.item()` reads before its one-sample and
without-replacement paths; Gumbel-max sampling on the device
(`(logits - torch.empty_like(logits).exponential_().log()).argmax(-1)`) draws the same
distribution without them. A distribution built with validation on (the default unless Python runs with `-O`)
tests each parameter against its constraint (`scale > 0`, `probs` on the simplex) and raises if any element fails:
`if not torch._is_all_true(valid)` reads the answer back; `validate_args=False`, or
`torch.distributions.Distribution.set_default_validate_args(False)` at start-up, skips the check (invalid values then
give NaN instead of an error). `error_if_nonfinite=True` makes `clip_grad_norm_` test the total norm on the host.

## Example
```python
for x, y in loader:
    scaler.scale(loss_fn(model(x), y)).backward()
    scaler.step(optimizer)
    scaler.update()
    scale_meter.update(scaler.get_scale())
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    ...
    scaler.update()
    if step % log_every == 0:
        scale_meter.update(scaler.get_scale())   # or keep scaler._scale on device
```
Drop a per-step `barrier()`: collectives already order the ranks.

## Fix safety
No automatic fix.
"""

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        qual = ctx.qualname(node.func) or ""
        if qual in SYNCING_FUNCTIONS:
            ctx.report(self, node, call=qual.rsplit(".", 1)[-1] + "()", why=SYNCING_FUNCTIONS[qual])
            return
        if qual in NONFINITE_CHECKED_FUNCTIONS:
            flag = keyword_value(node, "error_if_nonfinite") or positional(node, 3)
            if isinstance(flag, cst.Name) and flag.value == "True":
                ctx.report(self, node, call=qual.rsplit(".", 1)[-1] + "()", why=NONFINITE_CHECKED_WHY)
            return
        if qual in MULTINOMIAL_FUNCTIONS or method_call(node) == "multinomial":
            if _multinomial_checks(node, ctx, qual in MULTINOMIAL_FUNCTIONS):
                ctx.report(self, node, call="multinomial()", why=MULTINOMIAL_WHY)
            return
        if validating_distribution(qual):
            if _validates(node, ctx):
                ctx.report(self, node, call=qual.rsplit(".", 1)[-1] + "()", why=VALIDATING_DISTRIBUTION_WHY)
            return
        if qual in READING_FUNCTIONS:
            if any(ctx.kind(arg.value) in tensors.DEVICE_TENSORS for arg in node.args):
                ctx.report(self, node, call=qual.rsplit(".", 1)[-1] + "()", why=READING_FUNCTIONS[qual])
            return
        called = ctx.instance_class(node.func)  # `self.crit(out, y)` of a library module that syncs in `forward`
        if called is not None and not called.local and "__call__" in SYNCING_METHODS.get(called.name, {}):
            ctx.report(self, node, call=f"{called.name.rsplit('.', 1)[-1]}()", why=SYNCING_METHODS[called.name]["__call__"])
            return
        method = method_call(node)
        if not method:
            return
        if method in READING_METHODS:
            if ctx.kind(receiver(node)) in tensors.DEVICE_TENSORS:
                ctx.report(self, node, call=f".{method}()", why=READING_METHODS[method])
            return
        cls = ctx.instance_class(receiver(node))
        if cls is not None and not cls.local:
            why = SYNCING_METHODS.get(cls.name, {}).get(method)
            if why is not None:
                ctx.report(self, node, call=f".{method}()", why=why)
            read = SYNCING_ARGUMENT_METHODS.get(cls.name, {}).get(method)
            value = positional(node, read[0]) if read is not None else None
            if read is not None and value is not None and ctx.kind(value) in tensors.DEVICE_TENSORS:
                ctx.report(self, node, call=f".{method}()", why=read[1])
            return
        if cls is None and method in SCALER_ONLY_METHODS and not node.args \
                and not tensors.not_device(ctx.kind(receiver(node))):
            ctx.report(self, node, call=f".{method}()", why=SCALER_ONLY_METHODS[method])


def _multinomial_checks(node: cst.Call, ctx: SemanticModel, function: bool) -> bool:
    """``torch.multinomial(probs, n, replacement)`` (or ``probs.multinomial(n, replacement)``) of device
    probabilities, drawing one sample or without replacement (the default)."""
    first = 1 if function else 0
    probs = positional(node, 0) if function else receiver(node)
    samples = keyword_value(node, "num_samples") or positional(node, first)
    replacement = keyword_value(node, "replacement") or positional(node, first + 1)
    if probs is None or ctx.kind(probs) not in tensors.DEVICE_TENSORS:
        return False
    one = isinstance(samples, cst.Integer) and samples.value == "1"
    return one or replacement is None or (isinstance(replacement, cst.Name) and replacement.value == "False")


def _validates(node: cst.Call, ctx: SemanticModel) -> bool:
    """A distribution built from a device tensor with argument validation left on: no ``validate_args`` (or
    ``validate_args=True``), and the file does not turn validation off for the program."""
    flag = keyword_value(node, "validate_args")
    if flag is not None and not (isinstance(flag, cst.Name) and flag.value == "True"):
        return False
    if VALIDATION_OFF_SWITCH in ctx.source_text().replace(" ", ""):
        return False
    return any(ctx.kind(arg.value) in tensors.DEVICE_TENSORS for arg in node.args if arg.keyword is None
               or arg.keyword.value != "validate_args")
