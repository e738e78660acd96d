"""The rule catalog: one module per family, gathered here in code order."""
from __future__ import annotations

from typing import Dict, List, Type

from syncfree_lint.rules import dist, host_reads, metrics, shapes, sinks, tool, transfers
from syncfree_lint.rules.base import Rule

ALL_RULES: List[Type[Rule]] = sorted(
    [*tool.RULES, *host_reads.RULES, *sinks.RULES, *shapes.RULES, *metrics.RULES, *transfers.RULES, *dist.RULES],
    key=lambda rule: rule.code,
)
BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
DEFAULTS: Dict[str, bool] = {rule.code: rule.default_enabled for rule in ALL_RULES}
#: helpers that always run (they feed fix safety, they report nothing)
TRACKERS = metrics.TRACKERS
