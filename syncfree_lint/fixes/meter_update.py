"""SFL101's unsafe fix for a running-average meter: ``meter.update(loss.item(), n)`` ->
``meter.update(loss.detach().double(), n)``.

The meter then adds, multiplies and divides float64 device tensors, the doubles its Python floats
were, with no host read per step; the places that read it get the numbers back. ``decide``
proves, or declines with the reason:
1. ``meter`` is a local name bound once in the scope, to ``Cls(...)``, and ``Cls`` is a meter of a
   known shape: a library class in ``knowledge/meters.py`` or a class of this file that
   ``analysis/meter_class.py`` proves only does ``+ - * /`` with the value;
2. the weight, when given, is a Python number (``x.size(0)``, ``len(...)``, a literal...);
3. the ``.item()`` receiver is proven a floating tensor, and the file's code names CUDA and no
   device without float64 (the float64 check of ``fixes/host_read_proof.py``);
4. the meter is only updated, reset and read through its attributes (never handed whole to other
   code, except as a keyword of a literal ``str.format`` whose fields read attributes);
5. every read of an attribute that holds the value runs less often than the step, and none reads
   a field the meter divides by a count (``avg = sum / count``): CUDA divides a tensor by a host
   number as a multiplication by its reciprocal, and the double can differ in the last bit (a GPU
   run of ``fixtures/fix_programs/sfl101_meter_local.py`` returned ``0.7295691942175229`` for
   ``0.729569194217523``; the stand-in now divides the CUDA way, so CPU CI sees it too).
A read that formats (an f-string field or ``str.format`` without ``!r``/``!s``) stays as it is: a
0-d tensor formats as its Python number does (``Tensor.__format__``). Other reads become
``float(meter.avg)`` where a Python float and ``float(tensor)`` act alike (with fields that start
as the int ``0``: where ``0`` and ``0.0`` act alike too); elsewhere, for a meter this is the only
update of, ``float(meter.avg)`` where the fields start as floats, else
``torch.as_tensor(meter.avg).item()``: the int ``0`` of a meter never updated stays an int, a
float64 tensor gives its float.
"""
from __future__ import annotations

import string
from typing import Dict, List, Optional, Tuple, Union

import libcst as cst

from syncfree_lint.edits import Replace, code
from syncfree_lint.fixes import host_read_proof as proof
from syncfree_lint.analysis.meter_class import shape_of
from syncfree_lint.analysis.number_kind import is_float
from syncfree_lint.fixes.scalar_tensor import host_number
from syncfree_lint.analysis.scope_index import FileContext, ScopeIndex
from syncfree_lint.knowledge.meters import KNOWN_METERS, MeterShape

Read = Tuple[cst.CSTNode, str]  # (the node read, "format" | "converted" | "float" | "exact")


def decide(site: proof.ItemSite, outer: cst.Call, places: Dict[int, object], qualname: proof.QualName, source: str,
           cache: Dict[int, ScopeIndex]) -> proof.Proof:
    """The edits for ``outer`` (``meter.update(x.item(), ...)``), or the first condition that fails."""
    func = outer.func
    assert isinstance(func, cst.Attribute)
    if not isinstance(func.value, cst.Name):
        return _declined("not `meter.update(x.item(), ...)` on a local name")
    name = func.value.value
    index = cache.get(id(site.scope))
    if index is None:
        index = cache[id(site.scope)] = ScopeIndex(site.scope, site.context)
    shape = _shape(name, index, qualname, site)
    if isinstance(shape, tuple):
        reason, wanted = shape
        return proof.Proof(None, reason, (wanted,) if wanted else ())
    problem = _arguments(outer, shape, index)
    if problem:
        return _declined(problem)
    value = outer.args[0].value
    if value is not site.call and not proof.weighted(value, site.call, index):
        return _declined("the value is `x.item() * k` with `k` not proven a Python number")
    receiver = site.call.func.value  # type: ignore[attr-defined]
    if not is_float(receiver, index, qualname, set()):
        return _declined("the value is not proven to be a float")
    if not proof.float64_device(source):
        return _declined("float64 on the device needs CUDA: the file's code names no CUDA device, or also another "
                         "accelerator or an API that picks one at run time")
    uses = _uses(name, index, shape, qualname)
    if isinstance(uses, str):
        return _declined(uses)
    reads, updates = uses
    torch = proof.torch_module_name(source)
    if any(kind == "exact" for _, kind in reads) and (updates != 1 or torch is None):
        return _declined("a read where a float and the int `0` of a fresh meter act differently, and the meter has "
                         "other updates (or the file does not `import torch`)")
    problem = proof.read_frequency(site, [node for node, _ in reads], index, places)  # type: ignore[arg-type]
    if problem:
        return _declined(problem)
    method = "detach().clone().double" if proof.may_change_in_place(receiver, index) else "detach().double"
    parts = [Replace(site.call.func.attr, site.statement, method)]  # type: ignore[attr-defined]
    for node, kind in reads:
        statement = index.statement_of(node)
        if kind == "float":
            parts.append(Replace(node, statement, f"float({code(node)})"))
        elif kind == "exact" and not shape.int_start:  # a float from the start: float() gives it back
            parts.append(Replace(node, statement, f"float({code(node)})"))
        elif kind == "exact":
            parts.append(Replace(node, statement, f"{torch}.as_tensor({code(node)}).item()"))
    return proof.Proof(parts, "proven")


def _declined(reason: str) -> proof.Proof:
    return proof.Proof(None, reason)


def _shape(name: str, index: ScopeIndex, qualname: proof.QualName,
           site: proof.ItemSite) -> Union[MeterShape, Tuple[str, Optional[str]]]:
    """The meter shape of the class ``name`` is bound to an instance of (once, in this scope), or
    (why not, the dotted name of another file's class whose facts could tell)."""
    if name in index.params:
        return f"`{name}` is a parameter: the meter is built elsewhere", None
    constructors = []
    for node, nested in index.occurrences(name):
        bound_by = index.stores.get(id(node))
        if bound_by is None:
            continue
        if nested or not (isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1
                          and bound_by.targets[0].target is node and isinstance(bound_by.value, cst.Call)):
            return f"`{name}` has a binding other than `{name} = Meter(...)`", None
        constructors.append(bound_by.value)
    if len(constructors) != 1:
        return f"`{name}` is not bound once in the scope, to `Meter(...)`", None
    cls = constructors[0].func
    dotted = qualname(cls) if isinstance(cls, (cst.Name, cst.Attribute)) else None
    local = _local_class(cls, site.context)
    if local is not None:
        shape = shape_of(local)
        return (shape, None) if isinstance(shape, str) else shape
    known = KNOWN_METERS.get(dotted or "") or (site.context.imported_meter(dotted) if dotted else None)
    if known is not None:
        return known
    return ("`meter.update(x.item(), ...)`: the meter's class is not known to only add the value (neither defined "
            "in this file, nor a meter of the project or of `knowledge/meters.py`)", dotted if dotted and "." in dotted else None)


def _local_class(cls: cst.BaseExpression, context: FileContext) -> Optional[cst.ClassDef]:
    """The module-level class ``cls`` names, when the module binds the name only to it."""
    if not isinstance(cls, cst.Name):
        return None
    found = context.definition(cls.value)
    return found if isinstance(found, cst.ClassDef) else None


def _arguments(call: cst.Call, shape: MeterShape, index: ScopeIndex) -> Optional[str]:
    """The value comes first and the weight, if any, is a Python number."""
    if call.func.attr.value != shape.method:  # type: ignore[attr-defined]
        return f"the meter's value method is `{shape.method}`"
    rest = call.args[1:]
    if len(rest) > 1 or (rest and (shape.weight is None or rest[0].star)):
        return "more arguments than the value and its count"
    if rest:
        keyword = rest[0].keyword
        if keyword is not None and shape.weight is not None and keyword.value != shape.weight[1]:
            return f"the keyword `{keyword.value}` is not the meter's count"
        if host_number(rest[0].value, index) is None:
            return "the count is not proven a Python number"
    return None


def _uses(name: str, index: ScopeIndex, shape: MeterShape, qualname: proof.QualName):
    """(reads of value fields with how each is read, number of ``update`` calls), or why the meter
    is used in another way."""
    reads: List[Read] = []
    updates = 0
    for node, nested in index.occurrences(name):
        if index.stores.get(id(node)) is not None:
            continue  # the one constructor binding (``_shape``)
        if nested:
            return f"`{name}` is used in a nested function, lambda, class or comprehension"
        parent = index.parent.get(id(node))
        grand = index.parent.get(id(parent)) if parent is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is node:
            attr = parent.attr.value
            called = isinstance(grand, cst.Call) and grand.func is parent
            if any(isinstance(a, (cst.AssignTarget, cst.AugAssign, cst.Del)) for a in index.ancestors(parent)) \
                    and _is_target(parent, index):
                return f"`{name}.{attr}` is assigned"
            if called:
                if attr == shape.method:
                    updates += 1
                elif attr not in shape.methods:
                    return f"`{name}.{attr}()` is not a method the meter is known to run without reading the value"
                continue
            if attr in shape.divided:
                return _divided(name, attr)
            if attr in shape.fields:
                kind = _read_kind(parent, index, shape, qualname)
                if kind is None:
                    return f"`{name}.{attr}` is read where a tensor would act differently"
                reads.append((parent, kind))
            continue
        formatted = _format_keyword(node, index, shape)
        if isinstance(formatted, str):
            return _divided(name, formatted)
        if formatted is True:
            reads.append((node, "format"))
            continue
        if formatted is False:
            continue
        return f"the meter is handed to other code (`{code(grand if grand is not None else node)}`)"
    return reads, updates


def _divided(name: str, attr: str) -> str:
    return (f"`{name}.{attr}` is divided by a count in the meter: CUDA divides a tensor by a host number as a "
            f"multiplication by its reciprocal, which can change the last bit of the float it shows")


def _is_target(attribute: cst.Attribute, index: ScopeIndex) -> bool:
    statement = index.parent.get(id(attribute))
    if isinstance(statement, cst.AssignTarget) and statement.target is attribute:
        return True
    return isinstance(statement, (cst.AugAssign, cst.Del)) and statement.target is attribute  # type: ignore[union-attr]


def _read_kind(read: cst.Attribute, index: ScopeIndex, shape: MeterShape, qualname: proof.QualName) -> Optional[str]:
    """How a read of a value field keeps its behaviour: "format", "converted", "float" or "exact";
    None for an f-string ``{meter.avg=}``."""
    if proof.self_documenting(read, index):
        return None
    parent = index.parent.get(id(read))
    if isinstance(parent, cst.FormattedStringExpression) and parent.expression is read:
        return "format" if parent.conversion is None else "exact"
    if isinstance(parent, cst.Arg) and parent.value is read and not parent.star and _literal_format(index.parent.get(id(parent))):
        return "format"
    if isinstance(parent, cst.Arg) and parent.value is read and not parent.star and parent.keyword is None:
        call = index.parent.get(id(parent))
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "float" \
                and len(call.args) == 1:
            return "converted"
    if proof.read_context(read, index, shape.int_start, qualname) is None:  # type: ignore[arg-type]
        return "float"
    return "exact"


def _literal_format(call: Optional[cst.CSTNode]) -> bool:
    """``"...".format(...)`` on a literal whose fields have no ``!r``/``!s``/``!a`` conversion."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "format"):
        return False
    fields = _format_fields(call.func.value)
    return fields is not None and all(conversion is None for _, conversion in fields)


def _format_fields(literal: cst.BaseExpression) -> Optional[List[Tuple[str, Optional[str]]]]:
    """(field name, conversion) of each replacement field of a literal format string."""
    if not isinstance(literal, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    text = literal.evaluated_value
    if not isinstance(text, str):
        return None
    try:
        return [(field, conversion) for _, field, _, conversion in string.Formatter().parse(text) if field is not None]
    except ValueError:
        return None


def _format_keyword(node: cst.Name, index: ScopeIndex, shape: MeterShape) -> Union[bool, str, None]:
    """The meter passed as ``kw=meter`` to a literal ``str.format``: True when a field reads a value
    attribute (``{kw.avg:.3f}``), False when fields read only others, the attribute when one reads
    a divided field; None when not that, or a field reads it another way (whole, an item, a
    conversion)."""
    arg = index.parent.get(id(node))
    if not (isinstance(arg, cst.Arg) and arg.value is node and arg.keyword is not None and not arg.star):
        return None
    call = index.parent.get(id(arg))
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "format"):
        return None
    fields = _format_fields(call.func.value)
    if fields is None:
        return None
    keyword, reads_value = arg.keyword.value, False
    for field, conversion in fields:
        head, _, rest = field.partition(".")
        if head.partition("[")[0] != keyword:
            continue
        if conversion is not None or "[" in field or not rest or "." in rest:
            return None
        if rest in shape.divided:
            return rest
        reads_value = reads_value or rest in shape.fields
    return reads_value
