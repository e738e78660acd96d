"""SFL0xx: codes the tool itself reports."""
from syncfree_lint.rules.tool import internal_error, parse_error

__all__ = ["internal_error", "parse_error"]
