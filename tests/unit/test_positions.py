"""Exact positions for fix edits without generating the whole file's code.

``PositionFinder.exact`` finds a node by its one-line text inside the statement that holds it, and a
statement from where ``ast`` says it starts. Each case compares it with libcst's own
``PositionProvider`` (the slow, always-exact answer) and checks which way it took."""
from __future__ import annotations

import ast
from typing import List, Tuple

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from syncfree_lint.analysis.positions import PositionFinder

SOURCE = '''\
import torch

def step(model, batch, opt):
    loss = model(batch).mean(); aux = loss.item()
    total = 0.
    for x in batch:
        total += x.sum().item() + x.sum().item()
        é = torch.tensor([1.0], device="cuda")  # non-ASCII name before the call
    y = torch.zeros(
        3, device="cuda")
    return total + aux
'''


def _nodes(module: cst.Module) -> List[Tuple[cst.CSTNode, cst.CSTNode]]:
    """(node, its statement) for every call and every small statement, collected in source order."""
    out: List[Tuple[cst.CSTNode, cst.CSTNode]] = []

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.statements: List[cst.CSTNode] = []

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            out.append((node, node))
            for small in node.body:
                out.append((small, small))
                self.statements.append(small)

        def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            del self.statements[-len(node.body):]

        def visit_Call(self, node: cst.Call) -> None:
            holder = next((s for s in self.statements if _contains(s, node)), None)
            if holder is not None:
                out.append((node, holder))

    module.visit(Collect())
    return out


def _contains(statement: cst.CSTNode, node: cst.CSTNode) -> bool:
    return statement is node or any(_contains(child, node) for child in statement.children)


def test_every_node_gets_the_provider_position():
    module = cst.parse_module(SOURCE)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ranges = wrapper.resolve(PositionProvider)
    finder = PositionFinder(SOURCE, module, ast.parse(SOURCE))
    checked = 0
    for node, statement in _nodes(module):
        expected = ranges[node]
        got = finder.exact(node, statement)
        assert got == (expected.start.line, expected.start.column + 1, expected.end.line, expected.end.column + 1), \
            module.code_for_node(node)
        checked += 1
    assert checked > 15


@pytest.mark.parametrize("text, fast", [
    ("loss.item()", True),           # once in its statement
    ("x.sum().item()", False),       # twice in its statement: which one is not provable by text
    ('torch.tensor([1.0], device="cuda")', True),  # after a non-ASCII name: columns count characters
    ("torch.zeros(", False),         # spans lines: its text alone depends on the block's indentation
])
def test_which_nodes_avoid_generating_the_file(monkeypatch, text, fast):
    """``text``: the start of the call's code; ``fast``: found without generating the file."""
    module = cst.parse_module(SOURCE)
    finder = PositionFinder(SOURCE, module, ast.parse(SOURCE))
    generated: List[cst.CSTNode] = []
    slow = PositionFinder._provider_position

    def spy(self, node):
        generated.append(node)
        return slow(self, node)

    monkeypatch.setattr(PositionFinder, "_provider_position", spy)
    node, statement = next((n, s) for n, s in _nodes(module) if isinstance(n, cst.Call)
                              and module.code_for_node(n).startswith(text))
    finder.exact(node, statement)
    assert (not generated) == fast


def test_a_statement_that_does_not_hold_the_node_is_not_searched():
    """A node searched in the wrong statement could match an unrelated occurrence: refused."""
    source = "a = f(x)\nb = f(x) + 1\n"
    module = cst.parse_module(source)
    finder = PositionFinder(source, module, ast.parse(source))
    first = module.body[0].body[0]
    second_call = module.body[1].body[0].value.left
    assert finder.exact(second_call, first) == (2, 5, 2, 9)


def test_a_small_statement_with_a_semicolon_ends_before_it():
    source = "x = 1; y = 2\n"
    module = cst.parse_module(source)
    finder = PositionFinder(source, module, ast.parse(source))
    line = module.body[0]
    assert finder.exact(line.body[0]) == (1, 1, 1, 6)
    assert finder.exact(line.body[1]) == (1, 8, 1, 13)
    assert finder.exact(line) == (1, 1, 1, 13)
