"""What the SFL3xx rules share: the switch fix's doc, argument helpers, and the rules reported
at a metric's construction."""
from __future__ import annotations

from typing import Callable, List, Optional

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.metric_sites import MetricSite
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.edits import FixPlan, Replace
from syncfree_lint.fixes.metric_switch import switch_plan
from syncfree_lint.rules.base import Rule

SWITCH_TITLE = "use the `syncfree` metric"
SWITCH_DOC = """
## Fix safety
Safe: the import and the construction move to `syncfree`, whose metrics take the same
constructor arguments and compute the same values. The fix is offered only when every
construction of that class in the file uses arguments `syncfree` honours, the metric object
is not handed to other code (Lightning's `self.log(name, metric)` and `self.log_dict(metrics)` are
fine: a `syncfree` metric logs the same epoch values there), and nothing of it is
read beyond the interface both share (`metric.tp` or `metric.metric_state` keep torchmetrics). Read the results
with `syncfree.to_host(metric)`: `compute()` returns device tensors and never syncs.
"""


def replacing(node: cst.CSTNode, statement: Optional[cst.CSTNode], text: str) -> Callable[[], List[Replace]]:
    """A fix that replaces one node's text."""
    def build() -> List[Replace]:
        return [Replace(node, statement, text)]
    return build


def first_arg(node: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in node.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def is_python_number(expr: cst.BaseExpression, ctx: SemanticModel) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return True
    return ctx.kind(expr) == tensors.NUMBER


class ConstructionRule(Rule):
    """Reported at the construction, once, when the metric is used in a step."""

    node_types = (cst.Call,)
    fix_title = SWITCH_TITLE

    def applies(self, site: MetricSite) -> bool:  # pragma: no cover
        raise NotImplementedError

    def check(self, node: cst.Call, ctx: SemanticModel) -> None:
        found = ctx.metric_call(node)
        if found is None or found[1] == "compute":
            return
        site = found[0]
        targets = site.members if site.members else (site,)
        seen = ctx.state(self).setdefault("seen", set())
        for target in targets:
            if target.call is None or id(target.call) in seen or not self.applies(target):
                continue
            seen.add(id(target.call))
            ctx.report(self, target.call, fix=self.plan(ctx, target), statement=target.statement)

    def plan(self, ctx: SemanticModel, site: MetricSite) -> Optional[FixPlan]:
        return switch_plan(ctx, site)
