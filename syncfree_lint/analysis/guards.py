"""Guards: what an ``if`` test or an early exit says about how often the code under it runs.

An interval test (``step % k == 0``), a logging or opt-in flag (``if args.debug:``), an equality
with a host number, a memo that fills once, an exit that ends the run or leaves by an error. The
walk (``analysis.frequency``) asks these of each guard; they read syntax only.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Union

import libcst as cst

from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.instances import paired_elements
from syncfree_lint.analysis.kinds import DEVICE_TENSORS
from syncfree_lint.analysis.nodes import code_children, walk_code
from syncfree_lint.knowledge import frequency as facts
from syncfree_lint.knowledge.sinks import DISPLAY_FUNCTIONS, LOGGER_METHODS


def has_modulo(expr: cst.BaseExpression) -> bool:
    """True when a test uses ``%`` on numbers (an interval guard), not string formatting."""
    stack: List[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation):
            if _is_modulo(node):
                return True
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.Comparison):
            stack.append(node.left)
            stack.extend(t.comparator for t in node.comparisons)
        elif isinstance(node, cst.BooleanOperation):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif isinstance(node, cst.Call):
            stack.extend(arg.value for arg in node.args)
    return False


def is_mostly_true_interval(test: cst.BaseExpression) -> bool:
    """``step % k != 0``, ``step % k > 0`` or a bare ``step % k``: true on all but one step in ``k``. Its body runs
    nearly every step (no guard); an early exit under it leaves the rest of the loop to one step in ``k``."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        zero = isinstance(comparison.comparator, cst.Integer) and int(comparison.comparator.value, 0) == 0
        return zero and isinstance(comparison.operator, (cst.NotEqual, cst.GreaterThan)) and _is_modulo(test.left)
    return _is_modulo(test)


def _is_modulo(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo) and not isinstance(
        expr.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def _flag_name(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Call):  # ``if self.should_log():`` / ``if is_debug():``
        return _flag_name(expr.func)
    return None


def is_flag_guard(expr: cst.BaseExpression, logging_words: Sequence[str], opt_in_words: Sequence[str]) -> bool:
    """``if args.with_tracking:`` (logs only), ``if self.cfg.debug:`` (opt-in): not per step.

    ``a and b`` is guarded when either side is; ``not flag`` is the flag's own branch inverted
    and is not a guard here (see ``is_negated_flag`` for early exits)."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return is_flag_guard(expr.left, logging_words, opt_in_words) or is_flag_guard(expr.right, logging_words, opt_in_words)
    name = _flag_name(expr)
    if name is None:
        return False
    return facts.words_match(name, logging_words) or facts.words_match(name, opt_in_words)


def is_negated_flag(expr: cst.BaseExpression) -> bool:
    """``not should_log`` / ``not self.is_log_step(step)``: the usual form of an early exit."""
    return (
        isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not)
        and _flag_name(expr.expression) is not None
    )


def is_flag_exit(node: cst.If) -> bool:
    """``if not should_log: return``: a negated flag whose branch leaves with nothing. A branch
    that returns a value (``if not self.losses: return float("nan")``) answers an empty input;
    what follows it still runs whenever there is something to compute."""
    if not is_negated_flag(node.test) or is_early_exit(node) != "return":
        return False
    first = node.body.body[0]
    only = first.body[0] if isinstance(first, cst.SimpleStatementLine) else first
    value = only.value if isinstance(only, cst.Return) else None
    return value is None or isinstance(value, cst.Name) and value.value == "None"


def is_host_branch(expr: cst.BaseExpression) -> bool:
    """``if t.device == torch.device("cpu"):`` / ``if t.device.type == "cpu":`` (no device here)."""
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return False
    if not isinstance(expr.comparisons[0].operator, (cst.Equal, cst.Is)):
        return False
    sides = (expr.left, expr.comparisons[0].comparator)
    mentions_device = any(
        isinstance(side, cst.Attribute) and side.attr.value in ("device", "type", "is_cpu") for side in sides
    )
    if not mentions_device:  # ``FLAGS.auc_device == "CPU"``
        mentions_device = any(
            isinstance(side, (cst.Attribute, cst.Name)) and facts.words_match(dotted_last(side), ("device",))
            for side in sides
        )
    says_cpu = any(
        (isinstance(side, cst.SimpleString) and "cpu" in side.value.lower())
        or (isinstance(side, cst.Call) and any(isinstance(a.value, cst.SimpleString) and "cpu" in a.value.value for a in side.args))
        for side in sides
    )
    return mentions_device and says_cpu


def dotted_last(expr: cst.BaseExpression) -> str:
    return expr.attr.value if isinstance(expr, cst.Attribute) else getattr(expr, "value", "")


def ends_the_run(node: cst.If) -> bool:
    """``if bad: log(...); raise ...`` / ``sys.exit(1)``: a branch that always leaves by an error
    or a process exit runs at most once per run, however often its test is evaluated."""
    return leaves_by_error(node.body)


def catches_exhaustion(handler: Union[cst.ExceptHandler, cst.ExceptStarHandler]) -> bool:
    """``except StopIteration:`` around ``next(batches)``: the handler runs when the data runs out,
    once per pass over it (an epoch), not per step."""
    caught = handler.type
    names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any(isinstance(name, cst.Name) and name.value == "StopIteration" for name in names)


def leaves_by_error(body: cst.BaseSuite) -> bool:
    """A block whose last statement raises or exits the process (an ``if`` body, an ``except``
    handler that re-raises)."""
    statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if isinstance(last, cst.Raise):
        return True
    if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
        return dotted(last.value.func) in facts.PROCESS_EXITS
    return False


def is_early_exit(node: cst.If) -> Optional[str]:
    """``return``/``continue`` when the if-body only leaves the function/loop, else None."""
    if node.orelse is not None:
        return None
    body = node.body
    statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    small: List[cst.CSTNode] = []
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            small.extend(statement.body)
        else:
            small.append(statement)
    if len(small) != 1:
        return None
    only = small[0]
    if isinstance(only, cst.Return):
        return "return"
    if isinstance(only, cst.Continue):
        return "continue"
    return None


# ------------------------------------------------------------------ the whole-run call graph

def is_opt_in_call(expr: cst.BaseExpression, qualname: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """``if torch.onnx.is_in_onnx_export():``: a branch a normal training run never takes."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return is_opt_in_call(expr.left, qualname) or is_opt_in_call(expr.right, qualname)
    if isinstance(expr, cst.Call) and isinstance(expr.func, (cst.Name, cst.Attribute)):
        return qualname(expr.func) in facts.OPT_IN_CALLS
    return False


def is_sampled_rarely(expr: cst.BaseExpression, qualname: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """``if random.random() < 0.001:`` (or ``0.01 > np.random.rand()``): a branch taken on a few sampled steps."""
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return False
    left, comparison = expr.left, expr.comparisons[0]
    right = comparison.comparator
    if isinstance(comparison.operator, (cst.LessThan, cst.LessThanEqual)):
        draw, bound = left, right
    elif isinstance(comparison.operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        draw, bound = right, left
    else:
        return False
    if not (isinstance(draw, cst.Call) and isinstance(draw.func, (cst.Name, cst.Attribute)) and not draw.args
            and qualname(draw.func) in facts.HOST_UNIFORM_DRAWS):
        return False
    return isinstance(bound, (cst.Float, cst.Integer)) and float(bound.evaluated_value) <= facts.RARE_SAMPLE_PROBABILITY


def is_equality_guard(expr: cst.BaseExpression, is_host_number: Callable[[cst.BaseExpression], bool]) -> bool:
    """``if batch_idx == 0:`` / ``if step == warmup_steps:``: a branch taken once, not per step.

    One ``==`` between host numbers, one side a number literal or a counter; ``a and b`` is
    guarded when either side is."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return is_equality_guard(expr.left, is_host_number) or is_equality_guard(expr.right, is_host_number)
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return False
    if not isinstance(expr.comparisons[0].operator, cst.Equal):
        return False
    sides = (expr.left, expr.comparisons[0].comparator)
    if any(facts.words_match(dotted(side) or "", facts.RANK_WORDS) for side in sides):
        return False  # `if local_rank == 0:`: one process, every step
    literal = any(isinstance(side, cst.Integer) for side in sides)
    counters = sum(1 for side in sides if is_host_number(side))
    return (literal and counters >= 1) or counters == 2


def is_memo_guard(node: cst.If) -> bool:
    """``if key not in cache: ... cache[key] = ...`` / ``if self.x is None: ... self.x = ...`` / ``if not self.ready:
    ... self.ready = True``: the body fills or flips what the test checks, so it runs once (per key), not per step."""
    return memo_holder(node) is not None


def memo_holder(node: cst.If) -> Optional[str]:
    """What a memo guard (``is_memo_guard``) fills or flips (``cache``, ``self.x``, ``self.ready``), else None."""
    test = node.test
    if node.orelse is not None:
        return None
    flag = _flipped_flag(test, node.body)
    if flag:
        return flag
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.NotIn):
        holder, subscripted = dotted(right), True
    elif isinstance(operator, cst.Is) and isinstance(right, cst.Name) and right.value == "None":
        holder, subscripted = dotted(test.left), False
    else:
        return None
    if holder is None:
        return None
    for statement in _small_statements(node.body):
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                filled: cst.BaseExpression = target.target
                if subscripted and isinstance(filled, cst.Subscript):
                    filled = filled.value
                elif subscripted:
                    continue
                if dotted(filled) == holder:
                    return holder
    return None


def _flipped_flag(test: cst.BaseExpression, body: cst.BaseSuite) -> Optional[str]:
    """``if not self.ready: ...; self.ready = True`` (or ``if self.first: ...; self.first = False``): the flag."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    holder = dotted(test.expression if isinstance(test, cst.UnaryOperation) and negated else test)
    if holder is None:
        return None
    for statement in _small_statements(body):
        if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Name) \
                and statement.value.value == ("True" if negated else "False") \
                and any(dotted(target.target) == holder for target in statement.targets):
            return holder
    return None


def reports_after_reading(node: cst.If, kind: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """``if g_loss.item() > limit: print(f"... {g_loss:.2f} ...")``: the test has just waited for the
    device to read a value, and the body only reports (prints, logs, warns, raises, leaves the loop):
    it queues no device work, so what it reads is ready and costs no second wait. The test itself
    stays a finding; the body runs only when the condition holds."""
    if not _reads_device_value(node.test, kind) or node.orelse is not None:
        return False
    body = node.body
    if isinstance(body, cst.IndentedBlock) and not all(isinstance(line, cst.SimpleStatementLine) for line in body.body):
        return False  # a nested block may do anything
    smalls = _small_statements(body)
    return bool(smalls) and all(_only_reports(small) for small in smalls)


def _reads_device_value(test: cst.BaseExpression, kind: Callable[[cst.BaseExpression], Optional[str]]) -> bool:
    """The test converts a device tensor to a Python value: ``t.item()``, ``float(t)``, ``if t:``."""
    if kind(test) in DEVICE_TENSORS:
        return True
    stack: List[cst.CSTNode] = [test]
    while stack:
        expr = stack.pop()
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "item" and not expr.args \
                    and kind(func.value) in DEVICE_TENSORS:
                return True
            if isinstance(func, cst.Name) and func.value in ("float", "int", "bool") and len(expr.args) == 1 \
                    and kind(expr.args[0].value) in DEVICE_TENSORS:
                return True
        elif isinstance(expr, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.BinaryOperation)):
            stack.extend(code_children(expr))
    return False


def _only_reports(statement: cst.CSTNode) -> bool:
    if isinstance(statement, (cst.Raise, cst.Break, cst.Continue, cst.Pass)):
        return True
    if not (isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call)):
        return False
    func = statement.value.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    return name in DISPLAY_FUNCTIONS or name in LOGGER_METHODS or name == "warn"


def _small_statements(body: cst.BaseSuite) -> List[cst.CSTNode]:
    """The simple statements directly in a block (not in nested blocks)."""
    out: List[cst.CSTNode] = []
    for statement in getattr(body, "body", ()):
        if isinstance(statement, cst.SimpleStatementLine):
            out.extend(statement.body)
        elif isinstance(statement, cst.BaseSmallStatement):
            out.append(statement)
    return out


def steps_optimizer_beside(loop: cst.CSTNode, branch: cst.If) -> bool:
    """Does ``loop``'s body step an optimizer outside ``branch`` (``opt_d.step()`` every step, and
    ``if step % 16 == 0: ...; opt_d.step()`` for a lazy regulariser)? Then the branch runs less
    often than the steps; with gradient accumulation the branch holds the only optimizer step."""
    body = getattr(loop, "body", None)
    return isinstance(body, cst.CSTNode) and _steps_optimizer(body, branch)


def steps_optimizer_after(loop: cst.CSTNode, branch: cst.If) -> bool:
    """Does ``loop``'s body step an optimizer after the statement holding ``branch``? (``if (i + 1) %
    accum: continue`` before ``optimizer.step()``: what follows runs once per optimizer step.)"""
    body = getattr(getattr(loop, "body", None), "body", ())
    holder = next((i for i, statement in enumerate(body) if _holds(statement, branch)), None)
    return holder is not None and any(_steps_optimizer(statement, branch) for statement in body[holder + 1:])


def _holds(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if current is target:
            return True
        stack.extend(code_children(current))
    return False


def _steps_optimizer(node: cst.CSTNode, skip: cst.CSTNode) -> bool:
    """An optimizer's ``.step()`` in ``node`` (not in ``skip`` nor in nested definitions)."""
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if current is skip or isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute) and current.func.attr.value == "step" \
                and facts.is_optimizer_name(dotted(current.func.value) or "") \
                and not facts.words_match(dotted(current.func.value) or "", ("scaler",)):
            return True
        stack.extend(code_children(current))
    return False


def returns_inside(node: cst.With, function: cst.CSTNode) -> bool:
    """``with ignore_oom(): return f(x)`` as a statement of ``function``'s own body: the code after it
    runs only when the context manager swallowed an exception (a retry path), like the code after
    an early ``return``."""
    if not any(statement is node for statement in getattr(getattr(function, "body", None), "body", ())):
        return False
    body = getattr(node.body, "body", ())
    last = body[-1] if body else None
    smalls = last.body if isinstance(last, cst.SimpleStatementLine) else ()
    return bool(smalls) and isinstance(smalls[-1], cst.Return)


def on_by_default(test: cst.BaseExpression, owner: Optional[cst.CSTNode]) -> bool:
    """``if self.check:`` where the class keeps ``check`` from an ``__init__`` parameter that defaults to ``True``
    (``def __init__(self, dim=-1, check=True)``): a switch that is on unless a caller turns it off, not an opt-in."""
    if not (isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self"
            and isinstance(owner, cst.ClassDef)):
        return False
    init = next((s for s in owner.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        return False
    defaults = {p.name.value: p.default for p in (*init.params.params, *init.params.kwonly_params)}
    for node in walk_code(init):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            whole: cst.BaseExpression = node.targets[0].target
            for part, value in paired_elements([whole], node.value) or [(whole, node.value)]:
                if isinstance(part, cst.Attribute) and isinstance(part.value, cst.Name) and part.value.value == "self" \
                        and part.attr.value == test.attr.value and isinstance(value, cst.Name):
                    default = defaults.get(value.value)
                    return isinstance(default, cst.Name) and default.value == "True"
    return False

