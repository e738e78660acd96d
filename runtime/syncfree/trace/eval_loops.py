"""Evaluation loops, read from the source: loops that run per evaluation step, not per optimizer step.

A loop is an evaluation loop when its body trains nothing (no ``.backward()`` and no ``.step()``
call) and it runs without gradients or for evaluation: inside ``with torch.no_grad()`` /
``torch.inference_mode()``, in a function decorated with either, or in a function whose name says
so (``evaluate``, ``validate``, ``test_epoch``, ``predict``).  (A function that calls ``.eval()``
is not enough: ``main()`` often trains, then evaluates.)  The trace's steps are optimizer steps, so the syncs of such a loop come in bursts
between two steps and their rate per step says little about them.
"""

from __future__ import annotations

import ast
import functools
from typing import Union

EVAL_WORDS = ("eval", "valid", "test", "infer", "predict")
NO_GRAD = ("no_grad", "inference_mode")
TRAINING_METHODS = ("backward", "step")

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def _called_name(node: ast.AST) -> str:
    """The last name of a call's function or of a decorator (``torch.no_grad()`` -> ``no_grad``)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _calls(node: ast.AST, names: tuple[str, ...]) -> bool:
    return any(isinstance(n, ast.Call) and _called_name(n) in names for n in ast.walk(node))


def _evaluating_function(fn: Function) -> bool:
    name = fn.name.lower()
    return any(word in name for word in EVAL_WORDS) or any(_called_name(d) in NO_GRAD for d in fn.decorator_list)


def _find(node: ast.AST, evaluating: bool, found: set[int]) -> None:
    for child in ast.iter_child_nodes(node):
        inside = evaluating
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside = _evaluating_function(child)
        elif isinstance(child, (ast.With, ast.AsyncWith)):
            inside = evaluating or any(_called_name(item.context_expr) in NO_GRAD for item in child.items)
        elif isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
            if evaluating and not _calls(child, TRAINING_METHODS):
                found.add(child.lineno)
        _find(child, inside, found)


@functools.lru_cache(maxsize=256)
def eval_loop_lines(path: str) -> frozenset[int]:
    """The header lines of the evaluation loops in the file at ``path`` (none when unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    found: set[int] = set()
    _find(tree, False, found)
    return frozenset(found)
