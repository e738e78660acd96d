"""Reading a call's arguments as written: a keyword's value, the n-th positional one."""
from __future__ import annotations

from typing import Optional

import libcst as cst


def keyword_value(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    """The value of the keyword argument ``name=`` of ``call``, or None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    count = 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            if count == index:
                return arg.value
            count += 1
    return None


def is_true(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"
