"""What the SFL1xx rules share."""
from __future__ import annotations

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.rules.base import receiver


def host_read_receiver(node: cst.Call, ctx: SemanticModel) -> bool:
    """A receiver that may be a device tensor: not numpy, a number, a host tensor or a module."""
    return ctx.maybe_tensor(receiver(node))
