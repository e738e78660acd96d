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
its last digits, a float16 one by far more; so ``+=`` needs a file that names CUDA and no device
without float64 (MPS, XLA, XPU, HPU, NPU) nor an API that may pick one (``torch.accelerator``,
HF ``Accelerator``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.fixes.plan import Replace

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.scope import Placement

QualName = Callable[[cst.BaseExpression], Optional[str]]

_NESTED = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_BINDERS = (cst.ImportAlias, cst.AsName, cst.NameItem, cst.Param, cst.FunctionDef, cst.ClassDef, cst.MatchAs,
            cst.MatchStar, cst.MatchMapping, cst.MatchKeywordElement, cst.Global, cst.Nonlocal, cst.ImportFrom)
_CUDA = re.compile(r"(?<![A-Za-z])cuda(?![A-Za-z])", re.IGNORECASE)
#: devices without (fast or any) float64, and APIs that may pick one at run time
_NO_FLOAT64 = re.compile(r"(?<![A-Za-z])(mps|xla|xpu|hpu|npu|accelerator)(?![A-Za-z])", re.IGNORECASE)

#: tensor methods / torch functions whose result is floating whatever the input's dtype (or that
#: raise on integer input): ``.mean()`` of an integer tensor is an error, ``.sqrt()`` promotes
FLOAT_RESULT = frozenset({"mean", "nanmean", "norm", "std", "var", "sqrt", "rsqrt", "exp", "log", "log2", "log10",
                          "log1p", "sigmoid", "softmax", "log_softmax", "tanh", "float", "double", "half",
                          "bfloat16", "div", "true_divide", "reciprocal"})
#: methods that keep the receiver's dtype
SAME_DTYPE = frozenset({"sum", "nansum", "abs", "neg", "detach", "clone", "cpu", "cuda", "contiguous", "squeeze",
                        "unsqueeze", "view", "reshape", "flatten", "mul", "add", "sub", "max", "min", "amax", "amin"})
#: of those, the ones that may return the receiver itself or a view of it
MAY_ALIAS = frozenset({"detach", "float", "double", "half", "bfloat16", "cpu", "cuda", "contiguous", "squeeze",
                       "unsqueeze", "view", "reshape", "flatten", "to"})
F_LOSSES = frozenset({"cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                      "kl_div", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "ctc_loss"})
FLOAT_DTYPES = frozenset({"torch." + n for n in ("float", "float32", "float64", "double", "half", "float16", "bfloat16")})
#: calls that format, print or log a number the same whether it is a float or ``float(t)``
_FORMATTERS = frozenset({"print", "str", "repr", "format", "round", "abs"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log",
                          "log_metric", "log_metrics", "add_scalar", "set_postfix", "log_dict"})
_FLOAT_SPEC_TYPES = "eEfFgG%"
_LOSS_WORDS = frozenset({"loss", "criterion", "crit", "losses"})
_NOT_LOSS_WORDS = frozenset({"scaler", "scale", "scaling", "weight", "weights", "count", "idx", "index", "num", "steps"})


@dataclass
class ItemSite:
    """One ``.item()`` finding, as the walk saw it."""
    call: cst.Call
    statement: Optional[cst.CSTNode]
    scope: cst.CSTNode  # the FunctionDef holding it, or the Module
    placement: "Placement"


@dataclass
class Proof:
    parts: Optional[List[Replace]]
    reason: str  # why declined; "proven" when parts is not None


def _declined(reason: str) -> Proof:
    return Proof(None, reason)


class ScopeIndex:
    """Every Name of one scope by value (with whether it sits in a nested scope), each node's
    parent, and the assignment statement that binds each stored Name."""

    def __init__(self, scope: cst.CSTNode) -> None:
        self.names: Dict[str, List[Tuple[cst.Name, bool]]] = {}
        self.parent: Dict[int, cst.CSTNode] = {}
        self.stores: Dict[int, cst.CSTNode] = {}
        self.params: Set[str] = set()
        if isinstance(scope, cst.FunctionDef):
            self.params = {p.name.value for p in _params(scope.params)}
            roots: List[cst.CSTNode] = [scope.body]
        else:
            roots = list(getattr(scope, "body", ()))
        stack: List[Tuple[cst.CSTNode, bool]] = [(root, False) for root in roots]
        while stack:
            node, nested = stack.pop()
            if isinstance(node, cst.Name):
                self.names.setdefault(node.value, []).append((node, nested))
            if not nested:
                self._note_stores(node)
            inner = nested or isinstance(node, _NESTED)
            for child in node.children:
                self.parent[id(child)] = node
                stack.append((child, inner))

    def _note_stores(self, node: cst.CSTNode) -> None:
        targets: List[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del)):
            targets = [node.target]
        for target in targets:
            for name in _bound_names(target):
                self.stores[id(name)] = node

    def occurrences(self, name: str) -> List[Tuple[cst.Name, bool]]:
        """Names with this value that are variables (not ``x.name``, not ``f(name=...)``)."""
        out = []
        for node, nested in self.names.get(name, ()):
            parent = self.parent.get(id(node))
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            out.append((node, nested))
        return out

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        current: Optional[cst.CSTNode] = node
        while current is not None and not isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            current = self.parent.get(id(current))
        return current

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent.get(id(node))
        while current is not None:
            yield current
            current = self.parent.get(id(current))


def _params(params: cst.Parameters) -> List[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    out += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return out


def _bound_names(target: cst.CSTNode) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _bound_names(target.value)


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
        return _declined("not `name += x.item()` or `name = x.item()`")
    if not isinstance(target, cst.Name) or statement.value is not call:  # type: ignore[union-attr]
        return _declined("not `name += x.item()` or `name = x.item()`")
    if accumulate and (_NO_FLOAT64.search(source) or not _CUDA.search(source)):
        return _declined("float64 accumulation needs CUDA or CPU: the file names another device or API, or no CUDA")
    index = cache.get(id(site.scope))
    if index is None:
        index = cache[id(site.scope)] = ScopeIndex(site.scope)
    name = target.value
    bindings = _binding_form(index, name, statement, accumulate)
    if isinstance(bindings, str):
        return _declined(bindings)
    receiver = call.func.value  # type: ignore[attr-defined]
    if not _is_float(receiver, index, qualname, set()):
        return _declined("the value is not proven to be a float")
    reads, int_init = bindings
    for read in reads:
        problem = _read_context(read, index, int_init, qualname)
        if problem:
            return _declined(problem)
    problem = _frequency(site, reads, index, places)
    if problem:
        return _declined(problem)
    if accumulate:
        method = "detach().double"
    else:
        method = "detach().clone" if _may_change_in_place(receiver, index) else "detach"
    parts = [Replace(call.func.attr, statement, method)]  # type: ignore[attr-defined]
    for read in reads:
        if not _already_float(read, index):
            parts.append(Replace(read, index.statement_of(read), f"float({name})"))
    return Proof(parts, "proven")


# ---------------------------------------------------------------- 1. one binding form
def _binding_form(index: ScopeIndex, name: str, statement: cst.CSTNode, accumulate: bool):
    """(reads, int_init) or the reason the name has more than the fix's binding form."""
    if name in index.params:
        return "the name is a parameter"
    init: Optional[cst.CSTNode] = None
    int_init = False
    reads: List[cst.Name] = []
    for node, nested in index.occurrences(name):
        if nested:
            return "the name is used in a nested function, lambda, class or comprehension"
        bound_by = index.stores.get(id(node))
        if bound_by is statement:
            continue
        if bound_by is not None:
            literal = _number_literal(bound_by)
            if accumulate and init is None and literal is not None:
                init, int_init = bound_by, literal == "int"
                continue
            return "the name has another binding (assignment, augmented assignment, del or loop target)"
        if any(isinstance(a, (cst.MatchCase,)) for a in index.ancestors(node)) or isinstance(
                index.parent.get(id(node)), _BINDERS):
            return "the name is bound another way (import, global/nonlocal, def, with/except target)"
        reads.append(node)
    if accumulate and init is None:
        return "the accumulator has no single `name = <number>` initialisation in the same scope"
    return reads, int_init


def _number_literal(statement: cst.CSTNode) -> Optional[str]:
    """``"float"``/``"int"`` for ``name = 0.0`` / ``name = 0`` (one target), else None."""
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return None
    value = statement.value
    if isinstance(value, cst.Float):
        return "float"
    if isinstance(value, cst.Integer):
        return "int"
    return None


# ---------------------------------------------------------------- 2. a float
def _is_float(expr: cst.BaseExpression, index: ScopeIndex, qualname: QualName, seen: Set[str]) -> bool:
    """Positive evidence that ``expr`` is a floating tensor (or a Python float)."""
    if isinstance(expr, cst.Name):
        return _name_is_float(expr.value, index, qualname, seen)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return _is_float(expr.expression, index, qualname, seen)
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Divide):
            return True  # true division
        if isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Power, cst.FloorDivide)):
            return any(isinstance(side, cst.Float) or _is_float(side, index, qualname, seen)
                       for side in (expr.left, expr.right))
        return False
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    qual = qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if qual and qual.startswith("torch."):
        last = qual.rsplit(".", 1)[-1]
        if last in F_LOSSES or "loss" in last or last in FLOAT_RESULT:
            return True
        if last in SAME_DTYPE and expr.args and not expr.args[0].keyword:
            return _is_float(expr.args[0].value, index, qualname, seen)
        return False
    callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    lowered = callee.lower() if isinstance(callee, str) else ""
    if isinstance(func, cst.Attribute):
        if lowered in FLOAT_RESULT:
            return True
        if lowered == "to":
            dtype = [a.value for a in expr.args if a.keyword is None or a.keyword.value == "dtype"]
            if any((qualname(d) if isinstance(d, (cst.Name, cst.Attribute)) else None) in FLOAT_DTYPES for d in dtype):
                return True
            return False
        if lowered in SAME_DTYPE:
            return _is_float(func.value, index, qualname, seen)
    return _names_a_loss(lowered)  # criterion(out, y), self.loss_fn(...), compute_loss(...)


def _names_a_loss(callee: str) -> bool:
    words = set(re.split(r"[^a-z0-9]+", callee))
    return bool(words & _LOSS_WORDS) and not words & _NOT_LOSS_WORDS


def _name_is_float(name: str, index: ScopeIndex, qualname: QualName, seen: Set[str]) -> bool:
    """Every binding of ``name`` in the scope is a float (``x /= k`` and in-place ``+=``/``-=``/``*=``
    keep a float tensor float), and there is at least one plain assignment."""
    if name in seen or name in index.params:
        return False
    seen = seen | {name}
    assigned = False
    for node, nested in index.occurrences(name):
        if nested:
            continue
        bound_by = index.stores.get(id(node))
        if bound_by is None:
            if isinstance(index.parent.get(id(node)), _BINDERS):
                return False
            continue
        if isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1 and bound_by.targets[0].target is node:
            if not _is_float(bound_by.value, index, qualname, seen):
                return False
            assigned = True
        elif isinstance(bound_by, cst.AugAssign):
            if not isinstance(bound_by.operator, (cst.DivideAssign, cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign)):
                return False
        else:
            return False
    return assigned


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
        return func.attr.value in _LOG_METHODS
    return False


def _read_context(read: cst.Name, index: ScopeIndex, int_init: bool, qualname: QualName) -> Optional[str]:
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
        if parent.equal is not None:
            return "an f-string `{name=}` prints the expression's text"
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


def _is_float_call(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "float" and len(call.args) == 1 \
        and not call.args[0].star and call.args[0].keyword is None


def _already_float(read: cst.Name, index: ScopeIndex) -> bool:
    arg = index.parent.get(id(read))
    call = index.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and _is_float_call(call)


def _float_spec(expression: cst.FormattedStringExpression) -> bool:
    """``{x:.4f}``-like: a literal spec ending in a float presentation type, no conversion."""
    spec = expression.format_spec
    if expression.conversion is not None or not spec:
        return False
    if not all(isinstance(part, cst.FormattedStringText) for part in spec):
        return False
    text = "".join(part.value for part in spec)  # type: ignore[union-attr]
    return bool(text) and text[-1] in _FLOAT_SPEC_TYPES


# ---------------------------------------------------------------- 4. no aliasing
def _may_change_in_place(receiver: cst.BaseExpression, index: ScopeIndex) -> bool:
    """Could the tensor ``receiver.detach()`` shares storage with be changed later in the scope?"""
    root = receiver
    while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute) and root.func.attr.value in MAY_ALIAS:
        root = root.func.value
    if isinstance(root, (cst.Call, cst.BinaryOperation, cst.UnaryOperation)):
        return False  # a new tensor nobody else holds
    if not isinstance(root, cst.Name):
        return True
    for node, nested in index.occurrences(root.value):
        if nested:
            return True
        bound_by = index.stores.get(id(node))
        if isinstance(bound_by, cst.AugAssign):
            return True  # ``loss /= accum`` is in place on a tensor
        parent = index.parent.get(id(node))
        if isinstance(parent, cst.Assign) and parent.value is node:
            return True  # an alias that may be changed in place
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "out":
            return True
        chain = parent
        while isinstance(chain, cst.Attribute):
            grand = index.parent.get(id(chain))
            if isinstance(grand, cst.Call) and grand.func is chain and chain.attr.value.endswith("_") \
                    and not chain.attr.value.startswith("_"):
                return True  # loss.mul_(...), loss.data.div_(...)
            chain = grand
        if isinstance(parent, cst.Subscript) and any(
                isinstance(a, (cst.AssignTarget, cst.AugAssign)) for a in index.ancestors(parent)):
            return True  # loss[...] = ...
    return False


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
