"""Evaluation loops: a loop that runs a model on its items with gradients off is a step loop.

``for batch in eval_dl: outputs = model(**batch)`` under ``torch.no_grad()`` (a ``with`` block or
a decorator of the function) evaluates one batch per iteration, whatever the iterable is called:
a sync in its body is paid once per evaluation step. The loop counts when a call in its body
(not in a nested function) runs something named or known as a model on an input built from the
loop's items (its first positional argument, or ``**batch``: a sampler's ``unet(latents, t)``
iterates a schedule, not data). Loops over ``range(...)`` are not counted (a per-token or per-step loop of a
sampler run once is not an evaluation over data).
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Set

import libcst as cst

from syncfree_lint.analysis.nodes import code_children
from syncfree_lint.knowledge.frequency import NO_GRAD_CONTEXTS

QualName = Callable[[cst.BaseExpression], Optional[str]]


def turns_grad_off(expr: cst.BaseExpression, qualname: QualName) -> bool:
    """``torch.no_grad()``, ``torch.inference_mode()`` (called or not, as a decorator or a context)."""
    func = expr.func if isinstance(expr, cst.Call) else expr
    return isinstance(func, (cst.Name, cst.Attribute)) and qualname(func) in NO_GRAD_CONTEXTS


def decorated_grad_off(node: cst.FunctionDef, qualname: QualName) -> bool:
    return any(turns_grad_off(decorator.decorator, qualname) for decorator in node.decorators)


def over_range(iterable: cst.BaseExpression) -> bool:
    """``range(n)``, ``enumerate(range(n))``, ``tqdm(range(n))``: counting, not data; nor a list
    written out (``for model, scope in [(model, "val"), (ema, "val_ema")]``: a pass per model)."""
    while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
        if iterable.func.value == "range":
            return True
        if not iterable.args:
            return False
        iterable = iterable.args[0].value
    return isinstance(iterable, (cst.List, cst.Tuple))


def evaluates_items(body: cst.CSTNode, names: Set[str], is_model: Callable[[cst.BaseExpression], bool]) -> bool:
    """Does a call in ``body`` run a model on the loop's items (``model(x)``, ``model(**batch)``,
    ``self.net(batch["image"].cuda())``)?"""
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call) and is_model(node.func) and _uses(_inputs(node.args), names):
            return True
        stack.extend(code_children(node))
    return False


def _inputs(args: Sequence[cst.Arg]) -> List[cst.Arg]:
    """The arguments that carry a model's input: the first positional one, and ``**batch``
    (a sampler's ``unet(latents, t)`` passes the loop's timestep second: not data)."""
    positional = [arg for arg in args if arg.keyword is None and arg.star == ""]
    return positional[:1] + [arg for arg in args if arg.star == "**"]


def _uses(args: Sequence[cst.Arg], names: Set[str]) -> bool:
    stack: List[cst.CSTNode] = [arg.value for arg in args]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in names:
            return True
        stack.extend(code_children(node))
    return False
