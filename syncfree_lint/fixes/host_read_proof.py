"""The proof behind SFL101's unsafe fix: when ``.item()`` -> ``.detach()`` keeps the program's behaviour.

The fix turns ``total += loss.item()`` into ``total += loss.detach().double()`` (or ``v =
loss.item()`` into ``v = loss.detach()``) and every other read of the name into ``float(name)``.
``decide`` returns the edits only when all of these hold (the rule's doc lists them in full):
1. one binding form for the name in its scope, no use in a nested scope;
2. the ``.item()`` receiver is proven a floating tensor;
3. every read is where a Python float and ``float(tensor)`` act alike (with ``total = 0``, where
   ``0`` and ``0.0`` act alike too);
4. no in-place change reaches the detached value (else ``.detach().clone()``);
5. every read runs less often than the step (the sync moves out, it is not just moved).
``+=`` accumulates in float64 (``.double()``) because Python floats do: a float32 sum differs in
its last digits, a float16 one by far more; so ``+=`` needs a file whose code names CUDA and no
device without float64 (MPS, XLA, XPU, HPU, NPU) nor an API that may pick one
(``torch.accelerator``, accelerate, lightning): ``analysis.device.named_accelerators``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple, Union

import libcst as cst

from syncfree_lint.analysis.device import named_accelerators
from syncfree_lint.edits import Declined, Replace, code
from syncfree_lint.analysis.number_kind import count_is_int64, is_count, is_float
from syncfree_lint.fixes.scalar_tensor import host_number
from syncfree_lint.analysis.scope_index import BINDERS, FileContext, ScopeIndex
from syncfree_lint.knowledge.dtypes import MAY_ALIAS
from syncfree_lint.knowledge.frequency import FLOAT64_ACCELERATORS
from syncfree_lint.knowledge.sinks import DISPLAY_METHODS

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.scope import Placement

QualName = Callable[[cst.BaseExpression], Optional[str]]

#: calls that format, print or log a number the same whether it is a float or ``float(t)``
_FORMATTERS = frozenset({"print", "str", "repr", "format", "round", "abs"})
_FLOAT_SPEC_TYPES = "eEfFgG%"


@dataclass
class ItemSite:
    """One ``.item()`` finding, as the walk saw it."""
    call: cst.Call
    statement: Optional[cst.CSTNode]
    scope: cst.CSTNode  # the FunctionDef holding it, or the Module
    placement: "Placement"
    # the file's module and what the run says about other files (shared by the file's sites)
    context: FileContext = field(default_factory=FileContext)


@dataclass
class Proof:
    edits: Optional[List[Replace]]
    reason: str  # why declined; "proven" when edits is not None
    wants: Tuple[str, ...] = ()  # functions and classes of other files whose facts could decide (``Declined.wants``)

    @property
    def parts(self) -> Union[List[Replace], Declined]:
        """What the rule's ``FixPlan.build`` returns: the edits, or the reason they were declined."""
        return self.edits if self.edits is not None else Declined(self.reason, self.wants)


def _declined(reason: str) -> Proof:
    return Proof(None, reason)


def decide(site: ItemSite, places: Dict[int, "Placement"], qualname: QualName, source: str,
           cache: Dict[int, ScopeIndex]) -> Proof:
    """The edits of SFL101's fix for ``site``, or the first condition that does not hold.

    ``places`` maps ``id(statement)`` to the walk's placement of that statement."""
    call, statement = site.call, site.statement
    accumulate = isinstance(statement, cst.AugAssign) and isinstance(statement.operator, cst.AddAssign)
    if accumulate:
        target = statement.target  # type: ignore[union-attr]
    elif isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
    else:
        return _declined("not `name += x.item()`, `name += x.item() * n` or `name = x.item()`")
    if not isinstance(target, cst.Name):
        return _declined("not `name += x.item()`, `name += x.item() * n` or `name = x.item()`")
    index = cache.get(id(site.scope))
    if index is None:
        index = cache[id(site.scope)] = ScopeIndex(site.scope, site.context)
    weighted = statement.value is not call  # type: ignore[union-attr]
    if weighted and not (accumulate and _weighted(statement.value, call, index)):  # type: ignore[union-attr]
        return _declined("not `name += x.item()`, `name += x.item() * n` or `name = x.item()`")
    receiver = call.func.value  # type: ignore[attr-defined]
    if is_float(receiver, index, qualname, set()):
        number = "float"
    elif weighted:
        return _declined("`name += x.item() * n` whose value is not proven to be a float")
    elif is_count(receiver, qualname):
        number = "int"  # counts: an int64 tensor on the device, read with int(): exact on every device
    else:
        return _declined("the value is not proven to be a float or an integer count")
    if accumulate and number == "float" and not _float64_device(source):
        return _declined("float64 accumulation needs CUDA: the file's code names no CUDA device, or also another "
                         "accelerator or an API that picks one at run time")
    name = target.value
    assert statement is not None  # a target was read from it
    bindings = _binding_form(index, name, statement, accumulate)
    if isinstance(bindings, str):
        return _declined(bindings)
    reads, inits = bindings
    int_init = "int" in inits.values()
    read_as = number
    if number == "int" and accumulate and "float" in inits.values():
        if int_init:
            return _declined("the counter is started both as an int and as a float")
        read_as = "float"  # `correct = 0.`: an int64 counter from `0`, read as `float(correct)`, as the float was
    for read in reads:
        problem = _self_documenting(read, index) or (
            None if number == "int" else _read_context(read, index, int_init, qualname))
        if problem:
            return _declined(problem)
    problem = _frequency(site, reads, index, places)
    if problem:
        return _declined(problem)
    if number == "int" and accumulate:
        added = code(receiver) if count_is_int64(receiver, qualname) else f"{code(receiver)}.long()"
        parts = [Replace(call, statement, added)]  # total += (pred == y).sum(): an int64 counter never wraps
        parts += [Replace(literal, init, _int_literal(literal))
                  for (literal, init), kind in inits.items() if kind == "float"]
    else:
        if accumulate:
            method = "detach().double"
        else:
            method = "detach().clone" if _may_change_in_place(receiver, index) else "detach"
        parts = [Replace(call.func.attr, statement, method)]  # type: ignore[attr-defined]
    for read in reads:
        if not _already_converted(read, index, read_as):
            parts.append(Replace(read, index.statement_of(read), f"{read_as}({name})"))
    return Proof(parts, "proven")


def _weighted(value: cst.BaseExpression, call: cst.Call, index: ScopeIndex) -> bool:
    """``x.item() * n`` or ``n * x.item()`` with ``n`` a Python number (``x.size(0)``, ``len(batch)``,
    ``x.shape[0]``, ``x.numel()``, a literal, a name bound only to numbers): a float64 tensor times
    ``n`` is the same double product. Not ``/ n``: a float divided by ``0`` raises, a tensor gives inf."""
    if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply)):
        return False
    if value.left is call:
        return host_number(value.right, index) is not None
    return value.right is call and host_number(value.left, index) is not None


@lru_cache(maxsize=8)
def _float64_device(source: str) -> bool:
    """The code (not its comments) names CUDA and no accelerator without float64."""
    try:
        named = named_accelerators(ast.parse(source))
    except (SyntaxError, ValueError):
        return False
    return bool(named) and named <= FLOAT64_ACCELERATORS


# ---------------------------------------------------------------- 1. one binding form
def _binding_form(index: ScopeIndex, name: str, statement: cst.CSTNode, accumulate: bool):
    """(reads, inits) or the reason the name has more than the fix's binding form; ``inits`` maps
    each ``name = <number>`` initialisation of an accumulator (also ``a, name = 0.0, 0.0``), as (the literal,
    its statement), to ``"int"`` or ``"float"``."""
    if name in index.params:
        return "the name is a parameter"
    inits: Dict[Tuple[cst.BaseExpression, cst.CSTNode], str] = {}
    reads: List[cst.Name] = []
    for node, nested in index.occurrences(name):
        if nested:
            return "the name is used in a nested function, lambda, class or comprehension"
        bound_by = index.stores.get(id(node))
        if bound_by is statement:
            continue
        if bound_by is not None:
            literal = _number_literal(bound_by, node)
            if accumulate and literal is not None:  # `total = 0.0` before the loop, resets at log intervals
                inits[(literal, bound_by)] = "float" if isinstance(literal, cst.Float) else "int"
                continue
            return "the name has another binding (assignment, augmented assignment, del or loop target)"
        if any(isinstance(a, (cst.MatchCase,)) for a in index.ancestors(node)) or isinstance(
                index.parent.get(id(node)), BINDERS):
            return "the name is bound another way (import, global/nonlocal, def, with/except target)"
        reads.append(node)
    if accumulate and not inits:
        return "the accumulator has no `name = <number>` initialisation in the same scope"
    return reads, inits


def _number_literal(statement: cst.CSTNode, node: cst.Name) -> Optional[Union[cst.Float, cst.Integer]]:
    """The whole-number literal ``statement`` binds ``node`` to: ``name = 0.0``, ``name = 0``, or ``name``'s element of
    ``a, name = 0.0, 0.0`` (one target, no starred element); else None."""
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0].target, statement.value
    if target is not node:
        if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))
                and len(target.elements) == len(value.elements)):
            return None
        pairs = [(t, v) for t, v in zip(target.elements, value.elements) if t.value is node]
        if len(pairs) != 1 or any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
            return None
        value = pairs[0][1].value
    if isinstance(value, cst.Float) and float(value.value).is_integer():
        return value
    if isinstance(value, cst.Integer):
        return value
    return None


def _int_literal(value: cst.BaseExpression) -> str:
    """``0.`` -> ``0``: the same whole number as an int literal."""
    assert isinstance(value, cst.Float)
    return str(int(float(value.value)))


# ---------------------------------------------------------------- 3. same value at every read
def _is_literal_text_or_container(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List,
                             cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp))


def _is_string(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def _log_call(call: cst.Call, qualname: QualName) -> bool:
    """print, a logger method, ``.log(...)`` of a tracker, ``add_scalar``, ``set_postfix``."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value == "print"
    if isinstance(func, cst.Attribute):
        return func.attr.value in DISPLAY_METHODS  # a float and ``float(t)`` are shown alike
    return False


def _read_context(read: cst.BaseExpression, index: ScopeIndex, int_init: bool, qualname: QualName) -> Optional[str]:
    """None when a Python float and ``float(tensor)`` act alike where ``read`` is used, else why not.

    With an ``int`` initialiser the read may also see ``0``, so only contexts where ``0`` and
    ``0.0`` act alike are accepted."""
    parent = index.parent.get(id(read))
    if isinstance(parent, cst.BinaryOperation):
        other = parent.right if parent.left is read else parent.left
        if isinstance(parent.operator, cst.Modulo) and _is_string(parent.left) and parent.right is read:
            return "%-formatted while the initialiser is an int" if int_init else None
        if not isinstance(parent.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide,
                                            cst.Modulo, cst.Power)):
            return "a bitwise or matrix operator"
        if _is_literal_text_or_container(other):
            return "arithmetic with a string or a container"
        if int_init and not isinstance(parent.operator, cst.Divide):
            return "arithmetic other than `/` on an int-initialised accumulator (0 and 0.0 differ)"
        return None
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, (cst.Minus, cst.Plus)):
        return "unary minus on an int-initialised accumulator" if int_init else None
    if isinstance(parent, cst.Comparison) or isinstance(parent, cst.ComparisonTarget):
        comparison = parent if isinstance(parent, cst.Comparison) else index.parent.get(id(parent))
        if not isinstance(comparison, cst.Comparison):
            return "an unknown comparison"
        if any(not isinstance(t.operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual,
                                           cst.Equal, cst.NotEqual)) for t in comparison.comparisons):
            return "compared with `is`/`in`"
        sides = [comparison.left] + [t.comparator for t in comparison.comparisons]
        if any(_is_literal_text_or_container(side) for side in sides):
            return "compared with a string or a container"
        return None
    if isinstance(parent, cst.FormattedStringExpression) and parent.expression is read:
        if int_init and not _float_spec(parent):
            return "formatted without a float presentation type while the initialiser is an int"
        return None
    if isinstance(parent, cst.Element) and isinstance(index.parent.get(id(parent)), cst.Tuple):
        tuple_node = index.parent.get(id(parent))
        formatting = index.parent.get(id(tuple_node))
        if isinstance(formatting, cst.BinaryOperation) and isinstance(formatting.operator, cst.Modulo) \
                and _is_string(formatting.left) and formatting.right is tuple_node:
            return "%-formatted while the initialiser is an int" if int_init else None
        return "stored in a tuple"
    if isinstance(parent, cst.Arg) and parent.value is read:
        return _argument(parent, index, int_init, qualname)
    if isinstance(parent, cst.DictElement) and parent.value is read:
        holder = index.parent.get(id(parent))
        arg = index.parent.get(id(holder)) if holder is not None else None
        call = index.parent.get(id(arg)) if arg is not None else None
        if isinstance(arg, cst.Arg) and not arg.star and isinstance(call, cst.Call) and _log_call(call, qualname) \
                and not isinstance(call.func, cst.Name):
            return "logged while the initialiser is an int" if int_init else None
        return "stored in a dict"
    if isinstance(parent, cst.Assign) and parent.value is read and len(parent.targets) == 1 \
            and isinstance(parent.targets[0].target, cst.Name):
        return "copied to another name while the initialiser is an int" if int_init else None
    if isinstance(parent, cst.AugAssign) and parent.value is read and isinstance(parent.target, cst.Name):
        return "added to another name while the initialiser is an int" if int_init else None
    return f"used as {type(parent).__name__ if parent is not None else 'a statement'}" \
        " (container, attribute, subscript, return, hash, truth value, identity...)"


def _argument(arg: cst.Arg, index: ScopeIndex, int_init: bool, qualname: QualName) -> Optional[str]:
    call = index.parent.get(id(arg))
    if not isinstance(call, cst.Call) or call.func is arg.value:
        return "called"
    if arg.star:
        return "unpacked with * or **"
    func = call.func
    if _is_float_call(call):
        return None
    builtin = func.value if isinstance(func, cst.Name) else None
    if builtin in _FORMATTERS and arg.keyword is None:
        if builtin != "print" and call.args[0] is not arg:
            return f"not the value argument of {builtin}()"
        return f"passed to {builtin}() while the initialiser is an int" if int_init else None
    if isinstance(func, cst.Attribute) and func.attr.value == "format" and _is_string(func.value):
        return "str.format() while the initialiser is an int" if int_init else None
    if _log_call(call, qualname) and not isinstance(func, cst.Name):
        return "logged while the initialiser is an int" if int_init else None
    qual = qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if qual and qual.startswith("math.") and not int_init:
        return None
    return "passed to a function that may treat a float and a tensor differently"


def _is_float_call(call: cst.Call, number: str = "float") -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == number and len(call.args) == 1 \
        and not call.args[0].star and call.args[0].keyword is None


def _already_converted(read: cst.Name, index: ScopeIndex, number: str) -> bool:
    """``float(total)`` already (``int(correct)`` for a count)."""
    arg = index.parent.get(id(read))
    call = index.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and _is_float_call(call, number)


def _self_documenting(read: cst.CSTNode, index: ScopeIndex) -> Optional[str]:
    """Why a read cannot be rewritten when it sits in an f-string ``{expr=}``, which prints the
    expression's text (a count is read as ``int(name)`` in any other expression, the same value)."""
    for ancestor in index.ancestors(read):
        if isinstance(ancestor, cst.FormattedStringExpression) and ancestor.equal is not None:
            return "an f-string `{name=}` prints the expression's text"
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return None
    return None


def _float_spec(expression: cst.FormattedStringExpression) -> bool:
    """``{x:.4f}``-like: a literal spec ending in a float presentation type, no conversion."""
    spec = expression.format_spec
    if expression.conversion is not None or not spec:
        return False
    texts = [part.value for part in spec if isinstance(part, cst.FormattedStringText)]
    if len(texts) != len(spec):
        return False
    text = "".join(texts)
    return bool(text) and text[-1] in _FLOAT_SPEC_TYPES


# ---------------------------------------------------------------- 4. no aliasing
def _may_change_in_place(receiver: cst.BaseExpression, index: ScopeIndex) -> bool:
    """Could the tensor ``receiver.detach()`` shares storage with be changed later in the scope?

    Storage is shared along alias edges, ``a = b`` or ``a = b.detach()``/``.view(...)``/... (the
    methods that may return a view), in both directions: with ``raw = loss.detach()`` reading
    ``raw``, an in-place ``loss /= accum`` reaches it, and so does ``flat = loss.view(-1);
    flat.mul_(2)`` reading ``loss``. A name bound another way (parameter, attribute, subscript)
    may be held elsewhere: it counts as changed."""
    root = _alias_root(receiver)
    if isinstance(root, (cst.Call, cst.BinaryOperation, cst.UnaryOperation)):
        return False  # a new tensor nobody else holds
    if not isinstance(root, cst.Name):
        return True
    names, pending = {root.value}, [root.value]
    while pending:
        name = pending.pop()
        for node, nested in index.occurrences(name):
            if nested:
                return True
            other = _alias_edge(node, index)
            if other is True:
                return True
            if isinstance(other, str) and other not in names:
                names.add(other)
                pending.append(other)
            if _changed_in_place(node, index):
                return True
    return False


def _alias_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in MAY_ALIAS:
        expr = expr.func.value
    return expr


def _alias_edge(node: cst.Name, index: ScopeIndex):
    """The other name ``node`` shares storage with through its assignment (``node = other.view()``,
    or ``other = node.detach()``); True when it is bound to something that may be held elsewhere."""
    bound_by = index.stores.get(id(node))
    if isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1 and bound_by.targets[0].target is node:
        value = _alias_root(bound_by.value)
        if isinstance(value, cst.Name):
            return value.value
        return isinstance(value, (cst.Attribute, cst.Subscript))
    top: cst.CSTNode = node
    while True:
        parent = index.parent.get(id(top))
        grand = index.parent.get(id(parent)) if isinstance(parent, cst.Attribute) else None
        if isinstance(parent, cst.Attribute) and parent.value is top and isinstance(grand, cst.Call) \
                and grand.func is parent and parent.attr.value in MAY_ALIAS:
            top = grand
            continue
        break
    statement = index.parent.get(id(top))
    if isinstance(statement, cst.Assign) and statement.value is top:
        targets = [t.target for t in statement.targets]
        if len(targets) == 1 and isinstance(targets[0], cst.Name):
            return targets[0].value
        return True  # stored in an attribute, an item or several names
    return None


def _changed_in_place(node: cst.Name, index: ScopeIndex) -> bool:
    """``node /= k``, ``node.mul_(...)``/``node.data.div_(...)``, ``node[...] = ...``, ``out=node``."""
    if isinstance(index.stores.get(id(node)), cst.AugAssign):
        return True  # ``loss /= accum`` is in place on a tensor
    parent = index.parent.get(id(node))
    if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "out":
        return True
    chain = parent
    while isinstance(chain, cst.Attribute):
        grand = index.parent.get(id(chain))
        if isinstance(grand, cst.Call) and grand.func is chain and chain.attr.value.endswith("_") \
                and not chain.attr.value.startswith("_"):
            return True  # loss.mul_(...), loss.data.div_(...)
        chain = grand
    return isinstance(parent, cst.Subscript) and any(
        isinstance(a, (cst.AssignTarget, cst.AugAssign)) for a in index.ancestors(parent))


# ---------------------------------------------------------------- 5. the sync moves out of the step
def _frequency(site: ItemSite, reads: List[cst.Name], index: ScopeIndex, places: Dict[int, "Placement"]) -> Optional[str]:
    """Each read is guarded, or (for a statement in a step loop of a function that is not itself a
    step) outside every step loop: after it, in the epoch code, not in a validation loop."""
    here = site.placement
    if here.guarded:
        return "the `.item()` is already under a guard"
    in_step_loop = any(loop.is_step for loop in here.loops)
    step_function = here.function is not None and here.function.is_step
    for read in reads:
        statement = index.statement_of(read)
        placement = places.get(id(statement)) if statement is not None else None
        if placement is None:
            return "a read whose place in the step is unknown"
        if placement.guarded or (in_step_loop and not step_function and not any(loop.is_step for loop in placement.loops)):
            continue
        return "a read stays at step frequency (the sync would only move)"
    return None


@lru_cache(maxsize=8)
def torch_module_name(source: str) -> Optional[str]:
    """The name a top-level ``import torch`` (or ``import torch as th``) binds, if the module has one."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch":
                    return alias.asname or "torch"
                if alias.asname is None and alias.name.startswith("torch."):
                    return "torch"  # `import torch.nn` binds `torch` too
    return None


#: what the history-list and meter fixes (``fixes/host_list.py``, ``fixes/meter_update.py``) share
#: with this proof
read_frequency = _frequency
may_change_in_place = _may_change_in_place
self_documenting = _self_documenting
read_context = _read_context
weighted = _weighted
float64_device = _float64_device
