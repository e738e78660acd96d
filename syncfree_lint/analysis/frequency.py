"""Execution frequency during the walk: where a statement sits (step loop, step function, guard).

Step loops (a loop over a loader, or whose body steps the optimizer) and step functions run once
per step; an epoch function (one holding its own step loop) runs its other code once per call;
guards lower the frequency of what they dominate (``analysis.scope`` has the predicates). What a
helper's frequency is follows from the whole run's call graph (``analysis.callgraph``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors as T
from syncfree_lint.analysis.scope import (
    FunctionFrame, LoopFrame, Placement, contains_step_marker, has_modulo, is_equality_guard, is_flag_guard,
    is_host_branch, is_opt_in_call,
)

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef


class FrequencyMixin:
    """Placement and guards for ``ModuleAnalysis`` (which provides the attributes below)."""

    function: Optional[FunctionFrame]
    loops: List[LoopFrame]
    guard_depth: int
    uses_accelerator: bool
    logging_words: Tuple[str, ...]
    opt_in_words: Tuple[str, ...]
    functions: Dict[str, FunctionFrame]
    _marker_functions: Set[str]
    _loop_calls: List[Tuple[LoopFrame, "CallRef"]]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    resolve_local: Callable[["CallRef"], List[str]]

    def placement(self) -> Placement:
        guarded = self.guard_depth > 0 or any(loop.rest_guarded for loop in self.loops)
        if self.function is not None and self.function.rest_guarded:
            guarded = True
        return Placement(tuple(self.loops), self.function, guarded)

    def _is_guard(self, node: cst.If) -> bool:
        """Does this ``if`` lower the frequency of its body below once per step?

        Interval guards (``step % k == 0``) unless the body steps the optimizer (gradient
        accumulation: that body runs once per optimizer step), equality with a counter (once),
        logging and opt-in flags, opt-in calls, and host-only device branches."""
        test = node.test
        if has_modulo(test):
            return not contains_step_marker(node.body, self.qualname)
        return (
            is_flag_guard(test, self.logging_words, self.opt_in_words)
            or is_opt_in_call(test, self.qualname)
            or is_equality_guard(test, self._is_host_number)
            or is_host_branch(test)
        )

    def _is_host_number(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return self.kind(expr) == T.NUMBER
        return False

    def _close_loop(self) -> None:
        loop = self.loops.pop()
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
                for target in self.resolve_local(ref):
                    if target in self._marker_functions or self.functions[target].is_step:
                        loop.is_step = changed = True
                        if loop.function is not None:
                            loop.function.has_step_loop = True
                            self._marker_functions.discard(loop.function.qualname)
                        break
