"""Whether a class of the linted file is a running-average meter the SFL101 fix may feed a tensor.

``shape_of`` reads the class and returns its ``knowledge.meters.MeterShape``, or why not. A meter
here is a plain class (no bases but ``object``, no decorators) whose ``update(self, value[, n])``
is only ``self.f = <expr>`` / ``self.f += <expr>`` statements, each ``<expr>`` built with ``+ - *
/`` (and ``a if <test> else b``) from the value, the weight, number literals and attributes of
``self``; the tests of those ``if``s read no attribute that holds the value. Attributes computed
from the value are its *fields* (a ``@property`` returning such arithmetic is one too). Every other
method reads no field, hands ``self`` to no other code and sets fields only to number literals
(``reset``). On a float64 tensor ``+ - *`` give the doubles Python's floats give. A division does
only when the divisor is a value too: CUDA divides a tensor by a host number (a count) as a
multiplication by its reciprocal, which can change the last bit, so fields computed that way are
*divided* (a power-of-two literal divisor is exact) and the fix may not let anything read them. A
division by a count the update just increased divides by zero only where the original raised
``ZeroDivisionError``.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from syncfree_lint.analysis.nodes import mentions_name, walk_code
from syncfree_lint.knowledge.meters import MeterShape

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
_UNSAFE_METHODS = frozenset({"__getattr__", "__getattribute__", "__setattr__", "__format__", "__float__",
                             "__add__", "__radd__", "__iadd__"})


def shape_of(cls: cst.ClassDef, method: str = "update") -> Union[MeterShape, str]:
    """The class's meter shape, or the first reason it is not proven to be a meter."""
    if cls.decorators or any(not _is_object(base.value) for base in cls.bases) or cls.keywords:
        return f"`{cls.name.value}` has a base class, a decorator or a metaclass"
    methods: Dict[str, cst.FunctionDef] = {}
    properties: Dict[str, cst.FunctionDef] = {}
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef):
            if statement.decorators:
                if len(statement.decorators) == 1 and _is_name(statement.decorators[0].decorator, "property"):
                    properties[statement.name.value] = statement
                    continue
                return f"`{cls.name.value}.{statement.name.value}` is decorated"
            methods[statement.name.value] = statement
        elif not _is_docstring(statement):
            return f"`{cls.name.value}` has class-level code other than methods"
    update = methods.get(method)
    if update is None:
        return f"`{cls.name.value}` has no `{method}` method"
    unsafe = sorted(_UNSAFE_METHODS & (set(methods) | set(properties)))
    if unsafe:
        return f"`{cls.name.value}` defines `{unsafe[0]}`"
    params = _plain_params(update)
    if params is None or len(params) not in (2, 3):
        return f"`{cls.name.value}.{method}` does not take `(self, value)` or `(self, value, n)`"
    found = _update_fields(update, params)
    if isinstance(found, str):
        return f"`{cls.name.value}.{method}`: {found}"
    fields, divided = found
    for name, prop in properties.items():
        expr = _returned(prop)
        if expr is None or not _arithmetic(expr, {"self"}, set(), fields):
            return f"the property `{name}` is not arithmetic of the meter's attributes"
        if _reads_fields(expr, fields):
            fields = fields | {name}
            if _divides(expr, set(), fields) or _reads_fields(expr, divided):
                divided = divided | {name}
    int_start = False
    for name, function in methods.items():
        if name == method:
            continue
        problem = _other_method(function, fields)
        if isinstance(problem, str):
            return f"`{cls.name.value}.{name}`: {problem}"
        int_start = int_start or problem
    weight = (1, params[2].name.value) if len(params) == 3 else None
    return MeterShape(method, (0, params[1].name.value), weight, tuple(sorted(fields)), int_start,
                      tuple(sorted(name for name in methods if name not in (method, "__init__"))),
                      tuple(sorted(divided)))


def _update_fields(update: cst.FunctionDef, params: List[cst.Param]):
    """(the attributes ``update`` computes from its value, those of them divided by a host number),
    or why its body is more than that."""
    value = params[1].name.value
    weight = params[2].name.value if len(params) == 3 else None
    fields: Set[str] = set()
    divided: Set[str] = set()
    for statement in update.body.body:
        if _is_docstring(statement):
            continue
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return "a statement other than `self.f = ...` or `self.f += ...`"
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
        elif isinstance(small, cst.AugAssign) and isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)):
            target = small.target
        else:
            return "a statement other than `self.f = ...` or `self.f += ...`"
        field = _self_attribute(target)
        if field is None:
            return "it assigns something other than an attribute of `self`"
        names = {value} | ({weight} if weight else set())
        if not _arithmetic(small.value, names | {"self"}, {value}, fields):
            return "it uses the value in more than `+ - * /`"
        if mentions_name(small.value, value) or _reads_fields(small.value, fields) or \
                (isinstance(small, cst.AugAssign) and field in fields):
            keeps = isinstance(small, cst.AugAssign) and field in divided
            fields.add(field)
            divided.discard(field)
            if keeps or _divides(small.value, {value}, fields) or _reads_fields(small.value, divided):
                divided.add(field)
        elif field in fields:
            fields.discard(field)  # `self.f = 0` after a value: the field holds a number again
            divided.discard(field)
    if not fields:
        return "no attribute keeps the value"
    return fields, divided


def _divides(expr: cst.CSTNode, value: Set[str], fields: Set[str]) -> bool:
    """``expr`` divides by something that holds no value (a count, a literal that is not a power of
    two): on a device tensor that is a multiplication by a rounded reciprocal."""
    for node in _walk(expr):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            divisor = node.right
            if any(mentions_name(divisor, v) for v in value) or _reads_fields(divisor, fields):
                continue
            if isinstance(divisor, (cst.Integer, cst.Float)) and _power_of_two(divisor.evaluated_value):
                continue
            return True
    return False


def _power_of_two(number: object) -> bool:
    if not isinstance(number, (int, float)) or number <= 0:
        return False
    mantissa = float(number)
    while mantissa >= 2.0:
        mantissa /= 2.0
    while mantissa < 1.0:
        mantissa *= 2.0
    return mantissa == 1.0


def _arithmetic(expr: cst.BaseExpression, names: Set[str], value: Set[str], fields: Set[str]) -> bool:
    """``expr`` is ``+ - * /`` over number literals, ``names`` and ``self.<attr>``; an ``a if t
    else b`` whose test reads neither the value nor a field."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in names and expr.value != "self"
    if isinstance(expr, cst.Attribute):
        return _self_attribute(expr) is not None
    if isinstance(expr, cst.BinaryOperation):
        return isinstance(expr.operator, _ARITHMETIC) and _arithmetic(expr.left, names, value, fields) \
            and _arithmetic(expr.right, names, value, fields)
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.operator, cst.Minus) and _arithmetic(expr.expression, names, value, fields)
    if isinstance(expr, cst.IfExp):
        if any(mentions_name(expr.test, v) for v in value) or _reads_fields(expr.test, fields):
            return False
        if not _plain_test(expr.test, names):
            return False
        return _arithmetic(expr.body, names, value, fields) and \
            _arithmetic(expr.orelse, names, value, fields)
    return False


def _plain_test(test: cst.BaseExpression, names: Set[str]) -> bool:
    """A test on numbers: an attribute of ``self``, a name, a comparison of those with literals."""
    if isinstance(test, cst.Comparison):
        return _plain_test(test.left, names) and all(_plain_test(t.comparator, names) for t in test.comparisons)
    if isinstance(test, (cst.Integer, cst.Float)):
        return True
    if isinstance(test, cst.Name):
        return test.value in names and test.value != "self"
    return isinstance(test, cst.Attribute) and _self_attribute(test) is not None


def _other_method(function: cst.FunctionDef, fields: Set[str]) -> Union[bool, str]:
    """Whether it sets a field to an int literal (True/False), or why it may see a field's value."""
    nodes = _walk(function.body)
    heads = {id(n.value) for n in nodes if isinstance(n, cst.Attribute)}
    set_targets: Set[int] = set()
    int_start = False
    for node in nodes:
        if isinstance(node, cst.Name) and node.value in ("vars", "getattr", "setattr", "__dict__"):
            return f"it uses `{node.value}`"
        if isinstance(node, cst.Attribute) and node.attr.value == "__dict__":
            return "it uses `__dict__`"
        if isinstance(node, cst.Name) and node.value == "self" and id(node) not in heads:
            return "it hands `self` to other code"
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            for target, value in _assigned(node):
                if _self_attribute(target) not in fields:
                    continue
                if not isinstance(value, (cst.Integer, cst.Float)):
                    return f"it sets `self.{_self_attribute(target)}` to something other than a number literal"
                int_start = int_start or isinstance(value, cst.Integer)
                set_targets.add(id(target))
    for node in nodes:
        field = _self_attribute(node)
        if field in fields and id(node) not in set_targets:
            return f"it reads `self.{field}`, which holds the value"
    return int_start


def _assigned(node: cst.CSTNode) -> List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]:
    """(target, the value it gets) of an assignment; ``self.a, self.b = 0, 0.0`` pairs them; the
    value is None where it is not one expression per target (``+=``, several targets...)."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
        if isinstance(target, cst.Tuple) and isinstance(node.value, cst.Tuple) \
                and len(target.elements) == len(node.value.elements):
            return [(t.value, v.value) for t, v in zip(target.elements, node.value.elements)]
        return [(target, node.value)]
    if isinstance(node, cst.Assign):
        return [(t.target, None) for t in node.targets]
    return [(node.target, None)]  # type: ignore[attr-defined]


def _reads_fields(expr: cst.CSTNode, fields: Set[str]) -> bool:
    return any(isinstance(n, cst.Attribute) and _self_attribute(n) in fields for n in _walk(expr))


def _walk(node: cst.CSTNode) -> List[cst.CSTNode]:
    return list(walk_code(node))


def _self_attribute(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _returned(function: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    body = [s for s in function.body.body if not _is_docstring(s)]
    if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Return):
        return body[0].body[0].value
    return None


def _plain_params(function: cst.FunctionDef) -> Optional[List[cst.Param]]:
    params = function.params
    if params.star_arg is not cst.MaybeSentinel.DEFAULT and params.star_arg is not None or params.star_kwarg \
            or params.kwonly_params or params.posonly_params:
        return None
    plain = list(params.params)
    if not plain or plain[0].name.value != "self" or function.asynchronous:
        return None
    if len(plain) == 3 and (plain[2].default is None or not _is_one(plain[2].default)):
        return None  # a weight without the default 1 is fine too, but keep to the common form
    return plain


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.value == "1"


def _is_object(expr: cst.BaseExpression) -> bool:
    return _is_name(expr, "object")


def _is_name(expr: cst.BaseExpression, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name


def _is_docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
        isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, (cst.SimpleString,
                                                                                         cst.ConcatenatedString))
