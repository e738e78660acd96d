"""SFL101's display-only suggestion: a value shown every step is shown every N steps instead.

Offered where the proof declines a fix because the ``.item()`` sits in a statement that only
shows values (``print``, a logger, a progress bar, a writer or tracker: ``knowledge/sinks.py``),
directly in the body of a step loop that counts its steps (``enumerate``, or a local int the loop
adds 1 to, ``global_step += 1``); or in
a dict built only to be shown by the lines right after it (``logs = {"loss": loss.item()}``,
``progress_bar.set_postfix(**logs)``, ``accelerator.log(logs, step=step)``), which then go under
the guard together:

    for step, (x, y) in enumerate(loader):          for step, (x, y) in enumerate(loader):
        ...                                  ->          ...
        print(f"loss {loss.item():.4f}")                 if step % 100 == 0:
                                                             print(f"loss {loss.item():.4f}")

The sync then runs on one step in N. What the program shows changes (fewer lines, and a later
value than an average would give), so it is a suggestion: shown by ``--show-fixes``, ``--diff
--suggestions`` and editors, never applied by ``--fix``. N is ``SUGGESTED_INTERVAL``; the
suggestion's title asks the reader to choose it.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from syncfree_lint.edits import Guard, code
from syncfree_lint.fixes.host_read_proof import ItemSite
from syncfree_lint.analysis.scope_index import BINDERS, ScopeIndex
from syncfree_lint.knowledge.sinks import DISPLAY_FUNCTIONS, DISPLAY_METHODS, SUGGESTED_INTERVAL


def suggest(site: ItemSite, cache: Dict[int, ScopeIndex]) -> Optional[Tuple[str, List[Guard]]]:
    """(title, the guard to add) for ``site``, or None where the shape is not one of those above;
    ``cache``: the scope indexes the rule's other fixes share."""
    index = cache.get(id(site.scope))
    if index is None:
        index = cache[id(site.scope)] = ScopeIndex(site.scope)
    loops = site.placement.loops
    if not loops or not loops[-1].is_step or not isinstance(loops[-1].node, (cst.For, cst.While)):
        return None
    loop = loops[-1].node
    counter = (_enumerate_counter(loop) if isinstance(loop, cst.For) else None) or _step_counter(loop, index)
    if counter is None or not isinstance(loop.body, cst.IndentedBlock):
        return None
    lines: List[cst.CSTNode] = list(loop.body.body)
    first = next((i for i, s in enumerate(lines) if _one_statement(s) is site.statement), None)
    if first is None or site.statement is None or _multi_line(site.statement):
        return None
    block: List[cst.CSTNode]
    if _only_displays(site.statement):
        block = [lines[first]]
    else:
        block = _shown_dict(site.statement, lines[first + 1:], index)
        if not block:
            return None
        block = [lines[first]] + block
    test = f"{counter} % {SUGGESTED_INTERVAL} == 0"
    title = f"show it every {SUGGESTED_INTERVAL} steps (`if {test}:`; choose the interval): fewer lines shown"
    return title, [Guard(block[0], test)] + [Guard(line) for line in block[1:]]


def _one_statement(line: cst.CSTNode) -> Optional[cst.CSTNode]:
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line.body[0]
    return None


def _multi_line(statement: cst.CSTNode) -> bool:
    """A statement the guard cannot move one level deeper: one with a string spanning lines (its
    continuation lines are the string's text). Other continuation lines are indented with it."""
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.SimpleString, cst.FormattedString)) and "\n" in code(node):
            return True
        stack.extend(node.children)
    return False


def _shown_dict(statement: cst.CSTNode, rest: Sequence[cst.CSTNode], index: ScopeIndex) -> List[cst.CSTNode]:
    """The lines right after ``name = {...}`` that show ``name``, when nothing else in the function
    uses it; else []."""
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name) and isinstance(statement.value, cst.Dict)):
        return []
    name = statement.targets[0].target.value
    shown: List[cst.CSTNode] = []
    for line in rest:
        inner = _one_statement(line)
        if inner is None or not _only_displays(inner) or _multi_line(inner) or not _mentions(inner, name):
            break
        shown.append(line)
    if not shown:
        return []
    inside = {id(n) for line in shown for n in _names(line, name)} | {id(statement.targets[0].target)}
    uses = index.occurrences(name)
    return shown if all(id(node) in inside for node, _ in uses) else []


def _names(node: cst.CSTNode, name: str) -> List[cst.Name]:
    found: List[cst.Name] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name) and current.value == name:
            found.append(current)
        stack.extend(current.children)
    return found


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return bool(_names(node, name))


def _only_displays(statement: Optional[cst.CSTNode]) -> bool:
    """``print(...)``, ``logger.info(...)``, ``pbar.set_postfix(...)``, ``writer.add_scalar(...)``."""
    if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
        return False
    func = statement.value.func
    if isinstance(func, cst.Name):
        return func.value in DISPLAY_FUNCTIONS
    return isinstance(func, cst.Attribute) and func.attr.value in DISPLAY_METHODS


def _step_counter(loop: cst.BaseCompoundStatement, index: ScopeIndex) -> Optional[str]:
    """A local int the loop counts with, ``global_step += 1`` in its body (not in a nested loop or
    function): every binding of the name in the function is an int literal or ``+=`` of one."""
    stack: List[cst.CSTNode] = list(loop.body.children)
    found: List[str] = []
    while stack:
        node = stack.pop(0)
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) \
                and isinstance(node.target, cst.Name) and isinstance(node.value, cst.Integer):
            found.append(node.target.value)
        stack.extend(node.children)
    for name in found:
        if name in index.params:
            continue
        bindings = [index.stores.get(id(node)) for node, nested in index.occurrences(name)
                    if not nested and id(node) in index.stores]
        others = [node for node, _ in index.occurrences(name) if isinstance(index.parent.get(id(node)), BINDERS)]
        if bindings and not others and all(_int_binding(b) for b in bindings):
            return name
    return None


def _int_binding(statement: Optional[cst.CSTNode]) -> bool:
    if isinstance(statement, cst.Assign):
        return len(statement.targets) == 1 and isinstance(statement.value, cst.Integer)
    return isinstance(statement, cst.AugAssign) and isinstance(statement.operator, cst.AddAssign) \
        and isinstance(statement.value, cst.Integer)


def _enumerate_counter(loop: cst.For) -> Optional[str]:
    """``step`` in ``for step, batch in enumerate(...)``."""
    it, target = loop.iter, loop.target
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate"):
        return None
    if isinstance(target, (cst.Tuple, cst.List)) and target.elements and isinstance(target.elements[0].value, cst.Name):
        name = target.elements[0].value.value
        return None if name == "_" else name
    return None
