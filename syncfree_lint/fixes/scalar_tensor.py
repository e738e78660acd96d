"""SFL401's safe fix: ``torch.tensor(x, device=d)`` of a Python scalar -> ``torch.full((), x, device=d, ...)``,
and ``torch.tensor([x], device=d)`` of a one-number list or tuple -> ``torch.full((1,), x, device=d, ...)``.

``torch.tensor`` of a number stages the number in host memory and copies it to the device;
``torch.full`` passes it to a fill kernel as an argument, with no copy. Both give a 0-d tensor
on ``d``; the dtype must be the one ``torch.tensor`` infers, so the fix needs the number's Python
type: ``bool`` -> ``torch.bool``, ``int`` -> ``torch.int64``, ``float`` -> the default dtype (which
``torch.full`` infers from a float fill value too, so no ``dtype=`` is added). An explicit
``dtype=`` and ``requires_grad=`` are kept. The type comes from a literal, or from every binding
of a local name (literals, ``len``/``int``/``float``/``bool``/one-argument ``round``, ``range`` and
``enumerate`` counters, arithmetic on those, and tensor sizes: ``x.size(0)``, ``x.numel()``, ``x.shape[0]``);
anything else is declined with the reason. A list of several numbers is declined: no one kernel fills it.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from syncfree_lint.edits import Declined, Replace, code
from syncfree_lint.analysis.scope_index import BINDERS, ScopeIndex

#: keywords ``torch.full`` takes with the same meaning as ``torch.tensor``
_KEPT_KEYWORDS = frozenset({"device", "dtype", "requires_grad"})
_BUILTIN_TYPES = {"int": "int", "float": "float", "bool": "bool", "len": "int"}
_INFERRED_DTYPE = {"bool": "bool", "int": "int64"}  # float: the default dtype, as torch.full infers


def builder(call: cst.Call, scope: cst.CSTNode, cache: Dict[int, ScopeIndex]) -> Callable[[], Union[List[Replace], Declined]]:
    """What the rule hands to ``FixPlan``: the decision, taken once the file was walked."""
    def build() -> Union[List[Replace], Declined]:
        index = cache.get(id(scope))
        if index is None:
            index = cache[id(scope)] = ScopeIndex(scope)
        return decide(call, index)
    return build


def decide(call: cst.Call, index: ScopeIndex) -> Union[List[Replace], Declined]:
    """The edit of SFL401's fix for ``call`` (a ``torch.tensor(data, device=...)``), or why not."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "tensor"):
        return Declined("only `torch.tensor(...)` spelt through the torch module is rewritten")
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) != 1 or positional[0].star:
        return Declined("not one positional data argument")
    keywords = [a for a in call.args if a.keyword is not None]
    unknown = sorted(a.keyword.value for a in keywords if a.keyword is not None and a.keyword.value not in _KEPT_KEYWORDS)
    if unknown:
        return Declined(f"`{unknown[0]}=` has no `torch.full` equivalent kept by the fix")
    data, size = _one_number(positional[0].value)
    number = python_number(data, index, set())
    if isinstance(number, Declined) and host_number(data, index) == "int":
        number = "int"
    if isinstance(number, Declined):
        return number
    args = [size, code(data)] + [code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for a in keywords]
    if not any(a.keyword is not None and a.keyword.value == "dtype" for a in keywords) and number in _INFERRED_DTYPE:
        args.append(f"dtype={code(func.value)}.{_INFERRED_DTYPE[number]}")
    return [Replace(call, None, f"{code(func.value)}.full({', '.join(args)})")]


def _one_number(data: cst.BaseExpression) -> Tuple[cst.BaseExpression, str]:
    """The number ``data`` holds and the size ``torch.full`` gives it: ``x`` -> ``()``, ``[x]`` / ``(x,)`` -> ``(1,)``.
    Anything else comes back as it is (and ``python_number`` says why it is not a number)."""
    if isinstance(data, (cst.List, cst.Tuple)) and len(data.elements) == 1 and isinstance(data.elements[0], cst.Element):
        return data.elements[0].value, "(1,)"
    return data, "()"


def python_number(expr: cst.BaseExpression, index: ScopeIndex, seen: Set[str]) -> Union[str, Declined]:
    """"bool", "int" or "float" for an expression proven to be that Python type, else the reason."""
    if isinstance(expr, cst.Integer):
        return "int"
    if isinstance(expr, cst.Float):
        return "float"
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "bool"
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        inner = python_number(expr.expression, index, seen)
        return "int" if inner == "bool" else inner  # -True == -1
    if isinstance(expr, cst.BinaryOperation):
        return _arithmetic(expr, index, seen)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        called = expr.func.value
        if called in _BUILTIN_TYPES and len(expr.args) == 1 and not expr.args[0].star and not _shadowed(called, index):
            return _BUILTIN_TYPES[called]
        if called == "round" and len(expr.args) == 1 and not expr.args[0].star and not _shadowed(called, index):
            return "int"
        return Declined(f"`{called}(...)` is not known to return a Python number of one type")
    if isinstance(expr, cst.Name):
        return _name_number(expr.value, index, seen)
    return Declined("the data is not a Python number literal or a local name bound only to numbers of one type")


def host_number(expr: cst.BaseExpression, index: ScopeIndex, seen: Optional[Set[str]] = None) -> Optional[str]:
    """``python_number``, plus the tensor sizes that are Python ints (``x.size(0)``, ``x.numel()``,
    ``x.shape[0]``) and local names bound only to those (``batch_size = x.shape[0]``); None when
    not proven."""
    if isinstance(expr, cst.Name) and expr.value not in index.params and expr.value not in (seen or ()):
        sizes = _bound_to_sizes(expr.value, index, (seen or set()) | {expr.value})
        if sizes is not None:
            return sizes
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        method, args = expr.func.attr.value, expr.args
        sized = (method == "size" and len(args) == 1 and isinstance(args[0].value, cst.Integer)) or \
            (method == "numel" and not args)
        return "int" if sized else None
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape":
        one = len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
            and isinstance(expr.slice[0].slice.value, cst.Integer)
        return "int" if one else None
    number = python_number(expr, index, set())
    return number if isinstance(number, str) else None


def _bound_to_sizes(name: str, index: ScopeIndex, seen: Set[str]) -> Optional[str]:
    """"int" when every binding of ``name`` in the scope is ``name = <a tensor size or int>``."""
    values = []
    for node, nested in index.occurrences(name):
        bound_by = index.stores.get(id(node))
        if bound_by is None and isinstance(index.parent.get(id(node)), BINDERS):
            return None
        if bound_by is None:
            continue
        if nested or not (isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1
                          and bound_by.targets[0].target is node):
            return None
        values.append(bound_by.value)
    if values and all(host_number(value, index, seen) == "int" for value in values):
        return "int"
    return None


def _shadowed(name: str, index: ScopeIndex) -> bool:
    return bool(index.occurrences(name)) and any(index.stores.get(id(n)) is not None or isinstance(index.parent.get(id(n)), BINDERS)
                                                 for n, _ in index.occurrences(name))


def _arithmetic(expr: cst.BinaryOperation, index: ScopeIndex, seen: Set[str]) -> Union[str, Declined]:
    left, right = python_number(expr.left, index, seen), python_number(expr.right, index, seen)
    if isinstance(left, Declined):
        return left
    if isinstance(right, Declined):
        return right
    if isinstance(expr.operator, cst.Divide):
        return "float"
    if isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)):
        return "float" if "float" in (left, right) else "int"
    return Declined("an operator whose result type depends on the values (`**`, bitwise)")


def _name_number(name: str, index: ScopeIndex, seen: Set[str]) -> Union[str, Declined]:
    """The one Python number type every binding of ``name`` in the scope gives it."""
    if name in index.params:
        return Declined(f"`{name}` is a parameter: its type is not known here")
    if name in seen:
        return Declined(f"`{name}` is defined in terms of itself")
    seen = seen | {name}
    found: Set[str] = set()
    for node, nested in index.occurrences(name):
        if isinstance(index.parent.get(id(node)), BINDERS):  # nested too: `global name` in a function rebinds it
            return Declined(f"`{name}` is bound by an import, def, with/except or global/nonlocal")
        if nested:
            continue
        bound_by = index.stores.get(id(node))
        if bound_by is None:
            continue
        kind = _binding_number(node, bound_by, index, seen)
        if isinstance(kind, Declined):
            return kind
        found.add(kind)
    if not found:
        return Declined(f"`{name}` is not bound in this scope")
    if len(found) > 1:
        return Declined(f"`{name}` may be {' or '.join(sorted(found))}: the dtype torch infers is not proven")
    return found.pop()


def _binding_number(node: cst.Name, statement: cst.CSTNode, index: ScopeIndex, seen: Set[str]) -> Union[str, Declined]:
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1 and statement.targets[0].target is node:
        return python_number(statement.value, index, seen)
    if isinstance(statement, cst.AnnAssign) and statement.target is node and statement.value is not None:
        return python_number(statement.value, index, seen)
    if isinstance(statement, cst.AugAssign) and statement.target is node:
        value = python_number(statement.value, index, seen)
        if isinstance(value, Declined):
            return value
        if isinstance(statement.operator, cst.DivideAssign):
            return "float"
        if isinstance(statement.operator, (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.FloorDivideAssign)):
            return value if value != "bool" else "int"
        return Declined("an augmented assignment whose result type depends on the values")
    if isinstance(statement, cst.For) and _counter(statement, node):
        return "int"
    return Declined(f"`{node.value}` has a binding whose Python type is not known")


def _counter(loop: cst.For, node: cst.Name) -> bool:
    """``for node in range(...)`` or ``for node, _ in enumerate(...)``."""
    iterable = loop.iter
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)):
        return False
    if iterable.func.value == "range":
        return loop.target is node
    target = loop.target
    return iterable.func.value == "enumerate" and isinstance(target, (cst.Tuple, cst.List)) \
        and bool(target.elements) and target.elements[0].value is node

