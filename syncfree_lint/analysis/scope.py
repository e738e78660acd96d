"""Step scope: which statements run once per training or evaluation step.

A finding is recorded with the frames around it (loops and the enclosing function) and whether
an interval guard covers it. Whether a loop is a step loop is known when the loop ends; whether a
helper is reached from a step is known once every file of the run has been read, so findings
inside functions stay *conditional* until ``reachable`` has seen the whole call graph.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

STEP = "<step>"  # the owner of code that runs once per step by its own position

_OPTIMIZER_NAME = re.compile(r"(optim|opt$|^opt|optimizer|scaler)", re.IGNORECASE)
_LOADER_WORDS = ("loader", "data_iter", "dataiter")


class FunctionFrame:
    __slots__ = ("qualname", "name", "is_step", "class_frame", "rest_guarded", "statements_seen",
                 "returns", "params")

    def __init__(self, qualname: str, name: str, is_step: bool, class_frame: Optional["ClassFrame"]) -> None:
        self.qualname = qualname
        self.name = name
        self.is_step = is_step
        self.class_frame = class_frame
        self.rest_guarded = False
        self.statements_seen = 0
        self.returns: List[Optional[str]] = []
        self.params: Set[str] = set()


class LoopFrame:
    __slots__ = ("is_step", "over_loader", "rest_guarded")

    def __init__(self, over_loader: bool) -> None:
        self.over_loader = over_loader
        self.is_step = over_loader  # a marker call in its own body makes it one too
        self.rest_guarded = False


class ClassFrame:
    __slots__ = ("qualname", "name", "is_module", "bases", "attrs")

    def __init__(self, qualname: str, name: str, is_module: bool, bases: Tuple[str, ...]) -> None:
        self.qualname = qualname
        self.name = name
        self.is_module = is_module
        self.bases = bases
        self.attrs: Dict[str, Optional[str]] = {}


@dataclass
class Placement:
    """Where a finding or a call sits: its loops (innermost last) and its function."""

    loops: Tuple[LoopFrame, ...]
    function: Optional[FunctionFrame]
    guarded: bool

    def owner(self) -> Optional[str]:
        """STEP, the enclosing function's qualname, or None (module level: runs once)."""
        if any(loop.is_step for loop in self.loops):
            return STEP
        if self.function is None:
            return None
        if self.function.is_step:
            return STEP
        return self.function.qualname


def is_step_marker(call: cst.Call, qualname: Optional[str]) -> bool:
    """``.backward(``, ``torch.autograd.backward``, ``<optimizer>.step(``, ``.zero_grad(``."""
    func = call.func
    if qualname == "torch.autograd.backward":
        return True
    if not isinstance(func, cst.Attribute):
        return False
    attr = func.attr.value
    if attr in ("backward", "zero_grad"):
        return True
    if attr == "step":
        receiver = func.value
        name = receiver.attr.value if isinstance(receiver, cst.Attribute) else getattr(receiver, "value", None)
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
            name = receiver.func.attr.value  # scaler.scale(...).step? rare, accept by name
        return isinstance(name, str) and bool(_OPTIMIZER_NAME.search(name))
    return False


def mentions_loader(expr: cst.BaseExpression) -> bool:
    """True when an iterable names a data loader (``loader``, ``dataloader``, ``data_iter``)."""
    stack: List[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            low = node.value.lower()
            if any(word in low for word in _LOADER_WORDS):
                return True
        elif isinstance(node, cst.Attribute):
            low = node.attr.value.lower()
            if any(word in low for word in _LOADER_WORDS):
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


def has_modulo(expr: cst.BaseExpression) -> bool:
    """True when a test uses ``%`` on numbers (an interval guard), not string formatting."""
    stack: List[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo) and not isinstance(
                node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
            ):
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


_LOG_FLAG = re.compile(r"(^|_)(track|tracking|report|log|logging|verbose|wandb|tensorboard|debug)($|_)", re.IGNORECASE)


def is_logging_flag(expr: cst.BaseExpression) -> bool:
    """``if args.with_tracking:`` / ``if self.report_accuracy and ...``: code that only logs."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return is_logging_flag(expr.left) or is_logging_flag(expr.right)
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else None
    return isinstance(name, str) and bool(_LOG_FLAG.search(name))


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
    says_cpu = any(
        (isinstance(side, cst.SimpleString) and "cpu" in side.value)
        or (isinstance(side, cst.Call) and any(isinstance(a.value, cst.SimpleString) and "cpu" in a.value.value for a in side.args))
        for side in sides
    )
    return mentions_device and says_cpu


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

@dataclass
class CallGraph:
    """Edges between owners: ``STEP`` or a function id -> function ids, with a guard flag."""

    edges: Dict[str, List[Tuple[str, bool]]] = field(default_factory=dict)

    def add(self, source: str, target: str, guarded: bool) -> None:
        self.edges.setdefault(source, []).append((target, guarded))

    def reachable(self) -> Tuple[Set[str], Set[str]]:
        """(reached on an unguarded path, reached at all) from STEP."""
        return self._walk(follow_guarded=False), self._walk(follow_guarded=True)

    def _walk(self, follow_guarded: bool) -> Set[str]:
        seen: Set[str] = set()
        stack = [STEP]
        while stack:
            node = stack.pop()
            for target, guarded in self.edges.get(node, ()):
                if guarded and not follow_guarded:
                    continue
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen


def merge_graphs(graphs: Iterable[CallGraph]) -> CallGraph:
    out = CallGraph()
    for graph in graphs:
        for source, targets in graph.edges.items():
            out.edges.setdefault(source, []).extend(targets)
    return out
