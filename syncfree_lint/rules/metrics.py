"""SFL3xx: torchmetrics updates, computes and Lightning logging inside a step."""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.metrics import MetricSite, is_aggregator, is_classification, keyword_value
from syncfree_lint.fixes.metric_switch import escapes as _escapes
from syncfree_lint.fixes.metric_switch import switch_plan
from syncfree_lint.fixes.plan import FixPlan, Replace, code
from syncfree_lint.knowledge.metric_api import SHARED_METRIC_API
from syncfree_lint.rules.base import Rule

_UPDATE_DOC_TAIL = """
## Fix safety
Safe: the import and the construction move to `syncfree`, whose metrics take the same
constructor arguments and compute the same values. The fix is offered only when every
construction of that class in the file uses arguments `syncfree` honours, the metric object
is not handed to other code (such as Lightning's `self.log(name, metric)`), and nothing of it is
read beyond the interface both share (`metric.tp` or `metric.metric_state` keep torchmetrics). Read the results
with `syncfree.to_host(metric)`: `compute()` returns device tensors and never syncs.
"""


def _replacing(node: cst.CSTNode, statement: Optional[cst.CSTNode], text: str) -> Callable[[], List[Replace]]:
    """A fix that replaces one node's text."""
    def build() -> List[Replace]:
        return [Replace(node, statement, text)]
    return build


def metric_call(node: cst.Call, ctx) -> Optional[Tuple[MetricSite, str]]:
    """(site, "update" | "forward" | "compute") for a call on a torchmetrics object."""
    func = node.func
    site, what = None, "forward"
    if isinstance(func, cst.Attribute) and func.attr.value in ("update", "forward", "compute"):
        site, what = ctx.metric(func.value), func.attr.value
    if site is None:
        site = ctx.metric(func)
        if site is not None and isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            site = None
    if site is None or site.library != "torchmetrics":
        return None
    return site, what


def nan_checks_on(site: MetricSite) -> bool:
    """Every nan_strategy but "disable" checks values with a host read."""
    if site.call is None:
        return False
    strategy = keyword_value(site.call, "nan_strategy")
    if strategy is None and site.call.args and site.call.args[0].keyword is None:
        strategy = site.call.args[0].value
    return not (isinstance(strategy, cst.SimpleString) and strategy.evaluated_value == "disable")


def _first_arg(node: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in node.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def _weight_arg(node: cst.Call) -> Optional[cst.Arg]:
    positional = [a for a in node.args if a.keyword is None and not a.star]
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "weight":
            return arg
    return positional[1] if len(positional) > 1 else None


def _is_python_number(expr: cst.BaseExpression, ctx) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return True
    return ctx.kind(expr) == tensors.NUMBER


class AggregatorUpdate(Rule):
    code = "SFL301"
    name = "torchmetrics-aggregator-update"
    message = "torchmetrics aggregator `update` checks its input for NaN with a host read every step; use the `syncfree` metric"
    fix_title = "use the `syncfree` metric"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `update(value)` or a call (`metric(value)`) of a torchmetrics aggregator (`MeanMetric`,
`SumMetric`, `MaxMetric`, `MinMetric`, ...) inside a step.

## Why it syncs
The aggregators check their input for NaN with `if torch.isnan(x).any():`, a device-to-host
read every update. A Python scalar input also costs a blocking host-to-device copy.

## Example
```python
from torchmetrics import MeanMetric
train_loss = MeanMetric().to(device)
for x, y in loader:
    loss = step(x, y)
    train_loss.update(loss)
```

## Use instead
```python
from syncfree import MeanMetric
train_loss = MeanMetric().to(device)
for x, y in loader:
    loss = step(x, y)
    train_loss.update(loss)           # NaNs counted on device, reported by syncfree.to_host
```
""" + _UPDATE_DOC_TAIL

    def check(self, node: cst.Call, ctx) -> None:
        found = metric_call(node, ctx)
        if found is None or found[1] == "compute" or not is_aggregator(found[0].class_name):
            return
        site = found[0]
        if not nan_checks_on(site):
            return  # nan_strategy="disable": no host read (a Python value is SFL303's)
        ctx.report(self, node, f"torchmetrics `{site.class_name}` {found[1]} checks its input for NaN with a host read every step; use `syncfree.{site.class_name}`", fix=switch_plan(ctx, site))


class PythonWeight(Rule):
    code = "SFL302"
    name = "python-number-weight"
    message = "a Python-number `weight` is copied to the device on every update; pass a tensor weight"
    fix_title = "pass `torch.full_like(value, weight)`"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags an aggregator update with a Python number as the weight (`update(v, weight=1.0)`) inside
a step.

## Why it syncs
torchmetrics turns the number into a tensor on the metric's device with `torch.as_tensor(...,
device=...)`, a blocking host-to-device copy, then broadcasts it.

## Example
```python
mean_loss.update(loss, weight=1.0)
```

## Use instead
```python
mean_loss.update(loss, weight=torch.full_like(loss, 1.0))
```

## Fix safety
Safe: the weight has the same value and the shape torchmetrics broadcasts it to.
"""

    def check(self, node: cst.Call, ctx) -> None:
        found = metric_call(node, ctx)
        if found is None or found[1] != "update" or not is_aggregator(found[0].class_name):
            return
        weight = _weight_arg(node)
        value = _first_arg(node)
        if weight is None or value is None or not _is_python_number(weight.value, ctx):
            return
        fix = None
        if ctx.is_tensor(value) and ctx.imports.imported("torch"):
            torch_name = next((k for k, v in ctx.imports.aliases.items() if v == "torch"), "torch")
            replacement = f"{torch_name}.full_like({code(value)}, {code(weight.value)})"
            fix = FixPlan(self.fix_title, "safe", _replacing(weight.value, ctx.statement, replacement))
        ctx.report(self, weight.value, fix=fix)


class PythonScalarValue(Rule):
    code = "SFL303"
    name = "python-scalar-metric-value"
    message = "a Python number passed to a metric is copied to the device on every update; pass `torch.as_tensor(value)`"
    fix_title = "wrap the value in `torch.as_tensor(...)`"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags a metric update (or call) whose value is a Python number inside a step: a literal, a
`float(...)`, the result of `.item()`, or `time.perf_counter()` arithmetic.

## Why it syncs
torchmetrics builds a tensor on the metric's device from the number (`torch.as_tensor(x,
device=...)`), a blocking host-to-device copy every update. A CPU 0-d tensor reaches a GPU kernel
as a kernel argument instead, with no copy.

## Example
```python
step_time.update(time.perf_counter() - t0)
```

## Use instead
```python
step_time.update(torch.as_tensor(time.perf_counter() - t0))
```

## Fix safety
Safe: the same number, as a CPU 0-d tensor.
"""

    def check(self, node: cst.Call, ctx) -> None:
        found = metric_call(node, ctx)
        if found is None or found[1] == "compute":
            return
        value = _first_arg(node)
        if value is None or not _is_python_number(value, ctx):
            return
        fix = None
        torch_name = next((k for k, v in ctx.imports.aliases.items() if v == "torch"), None)
        if torch_name is not None:
            replacement = f"{torch_name}.as_tensor({code(value)})"
            fix = FixPlan(self.fix_title, "safe", _replacing(value, ctx.statement, replacement))
        ctx.report(self, value, fix=fix)


class _ConstructionRule(Rule):
    """Reported at the construction, once, when the metric is used in a step."""

    node_types = (cst.Call,)

    def applies(self, site: MetricSite) -> bool:  # pragma: no cover
        raise NotImplementedError

    def check(self, node: cst.Call, ctx) -> None:
        found = metric_call(node, ctx)
        if found is None or found[1] == "compute":
            return
        site = found[0]
        targets = site.members if site.members else (site,)
        seen = ctx.state(self).setdefault("seen", set())
        for target in targets:
            if target.call is None or id(target.call) in seen or not self.applies(target):
                continue
            seen.add(id(target.call))
            ctx.report(self, target.call, self.describe(target), fix=self.plan(ctx, target), statement=target.statement)

    def describe(self, site: MetricSite) -> str:
        return self.message

    def plan(self, ctx, site: MetricSite) -> Optional[FixPlan]:
        return switch_plan(ctx, site)


class NanCheckedAggregator(_ConstructionRule):
    code = "SFL304"
    name = "nan-checked-aggregator"
    message = "aggregator built with NaN checks on (torchmetrics' default `nan_strategy`) and updated in a step: a host read per update"
    fix_title = "use the `syncfree` metric"
    doc = """
## What it does
Flags the construction of a torchmetrics aggregator whose `nan_strategy` checks values (the
default `"warn"`, or `"error"`, `"ignore"`, a float) when the metric is updated in a step.

## Why it syncs
Every `update` runs `torch.isnan(x).any()` and branches on it in Python: a device-to-host read.

## Example
```python
loss_metric = MeanMetric()                 # nan_strategy="warn"
for x, y in loader:
    loss_metric.update(step(x, y))
```

## Use instead
```python
from syncfree import MeanMetric            # NaNs counted on device
loss_metric = MeanMetric()
```
or `MeanMetric(nan_strategy="disable")` when NaNs cannot occur.
""" + _UPDATE_DOC_TAIL

    def applies(self, site: MetricSite) -> bool:
        return is_aggregator(site.class_name) and nan_checks_on(site)


class ValidatingClassifier(_ConstructionRule):
    code = "SFL305"
    name = "validating-classification-metric"
    message = "classification metric built with `validate_args=True` (the default) and updated in a step: `torch.unique` syncs every update"
    fix_title = "use the `syncfree` metric"
    doc = """
## What it does
Flags the construction of a torchmetrics classification metric (`Accuracy`, `Precision`,
`Recall`, `F1Score`, `ConfusionMatrix`, their `Binary*`/`Multiclass*` forms, ...) that leaves
`validate_args` at its default `True`, when it is updated in a step.

## Why it syncs
Input validation calls `torch.unique` on the targets and checks the values in Python: a
data-dependent shape and a host read every update.

## Example
```python
acc = MulticlassAccuracy(num_classes=10)
for x, y in loader:
    acc.update(model(x), y)
```

## Use instead
```python
from syncfree import MulticlassAccuracy     # labels checked on device, reported by to_host
acc = MulticlassAccuracy(num_classes=10)
```
`validate_args=False` removes the validation's `torch.unique`, and the checks with it (an
unsafe change); torchmetrics' multiclass update still counts with `torch.bincount`, whose output
size depends on the data, so only the `syncfree` metric removes every per-update sync.
""" + _UPDATE_DOC_TAIL

    def applies(self, site: MetricSite) -> bool:
        if not is_classification(site.class_name):
            return False
        if site.call is None:
            return False  # a dict of metrics: its members are sites of their own
        value = keyword_value(site.call, "validate_args")
        return value is None or (isinstance(value, cst.Name) and value.value == "True")


class ComputeInStep(Rule):
    code = "SFL306"
    name = "metric-compute-in-step"
    message = "`metric.compute()` in a step reads and syncs the metric every step; compute at log intervals or after the epoch"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `metric.compute()` on a torchmetrics object inside a step, not under an interval guard.

## Why it syncs
`compute()` synchronizes the states across processes (an `all_reduce` per state) and usually
runs checks and host-side branches. Every step, that serializes the ranks.

## Example
```python
for step, (x, y) in enumerate(loader):
    acc.update(model(x), y)
    print(acc.compute())
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    acc.update(model(x), y)
    if step % 100 == 0:
        print(acc.compute())
```

## Fix safety
No automatic fix: the interval is the user's choice.
"""

    def check(self, node: cst.Call, ctx) -> None:
        found = metric_call(node, ctx)
        if found is not None and found[1] == "compute":
            ctx.report(self, node)


class CpuMetricUnderNccl(Rule):
    code = "SFL307"
    name = "cpu-metric-under-nccl"
    message = "metric stays on the CPU in a script that uses NCCL or DDP: its sync fails with \"No backend type associated with device type cpu\""
    fix_title = "use the `syncfree` metric"
    node_types = (cst.Call,)
    step_only = False
    doc = """
## What it does
Flags a torchmetrics object that is never moved with `.to(device)` (and is not a submodule of a
model that is moved) in a file that initialises a NCCL process group or wraps the model in
`DistributedDataParallel`.

## Why it fails
Its states stay on the CPU, and NCCL cannot reduce CPU tensors: the first sync raises
"No backend type associated with device type cpu".

## Example
```python
dist.init_process_group("nccl")
acc = MulticlassAccuracy(num_classes=10)    # never moved
```

## Use instead
```python
acc = MulticlassAccuracy(num_classes=10).to(device)
```
or a `syncfree` metric, which stages CPU states through the device under NCCL.
""" + _UPDATE_DOC_TAIL

    def check(self, node: cst.Call, ctx) -> None:
        if not isinstance(node.func, (cst.Name, cst.Attribute)):
            return
        qual = ctx.qualname(node.func) or ""
        state = ctx.state(self)
        if qual.endswith("init_process_group"):
            backend = keyword_value(node, "backend") or _first_arg(node)
            if backend is None or (isinstance(backend, cst.SimpleString) and "nccl" in backend.value):
                state["nccl"] = True
        elif qual.endswith("DistributedDataParallel"):
            state["nccl"] = True

    def finish(self, ctx) -> None:
        if not ctx.state(self).get("nccl"):
            return
        for site in ctx.all_metric_sites:
            if site.call is not None and not site.moved and site.library == "torchmetrics" \
                    and site.class_name != "MetricCollection":
                ctx.report(self, site.call, fix=switch_plan(ctx, site), statement=site.statement)


class LightningSyncDistOnStep(Rule):
    code = "SFL308"
    name = "sync-dist-on-step"
    message = "`self.log(..., sync_dist=True)` in `training_step` all-reduces and syncs every step (it logs on_step by default); log with `on_step=False` or without `sync_dist`"
    node_types = (cst.Call,)
    doc = """
## What it does
Flags `self.log(..., sync_dist=True)` (and `self.log_dict`) in a LightningModule's
`training_step`, unless `on_step=False` is passed.

## Why it syncs
In `training_step`, Lightning logs on every step by default. With `sync_dist=True` each log
call runs an `all_reduce` and reads the value on the host, every step and on every rank.

## Example
```python
def training_step(self, batch, batch_idx):
    loss = self.compute_loss(batch)
    self.log("train_loss", loss, sync_dist=True)
    return loss
```

## Use instead
```python
    self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
```

## Fix safety
No automatic fix: step-level curves change into epoch-level ones.
"""

    def check(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("log", "log_dict")
                and isinstance(func.value, cst.Name) and func.value.value == "self"):
            return
        if ctx.function is None or ctx.function.name != "training_step":
            return
        sync = keyword_value(node, "sync_dist")
        on_step = keyword_value(node, "on_step")
        if sync is None or not (isinstance(sync, cst.Name) and sync.value == "True"):
            return
        if isinstance(on_step, cst.Name) and on_step.value == "False":
            return
        ctx.report(self, node)


class _EscapeTracker(Rule):
    """Not a rule users see: records metric objects handed to other code (fix safety)."""

    code = "SFL3-escape"
    name = "metric-escape-tracker"
    message = ""
    doc = ""
    node_types = (cst.Call, cst.Attribute)
    step_only = False

    def check(self, node: cst.CSTNode, ctx) -> None:
        if isinstance(node, cst.Attribute):  # metric.tp, metric.metric_state: torchmetrics internals
            site = ctx.metric(node.value)
            if site is not None and node.attr.value not in SHARED_METRIC_API:
                _escapes(ctx).add(site.name)
            return
        assert isinstance(node, cst.Call)
        for arg in node.args:
            site = ctx.metric(arg.value)
            if site is not None and metric_call(node, ctx) is None:
                _escapes(ctx).add(site.name)


RULES = (AggregatorUpdate, PythonWeight, PythonScalarValue, NanCheckedAggregator, ValidatingClassifier,
         ComputeInStep, CpuMetricUnderNccl, LightningSyncDistOnStep)
TRACKERS = (_EscapeTracker,)
