"""Is a value a float or an integer count? Positive evidence from the code, or no answer.

``is_float``: a loss (``criterion(out, y)``, ``F.cross_entropy``), a mean or norm, a true
division, a float cast, a call of a function of the file whose every return is one (an element
of returned tuples too: ``err, acc = fast_adapt(...)``), an element of a library function's float
results (``knowledge.dtypes.FLOAT_SEQUENCE_RESULT``), or a name whose every binding is one. ``is_count``: ``.sum()`` of a
comparison (``(pred == y).sum()``, ``pred.eq(y).sum()``), ``count_nonzero``, an integer cast.
Anything else is unknown, and a fix that needs the answer is declined.
"""
from __future__ import annotations

import re
from typing import Callable, List, Optional, Set

import libcst as cst

from syncfree_lint.analysis.nodes import code_children, mentions_name
from syncfree_lint.analysis.scope_index import BINDERS, FileContext, ScopeIndex
from syncfree_lint.knowledge import dtypes

QualName = Callable[[cst.BaseExpression], Optional[str]]


def is_float(expr: cst.BaseExpression, index: ScopeIndex, qualname: QualName, seen: Set[str]) -> bool:
    """Positive evidence that ``expr`` is a floating tensor (or a Python float)."""
    if isinstance(expr, cst.Float):
        return True  # `att_loss = 0.` before the branches that bind it to a loss
    if isinstance(expr, cst.Name):
        return _name_is_float(expr.value, index, qualname, seen)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return is_float(expr.expression, index, qualname, seen)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        return is_float(expr.value, index, qualname, seen)  # `loss.data`: the same tensor, without autograd
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Divide):
            return True  # true division
        if isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Power, cst.FloorDivide)):
            return any(isinstance(side, cst.Float) or is_float(side, index, qualname, seen)
                       for side in (expr.left, expr.right))
        return False
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    qual = qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if qual and qual.startswith("torch."):
        last = qual.rsplit(".", 1)[-1]
        if last in dtypes.F_LOSSES or "loss" in last or last in dtypes.FLOAT_RESULT:
            return True
        if last in dtypes.SAME_DTYPE and expr.args and not expr.args[0].keyword:
            return is_float(expr.args[0].value, index, qualname, seen)
        return False
    callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    lowered = callee.lower() if isinstance(callee, str) else ""
    if isinstance(func, cst.Attribute):
        if lowered in dtypes.FLOAT_RESULT:
            return True
        if lowered == "to":
            dtype = [a.value for a in expr.args if a.keyword is None or a.keyword.value == "dtype"]
            if any((qualname(d) if isinstance(d, (cst.Name, cst.Attribute)) else None) in dtypes.FLOAT_DTYPES for d in dtype):
                return True
            return False
        if lowered in dtypes.SAME_DTYPE:
            return is_float(func.value, index, qualname, seen)
    # criterion(out, y), self.loss_fn(...), compute_loss(...); a function of the file returning floats
    return _names_a_loss(lowered) or returns_float(expr, None, index, qualname, seen)


def returns_float(call: cst.Call, element: Optional[int], index: ScopeIndex, qualname: QualName, seen: Set[str]) -> bool:
    """``call`` (its result's ``element``, for a tuple unpacked) is a float: a library function of
    ``FLOAT_SEQUENCE_RESULT`` (any element), or a module-level function of the file whose every
    ``return`` gives one (followed once per function)."""
    func = call.func
    qual = qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if element is not None and qual in dtypes.FLOAT_SEQUENCE_RESULT:
        return True
    function = _local_function(func, index.context)
    if function is None:
        return element is None and _imported_float(call, qual, index, qualname, seen)
    key = f"def {function.name.value}"
    if key in seen:
        return False
    inner = index.context.index_of(function)
    returned = _returned_values(function)
    if not returned:
        return False
    if element is None:
        same = _same_as_parameter(function, returned, inner)
        if same is not None:  # `def reduce(t): rt = t.clone(); ...; return rt`: the argument's dtype
            argument = _positional(call, same)
            return argument is not None and is_float(argument, index, qualname, seen | {key})
    for value in returned:
        if element is not None:
            elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            if elements is None or len(elements) <= element or isinstance(elements[element], cst.StarredElement):
                return False
            value = elements[element].value
        if not is_float(value, inner, qualname, seen | {key}):
            return False
    return True


def _imported_float(call: cst.Call, qual: Optional[str], index: ScopeIndex, qualname: QualName, seen: Set[str]) -> bool:
    """A function of another file of the run, by what the run says it returns (``return_dtype``);
    unknown ones are noted in ``index.context.wanted`` so the run can tell."""
    head = call.func
    while isinstance(head, cst.Attribute):
        head = head.value
    if not qual or "." not in qual or not isinstance(head, cst.Name) or not index.context.is_imported(head.value) \
            or qual.split(".")[0] in ("torch", "numpy", "math"):
        return False  # not a function another file of the run may define
    answer = index.context.imported_dtype(qual)
    if answer is None:
        index.context.wanted.add(qual)
        return False
    if answer == "float":
        return True
    argument = _positional(call, int(answer.partition(":")[2]))
    return argument is not None and is_float(argument, index, qualname, seen | {f"def {qual}"})


def return_dtype(function: cst.FunctionDef, context: FileContext, qualname: QualName) -> Optional[str]:
    """What a function's result is, for other files' proofs: ``"float"`` when every ``return``
    gives a float, ``"same:<i>"`` when every one gives its ``i``-th positional argument or a
    tensor a dtype-keeping method made from it; None otherwise."""
    returned = _returned_values(function)
    if not returned:
        return None
    inner = context.index_of(function)
    key = f"def {function.name.value}"
    if all(is_float(value, inner, qualname, {key}) for value in returned):
        return "float"
    same = _same_as_parameter(function, returned, inner)
    return None if same is None else f"same:{same}"


def _same_as_parameter(function: cst.FunctionDef, returned: List[cst.BaseExpression], index: ScopeIndex) -> Optional[int]:
    """The position of the parameter every returned value keeps the dtype of, if there is one."""
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    origins = {_origin(value, params, index, set()) for value in returned}
    if len(origins) != 1:
        return None
    return origins.pop()


def _origin(expr: cst.BaseExpression, params: List[str], index: ScopeIndex, seen: Set[str]) -> Optional[int]:
    """The parameter ``expr`` is, or is made from by methods that keep the dtype (``.clone()``,
    ``.detach()``, ``.data``, ...; names bound only to such, changed in place only by ``+= -= *= /=``)."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        return _origin(expr.value, params, index, seen)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in dtypes.SAME_DTYPE \
            and expr.func.attr.value not in ("sum", "max", "min", "amax", "amin"):  # `.sum()` of bools is int64
        return _origin(expr.func.value, params, index, seen)
    if not isinstance(expr, cst.Name) or expr.value in seen:
        return None
    name = expr.value
    if name in params:
        rebound = any(index.stores.get(id(node)) is not None and not isinstance(index.stores.get(id(node)), cst.AugAssign)
                      for node, _ in index.occurrences(name))
        return None if rebound else params.index(name)
    origins: Set[Optional[int]] = set()
    for node, nested in index.occurrences(name):
        bound_by = index.stores.get(id(node))
        if bound_by is None:
            if isinstance(index.parent.get(id(node)), BINDERS):
                return None
            continue
        if isinstance(bound_by, cst.AugAssign) and isinstance(
                bound_by.operator, (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)):
            continue  # in place on a tensor: its dtype stays (or the operation raises)
        if nested or not (isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1
                          and bound_by.targets[0].target is node):
            return None
        origins.add(_origin(bound_by.value, params, index, seen | {name}))
    return origins.pop() if len(origins) == 1 else None


def _positional(call: cst.Call, position: int) -> Optional[cst.BaseExpression]:
    args = [a for a in call.args if a.keyword is None]
    if any(a.star for a in args[: position + 1]) or len(args) <= position:
        return None
    return args[position].value


def _local_function(func: cst.BaseExpression, context: FileContext) -> Optional[cst.FunctionDef]:
    """The module-level ``def`` a bare name calls, when the module defines it once (not async)."""
    if not isinstance(func, cst.Name):
        return None
    found = context.definition(func.value)
    return found if isinstance(found, cst.FunctionDef) and not found.asynchronous else None


def _returned_values(function: cst.FunctionDef) -> List[cst.BaseExpression]:
    """The expressions of the function's own ``return`` statements; empty when one returns nothing,
    the function yields, or none returns."""
    out: List[cst.BaseExpression] = []
    stack: List[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Yield, cst.Await)):
            return []
        if isinstance(node, cst.Return):
            if node.value is None:
                return []
            out.append(node.value)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(code_children(node))
    return out


def _names_a_loss(callee: str) -> bool:
    words = set(re.split(r"[^a-z0-9]+", callee))
    return bool(words & dtypes.LOSS_WORDS) and not words & dtypes.NOT_LOSS_WORDS


def _name_is_float(name: str, index: ScopeIndex, qualname: QualName, seen: Set[str]) -> bool:
    """Every binding of ``name`` in the scope is a float (``x /= k`` and in-place ``+=``/``-=``/``*=``
    keep a float tensor float), and there is at least one plain assignment; or the name is
    backpropagated and bound by one statement (``backward`` needs a floating tensor)."""
    if name in seen:
        # `loss = reduce(loss)`: the name read in its own binding holds what the others bound, a
        # float when they all are (assumed while they are checked: a proof by induction)
        return _ASSUMED + name in seen
    if _backpropagated(name, index) and _one_binding(name, index):
        return True
    if name in index.params:
        return False
    seen = seen | {name, _ASSUMED + name}
    assigned = False
    for node, nested in index.occurrences(name):
        if nested:
            continue
        bound_by = index.stores.get(id(node))
        if bound_by is None:
            if isinstance(index.parent.get(id(node)), BINDERS):
                return False
            continue
        if isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1 and bound_by.targets[0].target is node:
            if not is_float(bound_by.value, index, qualname, seen):
                return False
            assigned = assigned or not mentions_name(bound_by.value, name)  # one binding that needs no assumption
        elif _unpacked_float(node, bound_by, index, qualname, seen):  # `err, acc = fast_adapt(...)`
            assigned = assigned or not mentions_name(bound_by.value, name)  # type: ignore[attr-defined]
        elif isinstance(bound_by, cst.AugAssign):
            if not isinstance(bound_by.operator, (cst.DivideAssign, cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign)):
                return False
        else:
            return False
    return assigned


#: in ``seen``, a name assumed a float while its own bindings are checked
_ASSUMED = "assume "


def _unpacked_float(node: cst.Name, bound_by: cst.CSTNode, index: ScopeIndex, qualname: QualName,
                    seen: Set[str]) -> bool:
    """``a, b = call(...)`` binding ``node`` to an element the call returns as a float."""
    if not (isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1 and isinstance(bound_by.value, cst.Call)):
        return False
    target = bound_by.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in target.elements):
        return False
    positions = [i for i, e in enumerate(target.elements) if e.value is node]
    return len(positions) == 1 and returns_float(bound_by.value, positions[0], index, qualname, seen)


def _backpropagated(name: str, index: ScopeIndex) -> bool:
    """``name.backward()``, ``scaler.scale(name).backward()``, ``accelerator.backward(name)`` in the scope."""
    for node, nested in index.occurrences(name):
        if nested:
            continue
        parent = index.parent.get(id(node))
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "backward":
            return isinstance(index.parent.get(id(parent)), cst.Call)
        if isinstance(parent, cst.Arg) and parent.value is node and parent.keyword is None:
            call = index.parent.get(id(parent))
            func = call.func if isinstance(call, cst.Call) else None
            if isinstance(func, cst.Attribute) and func.attr.value == dtypes.BACKWARD:
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in dtypes.SCALE_FOR_BACKWARD:
                outer = index.parent.get(id(call))
                if isinstance(outer, cst.Attribute) and outer.attr.value == dtypes.BACKWARD:
                    return True
    return False


def _one_binding(name: str, index: ScopeIndex) -> bool:
    """Bound by exactly one statement of the scope (a parameter counts as one), so every read sees
    what that statement bound, the tensor ``backward`` was called on."""
    stores = {id(index.stores[id(node)]) for node, nested in index.occurrences(name)
              if not nested and id(node) in index.stores}
    others = [node for node, nested in index.occurrences(name)
              if isinstance(index.parent.get(id(node)), BINDERS) and not isinstance(index.parent.get(id(node)), cst.Param)]
    return not others and len(stores) + (name in index.params) == 1


def is_count(expr: cst.BaseExpression, qualname: QualName) -> bool:
    """Positive evidence that ``expr`` is an integer tensor counting something (its ``.item()`` is an int)."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    qual = qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if qual and qual.startswith("torch."):
        last = qual.rsplit(".", 1)[-1]
        if last == "count_nonzero":
            return True
        return last == "sum" and bool(expr.args) and expr.args[0].keyword is None \
            and _is_bool(expr.args[0].value, qualname) and not _has_dtype(expr)
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if method in dtypes.INT_CASTS and not expr.args:
        return True
    if method == "to":
        return any((qualname(a.value) if isinstance(a.value, (cst.Name, cst.Attribute)) else None) in dtypes.INT_DTYPES
                   for a in expr.args if a.keyword is None or a.keyword.value == "dtype")
    if method == "count_nonzero":
        return True
    if method == "sum" and not _has_dtype(expr):
        return _is_bool(func.value, qualname) or is_count(func.value, qualname)
    return False


def count_is_int64(expr: cst.BaseExpression, qualname: QualName) -> bool:
    """A count proven to be int64 (``.sum()`` of bools or of integers, ``count_nonzero``, ``.long()``);
    ``.int()``/``.short()`` and casts to a narrower dtype are not: their sum wraps past 2**31."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    qual = qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if qual and qual.startswith("torch."):
        return is_count(expr, qualname)  # torch.count_nonzero, torch.sum(bools): int64
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if method == "to":
        return any((qualname(a.value) if isinstance(a.value, (cst.Name, cst.Attribute)) else None) in dtypes.INT64_DTYPES
                   for a in expr.args if a.keyword is None or a.keyword.value == "dtype")
    if method in dtypes.INT_CASTS:
        return method in dtypes.INT64_CASTS and not expr.args
    return method in dtypes.COUNTING and is_count(expr, qualname)  # a sum of integers is int64


def _has_dtype(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "dtype" for a in call.args)


def _is_bool(expr: cst.BaseExpression, qualname: QualName) -> bool:
    """A bool tensor: a comparison, ``x.eq(y)``-like predicates, ``~``/``&``/``|`` of those."""
    if isinstance(expr, cst.Comparison):
        return all(isinstance(t.operator, (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                                           cst.GreaterThanEqual)) for t in expr.comparisons)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _is_bool(expr.expression, qualname)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _is_bool(expr.left, qualname) and _is_bool(expr.right, qualname)
    if isinstance(expr, cst.Call) and isinstance(expr.func, (cst.Name, cst.Attribute)):
        qual = qualname(expr.func)
        if qual and qual.startswith("torch."):
            return qual.rsplit(".", 1)[-1] in dtypes.BOOL_RESULT
        if isinstance(expr.func, cst.Attribute):
            return expr.func.attr.value in dtypes.BOOL_RESULT
    return False
