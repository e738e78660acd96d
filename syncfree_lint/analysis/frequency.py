"""Execution frequency during the walk: where a statement sits (step loop, step function, guard).

Step loops (a loop over a loader, or whose body steps the optimizer) and step functions run once
per step; an epoch function (one holding its own step loop) runs its other code once per call;
guards lower the frequency of what they dominate (``analysis.scope`` has the predicates). What a
helper's frequency is follows from the whole run's call graph (``analysis.callgraph``).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.scope import (
    ClassFrame, FunctionFrame, LoopFrame, Placement, acts_in_environment, builds_from_items, contains_step_marker, mark_step,
    moves_items, target_names,
)
from syncfree_lint.analysis.eval_loops import drawn_items, evaluates_items, over_range, strided_slices
from syncfree_lint.analysis.guards import (
    ends_the_run, has_modulo, is_equality_guard, is_flag_guard, is_host_branch, is_memo_guard, is_mostly_true_interval,
    is_opt_in_call, is_sampled_rarely, memo_holder, on_by_default, reports_after_reading, steps_optimizer_beside,
)
from syncfree_lint.analysis.arguments import PASSED
from syncfree_lint.analysis.bindings import EVERY_STEP, INTERVAL_FLAG, OFF_BY_DEFAULT, REMAINDER
from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.nodes import local_names, walk_code
from syncfree_lint.analysis.options import off_by_default

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef


class FrequencyMixin:
    """Placement and guards for ``ModuleAnalysis`` (which provides the attributes below)."""

    function: Optional[FunctionFrame]
    class_frame: Optional[ClassFrame]
    unknown_reads: Set[Tuple[str, str]]
    has_steps: bool
    loops: List[LoopFrame]
    guard_depth: int
    guard_nodes: List[cst.CSTNode]
    uses_accelerator: bool
    logging_words: Tuple[str, ...]
    opt_in_words: Tuple[str, ...]
    functions: Dict[str, FunctionFrame]
    _marker_functions: Set[str]
    _stepping_functions: Set[str]
    _loop_calls: List[Tuple[LoopFrame, "CallRef"]]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    resolve_local: Callable[["CallRef"], List[str]]
    lookup: Callable[[str], Optional[str]]
    _envs: List[Dict[str, Optional[str]]]
    tree: Optional[ast.Module]
    source: str
    _off_options: Optional[FrozenSet[str]] = None
    _rules: Callable[[cst.CSTNode], None]
    _visit: Callable[[cst.CSTNode], None]
    _bind: Callable[[str, Optional[str]], None]
    _is_model_entry: Callable[[cst.BaseExpression], bool]

    def placement(self) -> Placement:
        return Placement(tuple(self.loops), self.function, self.guard_depth,
                         tuple(loop.rest_guarded for loop in self.loops),
                         self.function is not None and self.function.rest_guarded,
                         self.guard_nodes[-1] if self.guard_nodes else None)

    def _guards_here(self) -> Tuple[int, bool]:
        """What a loop starting here is nested in: guards, and a guarded early return."""
        return self.guard_depth, self.function is not None and self.function.rest_guarded

    def _is_guard(self, node: cst.If) -> bool:
        """Does this ``if`` lower the frequency of its body below once per step?

        Interval guards (``step % k == 0``) unless the body steps the optimizer (gradient
        accumulation: that body runs once per optimizer step), equality with a counter (once),
        logging and opt-in flags, opt-in calls, and host-only device branches."""
        test = node.test
        if is_mostly_true_interval(test):
            return False  # `if step % k != 0:` runs on all steps but one in k
        if has_modulo(test) or self._tests_remainder(test):
            schedule = contains_step_marker(node.body, self.qualname) and not (
                self.loops and steps_optimizer_beside(self.loops[-1].node, node))
            return not schedule and not self._period_is_one(test)
        return (
            ends_the_run(node)
            or (is_memo_guard(node) and not self._memo_per_call(node))
            or (is_flag_guard(test, self.logging_words, self.opt_in_words)
                and not on_by_default(test, self.class_frame.node if self.class_frame is not None else None))
            or (self._tests_off_option(test) and not contains_step_marker(node.body, self.qualname))
            or is_opt_in_call(test, self.qualname)
            or is_sampled_rarely(test, self.qualname)
            or is_equality_guard(test, self._is_host_number)
            or is_host_branch(test)
            or self._flushes_window(test)
            or reports_after_reading(node, self.kind)
        )

    def _memo_per_call(self, node: cst.If) -> bool:
        """``if max_len is None: max_len = ...`` on a parameter or local name, outside every loop of the function: the
        name starts afresh at each call, so the body runs on each call. (In a loop of the function, or on an attribute
        or a module's cache, the body fills it once.)"""
        holder = memo_holder(node)
        function = self.function
        if holder is None or "." in holder or function is None or any(loop.function is function for loop in self.loops):
            return False
        return holder in local_names(function.node)

    @staticmethod
    def _exit_interval(test: cst.BaseExpression) -> bool:
        """An early exit under ``step % k != 0`` leaves the rest of the loop to one step in ``k``."""
        return is_mostly_true_interval(test)

    def _evaluates(self, node: cst.For) -> bool:
        """Does a loop with gradients off evaluate a model on its items (``analysis.eval_loops``)?
        A loop over ``range(0, n, batch_size)`` counts when it cuts data into batches; data whose
        batches the body moves to the device is on the host, like a loader's (``rows = batch.tolist()``)."""
        batches = strided_slices(node.iter, node.body, target_names(node.target))
        drawn = drawn_items(node.body) if not batches and over_range(node.iter) else set()
        if not batches and not drawn and over_range(node.iter):
            return False
        # each batch moved to the device and worked on (`x = xs[i:i + bs].to(device)` moves the data it cuts)
        cut = set(batches) | {data for data in batches.values() if data}
        moved = bool(batches) and (moves_items(node.body, cut) or builds_from_items(node.body, cut))
        if not moved and not evaluates_items(node.body, set(batches) or drawn or target_names(node.target),
                                             self._is_model_entry, batches=bool(batches)):
            return False
        if moved:
            for data in set(batches.values()):
                if data and self.lookup(data) is None:
                    self._bind(data, tensors.HOST_BATCH)  # batched and moved by the loop, as a loader's
        return True

    def _flushes_window(self, test: cst.BaseExpression) -> bool:
        """``if len(self.window) < self.every: return`` (or ``>= every:`` around the flush) in a
        function that empties the buffer (``self.window.clear()``, ``= []``) and steps no optimizer:
        the buffer fills again over ``every`` calls, so its flush runs once per ``every`` of them."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Call)
                and isinstance(test.left.func, cst.Name) and test.left.func.value == "len" and len(test.left.args) == 1):
            return False
        bound = test.comparisons[0].comparator
        if isinstance(bound, cst.Integer) and int(bound.value, 0) <= 1:
            return False  # `len(buffer) > 0`: whenever anything is there
        buffer = dotted(test.left.args[0].value)
        if buffer is None or self.function is None or contains_step_marker(self.function.node, self.qualname):
            return False  # `if len(micro_losses) < accum: continue` before `optimizer.step()`: a schedule
        for node in walk_code(self.function.node):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "clear" \
                    and dotted(node.func.value) == buffer and not node.args:
                return True
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.List) and not node.value.elements \
                    and any(dotted(target.target) == buffer for target in node.targets):
                return True
        return False

    def _note_opt_in_objects(self, node: cst.If) -> None:
        """``if args.real_labels: labels = RealLabels(...)`` ``else: labels = None``: the object
        exists only when an opt-in option or flag is on, so ``if labels is not None:`` tests that
        switch (``_tests_off_option``)."""
        orelse = node.orelse
        if not isinstance(orelse, cst.Else) or not (
                self._tests_off_option(node.test) or is_flag_guard(node.test, self.logging_words, self.opt_in_words)):
            return
        built = {name for name, value in _top_assignments(node.body) if not _is_none(value)}
        for name, value in _top_assignments(orelse.body):
            if name in built and _is_none(value):
                self._envs[-1][name + OFF_BY_DEFAULT] = tensors.OTHER

    def _if_exp(self, node: cst.IfExp) -> None:
        """``[...] if args.save_hybrid else []``: the body runs only when an opt-in option, a
        logging flag or an interval test holds, like the body of such an ``if``."""
        self._rules(node)
        self._visit(node.test)
        test = node.test
        guard = has_modulo(test) or self._tests_off_option(test) \
            or is_flag_guard(test, self.logging_words, self.opt_in_words)
        self.guard_depth += guard
        self._visit(node.body)
        self.guard_depth -= guard
        self._visit(node.orelse)

    def _tests_off_option(self, test: cst.BaseExpression) -> bool:
        """``if args.metrics_avg:`` / ``if args.clip is not None:`` for an option that is off by default."""
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._tests_off_option(test.left) or self._tests_off_option(test.right)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
                and isinstance(test.comparisons[0].operator, cst.IsNot) \
                and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None":
            test = test.left
        if isinstance(test, cst.Name):
            switch = self.lookup(test.value + OFF_BY_DEFAULT) is not None
            if switch and self.function is not None:
                self.unknown_reads.add((self.function.qualname, test.value + PASSED))  # unless a call sets it
            return switch
        if not isinstance(test, cst.Attribute):
            return False
        if self._off_options is None:
            # the walk finds nothing without an add_argument call; most files have none
            self._off_options = off_by_default(self.tree) if "add_argument" in self.source else frozenset()
        return test.attr.value in self._off_options

    def _period_is_one(self, test: cst.BaseExpression) -> bool:
        """``step % self.period == 0`` where the period holds 1 (``period: int = 1`` by default):
        the branch runs every step."""
        stack: List[cst.CSTNode] = [test]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
                right = node.right
                if isinstance(right, cst.Integer) and right.value == "1":
                    return True
                name = dotted(right) if isinstance(right, (cst.Name, cst.Attribute)) else None
                if name is not None and self.lookup(name + EVERY_STEP) is not None:
                    return True
            stack.extend(child for child in node.children if isinstance(child, cst.BaseExpression)
                         or isinstance(child, (cst.ComparisonTarget, cst.Arg)))
        return False

    def _tests_remainder(self, test: cst.BaseExpression) -> bool:
        """``if rem == 0:`` / ``if not rem:`` where ``rem = step % k`` (an interval guard by data flow)."""
        if isinstance(test, cst.BooleanOperation):
            return self._tests_remainder(test.left) or self._tests_remainder(test.right)
        negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            sides = [test.left, test.comparisons[0].comparator]
            if not any(isinstance(side, cst.Integer) and side.value == "0" for side in sides):
                return False
            test = next((side for side in sides if isinstance(side, cst.Name)), test)
        if not isinstance(test, cst.Name):
            return False
        # `if not rem:` is `rem == 0`; `if not do_eval:` is every other step
        return self.lookup(test.value + REMAINDER) is not None or (
            not negated and self.lookup(test.value + INTERVAL_FLAG) is not None)

    def _is_host_number(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return self.kind(expr) == tensors.NUMBER
        return False

    def _note_marker(self, func: cst.BaseExpression) -> None:
        """A step marker called here (``opt.step()``, ``loss.backward()``, ``envs.step(a)``)."""
        if self.loops:
            if self.uses_accelerator:
                loop = self.loops[-1]
                clears = isinstance(func, cst.Attribute) and func.attr.value == "zero_grad"
                loop.zero_grad_only = clears and (loop.zero_grad_only or not loop.is_step)
                mark_step(loop, f"calls {dotted(func) or 'a step marker'}()")
                loop.optimizes = loop.optimizes or not acts_in_environment(func)
        elif self.function is not None:
            self._marker_functions.add(self.function.qualname)
            if isinstance(func, cst.Attribute) and func.attr.value != "zero_grad":
                # backward or an optimizer step in its own body: the function *is* a step
                # (unless it turns out to hold its own step loop: an epoch function)
                self._stepping_functions.add(self.function.qualname)

    def _close_loop(self) -> None:
        loop = self.loops.pop()
        if loop.is_step and loop.zero_grad_only and loop.holds_step_loop:
            loop.is_step, loop.why = False, ""  # `for epoch ...: opt.zero_grad(); for batch in loader: ...`
        parent = self.loops[-1] if self.loops else None
        loop.updates = loop.updates or (loop.is_step and loop.optimizes and not loop.over_loader)
        if parent is not None and not parent.is_step:
            # `for it in range(n): seq = sample(policy, p)` under no_grad, then minibatch updates on
            # `seq`: each iteration is one step (a rollout, then the update on what it collected)
            if loop.updates and parent.collects:
                mark_step(parent, "collects data with the model, then updates on it (an on-policy iteration)")
            parent.updates = parent.updates or loop.updates
            parent.collects = parent.collects or loop.collects or (loop.is_step and not loop.optimizes)
        if loop.is_step and self.loops:
            self.loops[-1].holds_step_loop = True
        self.has_steps = self.has_steps or loop.is_step
        if loop.is_step and loop.function is not None:
            loop.function.has_step_loop = True

    def _settle_loops(self) -> None:
        """A loop that calls a local function which itself steps is a step loop too; the
        function holding that loop becomes an epoch function (repeated until nothing changes)."""
        changed = True
        while changed:
            changed = False
            for loop, ref in self._loop_calls:
                if loop.is_step or not self.uses_accelerator:
                    continue
                called = getattr(ref, "method", None) == "__call__"  # a module called runs `forward`: it steps nothing
                for target in self.resolve_local(ref):
                    if target in self._marker_functions or (self.functions[target].is_step and not called):
                        mark_step(loop, f"calls {target.rsplit('.', 1)[-1]}(), which steps")
                        changed = self.has_steps = True
                        if loop.function is not None:
                            loop.function.has_step_loop = True
                            self._marker_functions.discard(loop.function.qualname)
                        break


def _top_assignments(suite: cst.BaseSuite) -> List[Tuple[str, cst.BaseExpression]]:
    """(name, value) of the ``name = value`` statements directly in ``suite``."""
    out = []
    body = suite.body if isinstance(suite, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    for statement in body:
        for small in (statement.body if isinstance(statement, cst.SimpleStatementLine) else (statement,)):
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                out.append((small.targets[0].target.value, small.value))
    return out


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"
