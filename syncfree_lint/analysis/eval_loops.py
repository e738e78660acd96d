"""Evaluation loops: a loop that runs a model on its items with gradients off is a step loop.

``for batch in eval_dl: outputs = model(**batch)`` under ``torch.no_grad()`` (a ``with`` block or
a decorator of the function) evaluates one batch per iteration, whatever the iterable is called:
a sync in its body is paid once per evaluation step. The loop counts when a call in its body
(not in a nested function) runs something named or known as a model on an input built from the
loop's items (its first positional argument, or ``**batch``: a sampler's ``unet(latents, t)``
iterates a schedule, not data). Loops over ``range(...)`` are not counted (a per-token or per-step loop of a
sampler run once is not an evaluation over data), unless they cut the data into batches with a stride
(``for i in range(0, n, batch_size): x = xs[i:i + batch_size]``, ``strided_slices``).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.nodes import code_children, walk_code
from syncfree_lint.knowledge.frequency import NO_GRAD_CONTEXTS, is_batch_size_name

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


def drawn_items(body: cst.CSTNode) -> Set[str]:
    """The names a loop body binds from ``next(...)`` (``batch = trim(next(batches))``): a ``range(n)`` loop that
    draws each item from an iterator runs once per item, as a loop over the iterator would."""
    bound: Set[str] = set()
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign) and any(
                isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "next"
                and call.args and isinstance(call.args[0].value, (cst.Name, cst.Attribute))
                for call in walk_code(node.value)):  # an iterator kept in a name, not `next(iter(m.parameters()))`
            bound.update(name.value for target in node.targets for name in _names_in(target.target))
        stack.extend(code_children(node))
    return bound


def cuts_into_batches(iterable: cst.BaseExpression) -> bool:
    """``for xb in x.split(batch_size)``, ``for xb, yb in zip(x.split(bs), y.split(bs))``,
    ``enumerate(torch.split(x, self.batch_size))``: data cut along its first dimension into pieces
    of a batch size, so the loop runs once per batch (grad on or off). Not ``h.split(dim_head, -1)``
    (a split of features) nor pieces of any other size."""
    while isinstance(iterable, cst.Call) and iterable.args and dotted(iterable.func) in ("enumerate", "tqdm", "tqdm.tqdm"):
        iterable = iterable.args[0].value
    if isinstance(iterable, cst.Call) and dotted(iterable.func) == "zip":
        parts = [arg.value for arg in iterable.args]
        return bool(parts) and all(_batch_split(part) for part in parts)
    return _batch_split(iterable)


def _batch_split(expr: cst.BaseExpression) -> bool:
    """``x.split(bs)`` or ``torch.split(x, bs)`` along dimension 0."""
    if not (isinstance(expr, cst.Call) and (dotted(expr.func) or "").rsplit(".", 1)[-1] == "split"):
        return False
    method = isinstance(expr.func, cst.Attribute) and dotted(expr.func) != "torch.split"
    positional = [arg.value for arg in expr.args if arg.keyword is None and not arg.star]
    sizes = positional[:1] if method else positional[1:2]
    dims = positional[1:] if method else positional[2:]
    dims += [arg.value for arg in expr.args if arg.keyword is not None and arg.keyword.value == "dim"]
    if any(not (isinstance(dim, cst.Integer) and dim.value == "0") for dim in dims):
        return False
    size = sizes[0] if sizes else next((arg.value for arg in expr.args if arg.keyword is not None
                                        and arg.keyword.value == "split_size_or_sections"), None)
    name = dotted(size) if size is not None else None
    return name is not None and is_batch_size_name(name)


def strided_slices(iterable: cst.BaseExpression, body: cst.CSTNode, names: Set[str]) -> Dict[str, str]:
    """The names a loop ``for i in range(start, stop, step)`` binds to slices of data cut at its
    counter (``x, y = xs[i:i + step], ys[i:i + step]``, ``batch = triples[start:start + bs]``), each
    with the dotted name of the data it cuts (data cut where it is used, ``f(xs[i:i + 64])``, under its own
    name): the loop iterates over batches of that data. Empty for any other loop."""
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "range"
            and len(iterable.args) == 3 and not any(arg.keyword or arg.star for arg in iterable.args)):
        return {}
    bound: Dict[str, str] = {}
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign):
            values = [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value]
            targets = [n for t in node.targets for n in _names_in(t.target)]
            data = _cut_by_helper(node.value, names)
            if data is not None:  # `data, targets = get_batch(source, i, bptt)`: a helper cuts at the counter
                bound.update((target.value, data) for target in targets)
            elif len(targets) == len(values):
                for target, value in zip(targets, values):
                    data = _cut_at(value, names)
                    if data is not None:
                        bound[target.value] = data
        elif isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            data = _cut_at(node, names)  # `model.embed(xs[i:i + 64].to(device))`: cut where it is used
            if data:
                bound.setdefault(data, data)
        stack.extend(code_children(node))
    return bound


def _cut_by_helper(value: cst.BaseExpression, counters: Set[str]) -> Optional[str]:
    """``get_batch(source, i, bptt)``: a call handed the counter and the data (the first other name), which it
    cuts; the data's dotted name."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
        return None
    given = [arg.value for arg in value.args if arg.keyword is None and not arg.star]
    if not any(isinstance(arg, cst.Name) and arg.value in counters for arg in given):
        return None
    return next((dotted(arg) for arg in given if isinstance(arg, (cst.Name, cst.Attribute))
                 and not (isinstance(arg, cst.Name) and arg.value in counters)), None)


def _cut_at(value: cst.BaseExpression, counters: Set[str]) -> Optional[str]:
    """``xs[i:i + n]`` (or ``xs[i:i + n].to(device)``, ``rays[i:i + n, :2]``) with ``i`` a counter: the dotted name
    of ``xs`` ("" when it has none)."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value
    if not isinstance(value, cst.Subscript) or not value.slice:
        return None
    leading = 0  # `edges[:, i:i + n]`: whole dimensions before the cut (edges stored as columns)
    while leading < len(value.slice) - 1 and _whole(value.slice[leading].slice):
        leading += 1
    cut = value.slice[leading].slice
    if not isinstance(cut, cst.Slice):
        return None
    if isinstance(cut.lower, cst.Name) and cut.lower.value in counters and isinstance(cut.upper, cst.BinaryOperation) \
            and isinstance(cut.upper.operator, cst.Add) and isinstance(cut.upper.left, cst.Name) \
            and cut.upper.left.value == cut.lower.value:
        return dotted(value.value) or ""
    return None


def _whole(part: cst.BaseSlice) -> bool:
    """``:`` in a subscript: the whole dimension."""
    return isinstance(part, cst.Slice) and part.lower is None and part.upper is None and part.step is None


def evaluates_items(body: cst.CSTNode, names: Set[str], is_model: Callable[[cst.BaseExpression], bool],
                    batches: bool = False) -> bool:
    """Does a call in ``body`` run a model on the loop's items (``model(x)``, ``model(**batch)``,
    ``self.net(batch["image"].cuda())``, ``sliding_window(model, image)``)? Names the body binds
    from the items count as items (``sub = sampler.sample(seeds); model(x[sub.n_id])``). With ``batches`` (the
    loop cuts data into batches at its counter) the items may come in any argument: ``model.score(z, edges)``."""
    inputs = _arguments if batches else _inputs
    names = _derived(body, names)
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call) and is_model(node.func) and _uses(inputs(node.args), names):
            return True
        if isinstance(node, cst.Call) and any(is_model(arg.value) for arg in node.args) \
                and _uses(inputs([arg for arg in node.args if not is_model(arg.value)]), names):
            return True  # `infer(model, image)`: a helper handed the model and the item as its input
        stack.extend(code_children(node))
    return False


def _derived(body: cst.CSTNode, names: Set[str]) -> Set[str]:
    """``names`` and the names that assignments in ``body`` bind from them, to a fixed point."""
    assigns: List[Tuple[Set[str], cst.BaseExpression]] = []
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign):  # `sub = sampler.sample(seeds)`, `x = batch["x"].cuda()`
            assigns.append(({n.value for t in node.targets for n in _names_in(t.target)}, node.value))
        stack.extend(code_children(node))
    names = set(names)
    grew = True
    while grew:
        grew = False
        for bound, value in assigns:
            if not bound <= names and _carries(value, names):
                names |= bound
                grew = True
    return names


def _carries(value: cst.BaseExpression, names: Set[str]) -> bool:
    """Is ``value`` made from an item as its data: the item itself, a part of it (``batch["x"]``,
    ``sub.n_id``), a method of it (``x.cuda()``), or a call with it first (``sampler.sample(seeds)``, also inside a
    comprehension over it: ``pad([q for q, _ in chunk])``);
    not a call that takes it as a setting (``scheduler.scale_model_input(latents, t)``)."""
    if isinstance(value, cst.Name):
        return value.value in names
    if isinstance(value, (cst.Attribute, cst.Subscript)):
        return _carries(value.value, names)
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):  # `pad([q for q, _ in chunk])`: built from the items
        return _carries(value.for_in.iter, names)
    if isinstance(value, cst.Call):
        if isinstance(value.func, cst.Attribute) and _carries(value.func.value, names):
            return True
        return any(_carries(arg.value, names) for arg in _inputs(value.args))
    return False


def _names_in(target: cst.BaseExpression) -> List[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _names_in(element.value)]
    return []


def _inputs(args: Sequence[cst.Arg]) -> List[cst.Arg]:
    """The arguments that carry a model's input: the first positional one, and ``**batch``
    (a sampler's ``unet(latents, t)`` passes the loop's timestep second: not data)."""
    positional = [arg for arg in args if arg.keyword is None and arg.star == ""]
    return positional[:1] + [arg for arg in args if arg.star == "**"]


def _arguments(args: Sequence[cst.Arg]) -> List[cst.Arg]:
    return list(args)


def _uses(args: Sequence[cst.Arg], names: Set[str]) -> bool:
    stack: List[cst.CSTNode] = [arg.value for arg in args]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in names:
            return True
        stack.extend(code_children(node))
    return False
