"""Instances: which class a name holds, so calls through objects reach the class's methods.

``meter = utils.AverageMeter()`` makes ``meter.update(x)`` run ``AverageMeter.update``;
``criterion = PairLoss(0.1)`` makes ``criterion(x, y)`` run ``PairLoss.__call__``; a parameter
annotated with a class (``def step(meter: Meter)``) holds an instance of it. A class is a local
class of the file, or an imported capitalised name (classes are capitalised); a factory's result
is an instance when the factory returns one (its return kind, ``object_kind``, learned across
files by ``run_kinds``). ``self.x = Cls()`` attributes live on the class frame
(``ClassFrame.attr_classes``); this table holds the names of functions and of the module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Dict, Generic, List, Optional, Sequence, Set, Tuple, TypeVar

import libcst as cst

from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.knowledge.callables import METHODS_RETURNING_SELF_BY_CONVENTION, MODULE_METHODS_RETURNING_SELF

_RETURNING_SELF = MODULE_METHODS_RETURNING_SELF | METHODS_RETURNING_SELF_BY_CONVENTION


@dataclass(frozen=True)
class ClassRef:
    """A class by name: ``local`` for a class of this file (its qualname), else its imported dotted name."""

    local: bool
    name: str


#: how an argument's kind says "an instance of this class" when it crosses to a parameter
#: (``analysis.arguments``, ``analysis.run_kinds``): the prefix, then the class's dotted name
OBJECT_KIND_PREFIX = "object:"


def object_kind(dotted_class: str) -> str:
    """The argument kind of an instance of ``dotted_class`` (its module's dotted name first)."""
    return OBJECT_KIND_PREFIX + dotted_class


#: what a factory of another file returns when it is one of its nested functions (``normalize =
#: make_normalizer(mean, std)``): the prefix, then the nested function's dotted name
FUNCTION_KIND_PREFIX = "function:"

#: an instance that is also an ``nn.Module`` (``loss_fn = CenteredLoss(8).cuda()`` passed on): the
#: parameter is a module (calling it gives a tensor) and its class is known (``loss_fn.center``)
MODULE_OBJECT_KIND_PREFIX = "module-object:"


def class_of_kind(kind: Optional[str]) -> Optional[ClassRef]:
    """The class an argument kind names, or None for every other kind."""
    if kind is None:
        return None
    for prefix in (OBJECT_KIND_PREFIX, MODULE_OBJECT_KIND_PREFIX):
        if kind.startswith(prefix):
            return ClassRef(False, kind[len(prefix):])
    return None


#: a list or tuple of instances of one class (``hooks=[CollapseMonitor(...)]``): a loop over it
#: binds each item to an instance of that class
OBJECTS_KIND_PREFIX = "objects:"


def objects_kind(dotted_class: str) -> str:
    return OBJECTS_KIND_PREFIX + dotted_class


def class_of_elements(kind: Optional[str]) -> Optional[ClassRef]:
    """The class of the items of a sequence kind (``objects_kind``), or None."""
    if kind is None or not kind.startswith(OBJECTS_KIND_PREFIX):
        return None
    return ClassRef(False, kind[len(OBJECTS_KIND_PREFIX):])


def class_named(expr: cst.BaseExpression, classes: Container[str], imports: ImportMap) -> Optional[ClassRef]:
    """The class ``expr`` names (``Meter``, ``utils.Meter``), when it looks like one."""
    if not isinstance(expr, (cst.Name, cst.Attribute)):
        return None
    text = dotted(expr)
    if text is None or not text.rsplit(".", 1)[-1][:1].isupper():
        return None
    if text in classes:
        return ClassRef(True, text)
    if imports.imported(text.split(".")[0]):
        qual = imports.qualname(expr)
        if qual is not None:
            return ClassRef(False, qual)
    return None


def unwrap_returning_self(value: cst.BaseExpression) -> cst.BaseExpression:
    """``Net(cfg).to(device).eval()`` -> ``Net(cfg)``: module methods that return the module (and
    ``Scaler().fit(x)`` -> ``Scaler()``, by the estimator convention)."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in _RETURNING_SELF:
        value = value.func.value
    return value


def paired_elements(targets: Sequence[cst.BaseExpression], value: cst.BaseExpression,
                    ) -> List[Tuple[cst.BaseExpression, cst.BaseExpression]]:
    """``a, b = A(), B()``: each target with the value it receives (none when the counts differ
    or a side is starred)."""
    if len(targets) != 1 or not isinstance(targets[0], (cst.Tuple, cst.List)) \
            or not isinstance(value, (cst.Tuple, cst.List)) or len(targets[0].elements) != len(value.elements):
        return []
    pairs = list(zip(targets[0].elements, value.elements))
    if any(isinstance(side, cst.StarredElement) for pair in pairs for side in pair):
        return []
    return [(target.value, part.value) for target, part in pairs]


def constructed_class(value: cst.BaseExpression, classes: Container[str], imports: ImportMap) -> Optional[ClassRef]:
    """The class whose constructor ``value`` calls (``Meter(...)``, ``Net(...).to(device)``), if any."""
    value = unwrap_returning_self(value)
    if isinstance(value, cst.Call):
        return class_named(value.func, classes, imports)
    return None


def keyed_instances(value: cst.BaseExpression, classes: Container[str], imports: ImportMap) -> List[Tuple[str, ClassRef]]:
    """``{"loss": Ema(), "tput": Throughput()}``: (``item_key("loss")``, its class) for each constant key whose
    value is built here, so ``meters["tput"].update(n)`` runs ``Throughput.update`` (see ``item_key``)."""
    if not isinstance(value, cst.Dict):
        return []
    found = []
    for element in value.elements:
        if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) \
                and isinstance(element.key.evaluated_value, str):
            cls = constructed_class(element.value, classes, imports)
            if cls is not None:
                found.append((item_key(element.key.evaluated_value), cls))
    return found


def item_key(key: str) -> str:
    """The suffix naming a dict's item by a constant key (``meters["tput"]`` is ``meters`` + ``item_key("tput")``)."""
    return f"[{key!r}]"


def constant_item(expr: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, str]]:
    """(``meters``, ``item_key("tput")``) for ``meters["tput"]``; None for any other subscript."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        key = expr.slice[0].slice.value
        if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
            return expr.value, item_key(key.evaluated_value)
    return None


def annotated_class(annotation: Optional[cst.Annotation], classes: Container[str], imports: ImportMap) -> Optional[ClassRef]:
    """``meter: Meter`` or ``meter: "Meter"`` (a string annotation naming a local class)."""
    if annotation is None:
        return None
    node = annotation.annotation
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value if isinstance(node.evaluated_value, str) else ""
        return ClassRef(True, text) if text in classes else None
    return class_named(node, classes, imports)


HeldT = TypeVar("HeldT")


class ScopedNames(Generic[HeldT]):
    """What names hold, per scope (a function's dotted prefix; "" is the module): an instance's
    class (``InstanceTable``), or the function a name stands for (``step = torch.compile(train_step)``)."""

    def __init__(self) -> None:
        self._by_scope: Dict[Tuple[str, str], Optional[HeldT]] = {}
        self._names: Set[str] = set()  # every name bound in some scope: most lookups miss at once

    def bind(self, scope: str, name: str, held: Optional[HeldT]) -> None:
        """``name`` now holds ``held`` (None: something else, which hides an outer binding)."""
        self._by_scope[(scope, name)] = held
        self._names.add(name)

    def held_in(self, scope: str, name: str) -> Optional[HeldT]:
        """What ``name`` holds in ``scope`` itself (a class body's ``PHASES = (...)``, read as ``self.PHASES``)."""
        return self._by_scope.get((scope, name)) if name in self._names else None

    def lookup(self, scope: str, name: str) -> Optional[HeldT]:
        """What ``name`` holds seen from ``scope``, looking outwards to the module."""
        if name not in self._names:
            return None
        parts = scope.split(".") if scope else []
        for depth in range(len(parts), -1, -1):
            key = (".".join(parts[:depth]), name)
            if key in self._by_scope:
                return self._by_scope[key]
        return None


#: names bound to instances of known classes
InstanceTable = ScopedNames[ClassRef]
