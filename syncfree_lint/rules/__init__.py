"""The rule catalog. Each rule registers itself when its class is defined (``Rule.__init_subclass__``);
importing the family packages once here defines them all."""
from __future__ import annotations

from typing import Dict, List, Type

from syncfree_lint.rules import dist, host_reads, shapes, sinks, tool, torchmetrics, transfers
from syncfree_lint.rules.base import REGISTRY, Rule

FAMILIES = (tool, host_reads, sinks, shapes, torchmetrics, transfers, dist)
ALL_RULES: List[Type[Rule]] = sorted(REGISTRY.values(), key=lambda rule: rule.code)
BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
DEFAULTS: Dict[str, bool] = {rule.code: rule.default_enabled for rule in ALL_RULES}
