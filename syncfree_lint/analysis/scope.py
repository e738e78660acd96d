"""Step scope: which statements run once per training or evaluation step.

A finding is recorded with the frames around it (loops and the enclosing function) and whether
an interval guard covers it. Whether a loop is a step loop is known when the loop ends; whether a
helper is reached from a step is known once every file of the run has been read, so findings
inside functions stay *conditional* until ``reachable`` has seen the whole call graph.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.nodes import code_children, walk_code
from syncfree_lint.knowledge import frequency as facts
from syncfree_lint.knowledge import torch_api
from syncfree_lint.knowledge.dtypes import HOST_DATA_CONSTRUCTORS

STEP = "<step>"  # the owner of code that runs once per step by its own position


class FunctionFrame:
    __slots__ = ("qualname", "name", "is_step", "class_frame", "rest_guarded", "returns", "has_step_loop", "node", "why",
                 "outer", "memoised")

    def __init__(self, qualname: str, name: str, is_step: bool, class_frame: Optional["ClassFrame"],
                 node: cst.CSTNode) -> None:
        self.node = node
        self.qualname = qualname
        self.name = name
        self.is_step = is_step
        self.class_frame = class_frame
        self.rest_guarded = False
        self.returns: List[Optional[str]] = []
        self.has_step_loop = False  # an epoch function: its code outside that loop runs once per call
        self.why = ""  # what makes it a step function, for the reach chain (``--show-reach``)
        self.outer: Optional["FunctionFrame"] = None  # the function around a nested function or a named lambda
        self.memoised = False  # `@functools.lru_cache`: its body runs once per distinct arguments, as set-up code

    def scope_node(self) -> Optional[cst.CSTNode]:
        """The ``def`` whose body holds this code: this function's, or for a lambda the nearest around it (None:
        the module)."""
        frame: Optional[FunctionFrame] = self
        while frame is not None and isinstance(frame.node, cst.Lambda):
            frame = frame.outer
        return frame.node if frame is not None else None


class LoopFrame:
    __slots__ = ("is_step", "rest_guarded", "function", "node", "guards_outside", "function_guarded_outside", "why",
                 "zero_grad_only", "holds_step_loop", "over_loader", "optimizes", "collects", "updates")

    def __init__(self, over_loader: bool, function: Optional["FunctionFrame"], node: cst.CSTNode,
                 guards_outside: int = 0, function_guarded_outside: bool = False) -> None:
        self.node = node  # the loop statement, for the reach chain
        self.is_step = self.over_loader = over_loader  # a marker call in its own body makes it one too
        # an on-policy iteration (``frequency``): a marker other than an environment's ``step()`` in its
        # body; the model run with gradients off (or an environment acted in) before its update
        # loop; it holds an update loop (a step loop not over a loader)
        self.optimizes = self.collects = self.updates = False
        self.why = ""  # what makes it a step loop, for the reach chain (``--show-reach``)
        # its only marker is ``zero_grad()``, and a loop inside it is a step loop: an epoch loop
        # that clears the gradients before its batch loop (settled when it closes)
        self.zero_grad_only = False
        self.holds_step_loop = False
        self.rest_guarded = False
        self.function = function  # the function whose body holds the loop (None: module level)
        # guards around the loop itself: they decide whether the loop runs, not how often its body
        # runs per step (``if args.do_eval: for batch in loader: ...`` is per eval step)
        self.guards_outside = guards_outside
        self.function_guarded_outside = function_guarded_outside


class ClassFrame:
    __slots__ = ("qualname", "name", "is_module", "bases", "methods", "attrs", "attr_classes", "node")

    def __init__(self, qualname: str, name: str, is_module: bool, bases: Tuple[str, ...],
                 methods: FrozenSet[str] = frozenset(), node: Optional[cst.ClassDef] = None) -> None:
        self.qualname = qualname
        self.node = node  # its definition (None for a class built by a test)
        self.name = name
        self.is_module = is_module
        self.bases = bases  # dotted names through the imports (a local class: its qualname)
        self.methods = methods  # the functions its body defines (known before the body is walked)
        self.attrs: Dict[str, Optional[str]] = {}
        # ``self.head = BoxHead(...)``: the class an attribute holds, as (is it local, qualname)
        self.attr_classes: Dict[str, Tuple[bool, str]] = {}


@dataclass
class Placement:
    """Where a finding or a call sits: its loops (innermost last) and its function."""

    loops: Tuple[LoopFrame, ...]
    function: Optional[FunctionFrame]
    guard_depth: int  # enclosing guards in the function, at this statement
    loops_rest_guarded: Tuple[bool, ...]  # per loop: after a guarded ``continue``, at this statement
    function_rest_guarded: bool  # after a guarded early ``return``, at this statement
    guard: Optional[cst.CSTNode] = None  # the innermost guarding statement (an ``if``), for ``--report-guarded``

    @property
    def guarded(self) -> bool:
        """Does a guard lower this statement's frequency below once per step? Guards around the
        outermost step loop do not count (``if args.do_eval: for batch in loader: ...``: whether
        the loop runs at all is not how often its body runs); guards inside it do. Decided when
        asked, since a loop may be found to be a step loop after the statement."""
        outer = next((i for i, loop in enumerate(self.loops) if loop.is_step), None)
        if outer is None:
            return self.guard_depth > 0 or self.function_rest_guarded or any(self.loops_rest_guarded)
        loop = self.loops[outer]
        return (self.guard_depth > loop.guards_outside
                or (self.function_rest_guarded and not loop.function_guarded_outside)
                or any(self.loops_rest_guarded[outer:]))

    def step_origin(self) -> Optional[cst.CSTNode]:
        """The statement that makes this place per step: its innermost step loop, or the step
        function's ``def``."""
        for loop in reversed(self.loops):
            if loop.is_step:
                return loop.node
        if self.function is not None and self.function.is_step:
            return self.function.node
        return None

    def step_why(self) -> str:
        """Why ``step_origin`` runs once per step (``iterates a data loader``, ``calls optimizer.step()``)."""
        for loop in reversed(self.loops):
            if loop.is_step:
                return loop.why
        return self.function.why if self.function is not None and self.function.is_step else ""

    def owner(self) -> Optional[str]:
        """STEP, the enclosing function's qualname, or None (module level: runs once)."""
        if any(loop.is_step for loop in self.loops):
            return STEP
        if self.function is None or self.function.memoised:
            return None
        if self.function.is_step:
            return STEP
        return self.function.qualname


def mark_step(frame: "LoopFrame | FunctionFrame", why: str) -> None:
    """Make ``frame`` a step (loop or function), keeping the first reason given."""
    frame.is_step = True
    if not frame.why:
        frame.why = why


def is_step_marker(call: cst.Call, qualname: Optional[str]) -> bool:
    """``.backward(``, ``torch.autograd.backward``, ``<optimizer>.step(``, ``.zero_grad(``, and
    ``<env>.step(`` (a rollout acts in its environment once per iteration)."""
    func = call.func
    if qualname in facts.STEP_MARKER_FUNCTIONS:
        return True
    if not isinstance(func, cst.Attribute):
        return False
    attr = func.attr.value
    if attr in facts.STEP_MARKER_METHODS:
        return True
    if attr == "step":
        receiver = func.value
        name = receiver.attr.value if isinstance(receiver, cst.Attribute) else getattr(receiver, "value", None)
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
            name = receiver.func.attr.value  # scaler.scale(...).step? rare, accept by name
        return isinstance(name, str) and (facts.is_optimizer_name(name) or facts.is_environment_name(name))
    return False


def acts_in_environment(func: cst.BaseExpression) -> bool:
    """``envs.step`` (a marker that acts in an environment, not one that updates a model)."""
    return isinstance(func, cst.Attribute) and func.attr.value == "step" and facts.is_environment_name(dotted(func.value) or "")


def contains_step_marker(node: cst.CSTNode, qualname: "Callable[[cst.BaseExpression], Optional[str]]") -> bool:
    """True when a statement or suite calls a step marker anywhere inside it (not in nested defs)."""
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and current is not node:
            continue
        if isinstance(current, cst.Call):
            func = current.func
            qual = qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if is_step_marker(current, qual):
                return True
        stack.extend(code_children(current))
    return False


def mentions_loader(expr: cst.BaseExpression) -> bool:
    """True when an iterable names a data loader (``loader``, ``dataloader``, ``data_iter``);
    ``range(len(loader))`` counts its batches (the loop's names are ints, see ``_bind_loop_target``)."""
    stack: List[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if facts.is_loader_name(node.value):
                return True
        elif isinstance(node, cst.Attribute):
            if facts.is_loader_name(node.attr.value):
                return True
            stack.append(node.value)
        elif isinstance(node, cst.Call):
            stack.append(node.func)
            stack.extend(arg.value for arg in node.args)
        elif isinstance(node, (cst.Tuple, cst.List)):
            stack.extend(el.value for el in node.elements)
        elif isinstance(node, cst.Subscript):
            stack.append(node.value)
    return False


def draws_batches(body: Sequence[cst.CSTNode], is_loader: Callable[[cst.BaseExpression], bool]) -> bool:
    """A ``while`` loop's body takes the next batch of a loader itself (``batch = next(train_iter)``),
    in its own statements or their branches, not in a nested loop: it runs once per batch."""
    stack: List[cst.CSTNode] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "next" \
                and node.args and is_loader(node.args[0].value):
            return True
        stack.extend(code_children(node))
    return False


def draws_and_moves(body: Sequence[cst.CSTNode]) -> bool:
    """A loop's body takes the next item of an iterator and moves it to a device itself (``x =
    next(batches).to(device)``, or ``x, y = next(it)`` then ``x.cuda()``), in its own statements, not in a
    nested loop: it runs once per batch, whatever the iterator is called."""
    drawn: Set[str] = set()
    stack: List[cst.CSTNode] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("to", "cuda") \
                and is_next_call(node.func.value):
            return True
        if isinstance(node, cst.Assign) and is_next_call(node.value):
            for target in node.targets:
                drawn |= target_names(target.target)
        if isinstance(node, cst.CompFor) and is_next_call(node.iter):  # `(t.to(device) for t in next(batches))`
            drawn |= target_names(node.target)
        stack.extend(code_children(node))
    return bool(drawn) and any(moves_items(statement, drawn) for statement in body)


def is_next_call(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "next" and bool(expr.args)


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _converted_root(expr: cst.BaseExpression) -> Optional[str]:
    """The item a moved value was made from: ``x`` of ``x["a"]`` or ``torch.from_numpy(np.asarray(x))`` (not of
    ``p.detach()``: a loop moving what a method of its items gives need not be over data)."""
    for _ in range(8):
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        elif isinstance(expr, cst.Call) and expr.args and expr.args[0].keyword is None:
            expr = expr.args[0].value  # `torch.from_numpy(x)`
        else:
            break
    return expr.value if isinstance(expr, cst.Name) else None


def target_names(target: cst.BaseExpression) -> Set[str]:
    """The plain names a loop or comprehension target binds."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: Set[str] = set()
        for element in target.elements:
            out |= target_names(element.value)
        return out
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()


def moves_items(body: cst.CSTNode, names: Set[str]) -> bool:
    """Does a loop body move the loop's items to a device (``x.to(device)``, ``x.cuda()``,
    ``{k: v.to(dev) for k, v in batch.items()}``, ``move_to_device(batch)``)? Then the items are
    host tensors until moved: the loader yields them on the CPU."""
    names = set(names)
    calls: List[cst.Call] = []
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        kind = type(node)  # exact type tests on this hot scan (see ``imports.dotted``)
        if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Lambda:
            continue
        if kind is cst.Call:
            calls.append(node)  # type: ignore[arg-type]
        elif kind is cst.CompFor and isinstance(node, cst.CompFor) and (_root_name(node.iter) in names or (
            isinstance(node.iter, cst.Call)
            and isinstance(node.iter.func, cst.Attribute) and _root_name(node.iter.func.value) in names
        )):
            names |= target_names(node.target)
        stack.extend(code_children(node))
    for call in calls:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda") and _converted_root(func.value) in names:
            return True
        called = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if isinstance(called, str) and ("device" in called.lower() or "cuda" in called.lower()) and any(
            _root_name(arg.value) in names for arg in call.args
        ):
            return True
    return False


def builds_from_items(body: cst.CSTNode, names: Set[str]) -> bool:
    """Does a loop body build a device tensor from the loop's items (``torch.tensor([vocab[w] for w in
    words], device=dev)``): a tensor factory given ``device=`` whose data is an item, a part of one, or a
    comprehension over one? The items' data goes to the device each iteration, as ``.to()`` sends it."""
    return any(isinstance(node, cst.Call) and _built_on_device_from(node, names) for node in walk_code(body))


def _built_on_device_from(call: cst.Call, names: Set[str]) -> bool:
    func = call.func
    called = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if called not in HOST_DATA_CONSTRUCTORS or not call.args or call.args[0].keyword is not None or call.args[0].star or not any(
            arg.keyword is not None and arg.keyword.value == "device" for arg in call.args):
        return False
    data = call.args[0].value
    if isinstance(data, (cst.ListComp, cst.GeneratorExp)):
        data = data.for_in.iter
    return _root_name(data) in names


def iterated(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """The loader under ``enumerate(loader)``, ``tqdm(loader)``, ``iter(loader)``."""
    while isinstance(iterable, cst.Call) and iterable.args and iterable.args[0].keyword is None \
            and dotted(iterable.func) in ("enumerate", "iter", "tqdm", "tqdm.tqdm"):
        iterable = iterable.args[0].value
    return iterable


def iterates_own_tensors(iterable: cst.BaseExpression) -> bool:
    """``model.parameters()``, ``self.buffers()``, ``m.named_parameters()``, ``state.values()``..."""
    call = iterated(iterable)
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
        and call.func.attr.value in torch_api.OWN_TENSOR_ITERATORS


def moves_each_item(node: cst.ListComp) -> bool:
    """``[x.to(device) for x in batch]``: each item itself moved (a field of it, ``x["instances"]
    .to(d)``, may be another object with a ``.to()``)."""
    elt, comp = node.elt, node.for_in
    return isinstance(elt, cst.Call) and isinstance(elt.func, cst.Attribute) and elt.func.attr.value in ("to", "cuda") \
        and isinstance(elt.func.value, cst.Name) and isinstance(comp.target, cst.Name) \
        and elt.func.value.value == comp.target.value and comp.inner_for_in is None

