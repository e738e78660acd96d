"""The walk of loops: ``for`` and ``while`` statements and comprehensions, each a ``LoopFrame`` while its body is
walked. What makes a loop a step loop by its shape is decided here (it iterates a data loader, it moves its items to
the device, it evaluates a model on them under ``no_grad``, it draws batches with ``next()``); what its body calls
settles the rest when it closes (``frequency``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, List, Optional, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.eval_loops import cuts_into_batches
from syncfree_lint.analysis.filefacts import CallSite
from syncfree_lint.analysis.nodes import walk_code
from syncfree_lint.analysis.scope import (
    FunctionFrame, LoopFrame, Placement, draws_and_moves, draws_batches, iterated, iterates_own_tensors,
    mentions_loader, moves_items, target_names,
)
if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef


class LoopsMixin:
    """Loops of the walk (mixed into ``module.ModuleAnalysis``)."""

    statement: Optional[cst.CSTNode]
    function: Optional[FunctionFrame]
    loops: List[LoopFrame]
    calls: List[CallSite]
    grad_off: bool
    uses_accelerator: bool
    _outer_for_in: Optional[cst.CompFor] = None
    _rules: Callable[[cst.CSTNode], None]
    _visit: Callable[[cst.CSTNode], None]
    _suite: Callable[[Optional[cst.CSTNode]], None]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    placement: Callable[[], Placement]
    _guards_here: Callable[[], Tuple[int, bool]]
    _close_loop: Callable[[], None]
    _evaluates: Callable[[cst.For], bool]
    _bind_loop_target: Callable[..., None]
    _iterated_function: Callable[[cst.BaseExpression], Optional["CallRef"]]
    _yielded: Callable[[cst.BaseExpression], Optional[str]]

    def _for(self, node: cst.For) -> None:
        self.statement = node
        self._rules(node)
        self._visit(node.iter)
        loader_kind = self.kind(iterated(node.iter))
        moved = moves_items(node.body, target_names(node.target))
        # a loop that moves its own items to the device iterates over batches, whatever its name
        # (``for x, y in self.val_data: x = x.to(dev)``); not over a module's own tensors
        over_loader = mentions_loader(node.iter) or loader_kind in tensors.LOADERS or (
            moved and not iterates_own_tensors(node.iter)) or draws_and_moves(node.body.body)
        evaluates = not over_loader and (self.grad_off or cuts_into_batches(node.iter)) and self._evaluates(node)
        over_loader = over_loader or evaluates
        host_items = loader_kind == tensors.HOST_LOADER or moved
        item_kind = tensors.HOST_BATCH if over_loader and host_items else tensors.BATCH
        self._bind_loop_target(node.target, node.iter, over_loader and not evaluates, item_kind)  # items: unknown
        loop = LoopFrame(over_loader and self.uses_accelerator, self.function, node, *self._guards_here())
        loop.why = ("evaluates a model on its items" if evaluates else "iterates a data loader") if loop.is_step else ""
        self.loops.append(loop)
        iter_ref = self._iterated_function(node.iter)
        if iter_ref is not None:
            self.calls.append(CallSite(self.placement(), iter_ref, node))
        self._suite(node.body)
        self._close_loop()
        if node.orelse is not None:
            self._suite(node.orelse.body)

    def _while(self, node: cst.While) -> None:
        self.statement = node
        self._rules(node)
        # `while True: batch = next(train_iter)`: a loop over batches, whatever its test
        drawn = draws_batches(node.body.body, lambda it: mentions_loader(it) or self.kind(it) in tensors.LOADERS
                              or _device_data(self._yielded(it))) \
            or draws_and_moves(node.body.body)
        loop = LoopFrame(drawn and self.uses_accelerator, self.function, node, *self._guards_here())
        loop.why = "draws batches with next()" if loop.is_step else ""
        self.loops.append(loop)
        self._visit(node.test)
        self._suite(node.body)
        self._close_loop()
        if node.orelse is not None:
            self._suite(node.orelse.body)

    def _comp_for(self, node: cst.CompFor) -> None:
        self._rules(node)
        self._visit(node.iter)
        over_loader = mentions_loader(node.iter) or self.kind(iterated(node.iter)) in tensors.LOADERS
        self._bind_loop_target(node.target, node.iter, over_loader)
        if node is self._outer_for_in:  # the comprehension's own loop: from here on, its element runs per item
            self._outer_for_in = None
            loop = LoopFrame(over_loader and self.uses_accelerator, self.function, self.statement or node,
                             *self._guards_here())
            loop.why = "a comprehension over a data loader" if loop.is_step else ""
            self.loops.append(loop)
        for condition in node.ifs:
            self._visit(condition)
        if node.inner_for_in is not None:
            self._visit(node.inner_for_in)

    def _comprehension(self, node: cst.CSTNode) -> None:
        """Visit the ``for`` clauses before the element, as Python evaluates them. An element that hands the items
        to a call runs that call once per item of the first clause's iterable: a loop, a step loop over a data
        loader (``outputs = [task.evaluation_step(b) for b in loader]``; not ``[len(b) for b in loaders]``)."""
        self._rules(node)
        depth = len(self.loops)
        for_in: cst.CompFor = node.for_in  # type: ignore[attr-defined]
        saved, self._outer_for_in = self._outer_for_in, for_in if hands_items_on(node, for_in) else None
        self._visit(for_in)
        for part in _element_parts(node):
            self._visit(part)
        self._outer_for_in = saved
        if len(self.loops) > depth:
            self._close_loop()



def _device_data(kind: Optional[str]) -> bool:
    """What a generator yields is device data (``yield X[keep], Y[keep]`` of tensors on the device): drawing it is
    taking a batch."""
    elements = tensors.tuple_elements(kind)
    return kind in tensors.DEVICE_TENSORS or (elements is not None and any(e in tensors.DEVICE_TENSORS for e in elements))


#: calls that only look at a value: handing an item to them does no work on it
_LOOKS_ONLY = frozenset({"len", "isinstance", "str", "repr", "id", "type", "print", "hasattr", "getattr", "bool"})


def _element_parts(node: cst.CSTNode) -> List[cst.CSTNode]:
    return [part for part in (getattr(node, name, None) for name in ("elt", "key", "value")) if part is not None]


def hands_items_on(node: cst.CSTNode, for_in: cst.CompFor) -> bool:
    """The comprehension's element passes the first clause's items to a call (``step(b)``, ``f(model(x), y)``)."""
    names = target_names(for_in.target)
    for part in _element_parts(node):
        for inner in walk_code(part):
            if not isinstance(inner, cst.Call) or (isinstance(inner.func, cst.Name) and inner.func.value in _LOOKS_ONLY):
                continue
            if any(isinstance(leaf, cst.Name) and leaf.value in names for arg in inner.args for leaf in walk_code(arg)):
                return True
    return False
