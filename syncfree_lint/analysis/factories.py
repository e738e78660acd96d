"""Factories: functions that return the functions they define.

``def make_hook(name): def hook(module, inputs, out): ...; return hook`` returns ``hook``; ``def make_phases(...):
def sample(out): ...; def update(out): ...; return {"sample": sample, "update": update}`` returns a table of them.
A call of the factory stands for what it returns (``analysis.calls.function_value``, ``analysis.objects``).
"""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst


def returned_nested_function(node: cst.CSTNode) -> Optional[str]:
    """The name of the function a factory returns: ``def make_hook(...): def hook(...): ...;
    return hook`` (every ``return`` of its own body names the same function defined in it)."""
    if not isinstance(node, cst.FunctionDef) or not isinstance(node.body, cst.IndentedBlock):
        return None
    nested = {statement.name.value for statement in node.body.body if isinstance(statement, cst.FunctionDef)}
    returned = {small.value.value for statement in node.body.body if isinstance(statement, cst.SimpleStatementLine)
                for small in statement.body if isinstance(small, cst.Return) and isinstance(small.value, cst.Name)}
    return returned.pop() if len(returned) == 1 and returned <= nested else None


def returned_function_table(node: cst.CSTNode) -> Tuple[str, ...]:
    """The functions a factory returns in a display: ``def make_phases(...): def sample(out): ...; ...; return
    {"sample": sample, "update": update}`` (its one ``return`` of a dict, list or tuple of functions defined in it)."""
    if not isinstance(node, cst.FunctionDef) or not isinstance(node.body, cst.IndentedBlock):
        return ()
    nested = {statement.name.value for statement in node.body.body if isinstance(statement, cst.FunctionDef)}
    returns = [small.value for statement in node.body.body if isinstance(statement, cst.SimpleStatementLine)
               for small in statement.body if isinstance(small, cst.Return) and small.value is not None]
    if len(returns) != 1:
        return ()
    shown = returns[0]
    values = [e.value for e in shown.elements if isinstance(e, cst.DictElement)] if isinstance(shown, cst.Dict) else \
        [e.value for e in shown.elements if isinstance(e, cst.Element)] if isinstance(shown, (cst.List, cst.Tuple)) else []
    names = tuple(v.value for v in values if isinstance(v, cst.Name) and v.value in nested)
    return names if names and len(names) == len(values) else ()
