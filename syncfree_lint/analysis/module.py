"""One pass over one parsed file: bindings, tensor kinds, step scope, and every rule.

The walk visits nodes in source order. Bindings are updated as statements finish, so a rule
looking at an expression sees what the names held just before it. Rules are dispatched by node
type; they ask this object the shared questions (``kind``, ``qualname``, ``placement``) and call
``report``. Nothing here prints or reads files.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst

from syncfree_lint.analysis import tensors as T
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.metrics import MetricSite, metric_class
from syncfree_lint.analysis.positions import PositionFinder
from syncfree_lint.analysis.scope import (
    STEP, ClassFrame, FunctionFrame, LoopFrame, Placement, contains_step_marker, has_modulo, is_early_exit,
    is_equality_guard, is_flag_guard, is_host_branch, is_negated_flag, is_opt_in_call, is_step_marker,
    mentions_loader, moves_items, target_names,
)
from syncfree_lint.diagnostic import Diagnostic, Edit, Fix
from syncfree_lint.knowledge import frequency as facts
from syncfree_lint.fixes.plan import Replace

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.rules.base import Rule

# fields that never hold code worth visiting (whitespace, punctuation)
_SKIP_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "colon", "equal", "star", "dot", "leading_lines",
    "lines_after_decorators", "header", "footer", "newline", "trailing_whitespace",
    "operator", "lbracket", "rbracket", "lbrace", "rbrace", "asynchronous", "arrow",
    "whitespace_after_at", "default_comma", "relative", "quote", "prefix", "start", "end",
    "attr", "keyword",  # names that are not reads of a variable
})
_FIELD_CACHE: Dict[type, Tuple[str, ...]] = {}


_NODE_TYPES: Dict[type, bool] = {}


def _is_node(cls: type) -> bool:
    """``issubclass(cls, CSTNode)``, cached: abc checks are slow on this hot path."""
    known = _NODE_TYPES.get(cls)
    if known is None:
        known = _NODE_TYPES[cls] = issubclass(cls, cst.CSTNode)
    return known


def _fields(cls: type) -> Tuple[str, ...]:
    names = _FIELD_CACHE.get(cls)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(cls)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELD_CACHE[cls] = names
    return names


@dataclass
class Finding:
    """A rule's report before its position and owner are settled."""

    code: str
    message: str
    node: cst.CSTNode
    statement: Optional[cst.CSTNode]
    placement: Optional[Placement]  # None: reported wherever it is (not step-gated)
    fix: Optional[Fix] = None


@dataclass
class CallSite:
    placement: Placement
    ref: Tuple[str, ...]  # ("name", n) | ("self", class_qualname, method) | ("dotted", qualified)
    statement: Optional[cst.CSTNode] = None


@dataclass
class FileFacts:
    """What one file contributes to the run: findings, and its part of the call graph."""

    path: str
    module_name: str
    root: str
    definite: List[Diagnostic] = field(default_factory=list)
    conditional: Dict[str, List[Diagnostic]] = field(default_factory=dict)  # function id -> findings
    edges: List[Tuple[str, Tuple[str, ...], bool, Tuple[Tuple[str, str], ...]]] = field(default_factory=list)  # source, target ref, guarded, hops
    functions: Dict[str, str] = field(default_factory=dict)  # dotted name -> function id
    errors: List[Diagnostic] = field(default_factory=list)


class ModuleAnalysis:
    """Walks one module once, answering the shared questions for every rule."""

    def __init__(
        self,
        path: str,
        source: str,
        module: cst.Module,
        rules: Sequence["Rule"],
        step_functions: frozenset,
        tree: Optional[Any] = None,
        module_name: str = "",
        is_package: bool = False,
        root: str = "",
        uses_accelerator: bool = True,
        logging_words: Sequence[str] = facts.LOGGING_FLAG_WORDS,
        opt_in_words: Sequence[str] = facts.OPT_IN_FLAG_WORDS,
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.step_functions = step_functions
        self.module_name = module_name
        self.root = root
        self.uses_accelerator = uses_accelerator
        self.logging_words = tuple(logging_words)
        self.opt_in_words = tuple(opt_in_words)
        self.tree = tree  # the ``ast`` of the same source, for positions
        self.newline = "\r\n" if "\r\n" in source else ("\r" if "\r" in source and "\n" not in source else "\n")
        self.imports = ImportMap(module_name, is_package)
        self.inference = T.TensorInference(self.imports, self.lookup, self._call_kind, self.kind)
        self.findings: List[Finding] = []
        self.calls: List[CallSite] = []
        self.rule_errors: List[Tuple[str, BaseException]] = []
        self._dispatch: Dict[type, List["Rule"]] = {}
        self._rules_in_order = list(rules)
        for rule in rules:
            for node_type in rule.node_types:
                self._dispatch.setdefault(node_type, []).append(rule)
        self._disabled: Set[str] = set()
        self._kinds: Dict[int, Optional[str]] = {}
        self._qualnames: Dict[int, Optional[str]] = {}
        self._state: Dict[str, Dict[Any, Any]] = {}
        # scopes
        self.module_env: Dict[str, Optional[str]] = {}
        self._envs: List[Dict[str, Optional[str]]] = [self.module_env]
        self.function: Optional[FunctionFrame] = None
        self.class_frame: Optional[ClassFrame] = None
        self.loops: List[LoopFrame] = []
        self.guard_depth = 0
        self.statement: Optional[cst.CSTNode] = None
        self._stores: Set[int] = set()
        self._loop_calls: List[Tuple[LoopFrame, Tuple[str, ...]]] = []
        self.functions: Dict[str, FunctionFrame] = {}  # local qualname -> frame
        self.classes: Dict[str, ClassFrame] = {}
        self.returns: Dict[str, Optional[str]] = {}  # local qualname -> return kind
        self._marker_functions: Set[str] = set()
        self._stepping_functions: Set[str] = set()
        self._prefix: List[str] = []
        self._generators: Dict[str, str] = {}  # name bound to a local generator -> its qualname
        self.metric_sites: Dict[str, MetricSite] = {}  # bound name -> where the metric was built
        self.all_metric_sites: List[MetricSite] = []
        self.fix_plans: List[Any] = []
        self._call_args: Sequence[cst.Arg] = ()

    # ------------------------------------------------------------------ questions rules ask
    def kind(self, expr: cst.BaseExpression) -> Optional[str]:
        """The inferred kind of ``expr`` (see ``analysis.tensors``); memoised until a name is rebound."""
        key = id(expr)
        if key in self._kinds:
            return self._kinds[key]
        kind = self._kinds[key] = self.inference.infer(expr)
        return kind

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        """Positive evidence that ``expr`` is a tensor that may live on an accelerator."""
        return self.kind(expr) in T.DEVICE_TENSORS

    def maybe_tensor(self, expr: cst.BaseExpression) -> bool:
        """Not known to be anything but a device tensor (numpy, number, host tensor, module)."""
        return self.kind(expr) not in T.NOT_DEVICE

    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """The dotted name of a Name/Attribute chain through the imports (memoised per node)."""
        key = id(expr)
        if key in self._qualnames:
            return self._qualnames[key]
        qual = self._qualnames[key] = self.imports.qualname(expr)
        return qual

    def metric(self, expr: cst.BaseExpression) -> Optional[MetricSite]:
        """The torchmetrics object ``expr`` refers to (``self.acc``, ``metrics["acc"]``), or None."""
        if isinstance(expr, cst.Subscript):
            group = self.metric(expr.value)
            if group is None or not group.members:
                return group
            key = expr.slice[0].slice.value if isinstance(expr.slice[0].slice, cst.Index) else None  # type: ignore[union-attr]
            wanted = key.evaluated_value if isinstance(key, cst.SimpleString) else None
            return next((m for m in group.members if m.name == wanted), group.members[0])
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("to", "cuda"):
            return self.metric(expr.func.value)
        name = dotted(expr)
        return self.metric_sites.get(name) if name is not None else None

    def is_store(self, node: cst.CSTNode) -> bool:
        """True for an assignment target (``t[mask] = ...``)."""
        return id(node) in self._stores

    def state(self, rule: "Rule") -> Dict[Any, Any]:
        """Per-file scratch space for one rule."""
        return self._state.setdefault(rule.code, {})

    def report(
        self, rule: "Rule", node: cst.CSTNode, message: Optional[str] = None, fix: Optional[Fix] = None,
        statement: Optional[cst.CSTNode] = None,
    ) -> None:
        """Record a finding at ``node``; ``statement`` when the node is not in the current one."""
        placement = self.placement() if rule.step_only else None
        if placement is not None and placement.function is None and not placement.loops:
            return  # module-level code outside loops runs once
        self.findings.append(Finding(rule.code, message or rule.message, node, statement or self.statement, placement, fix))

    def placement(self) -> Placement:
        guarded = self.guard_depth > 0 or any(loop.rest_guarded for loop in self.loops)
        if self.function is not None and self.function.rest_guarded:
            guarded = True
        return Placement(tuple(self.loops), self.function, guarded)

    # ------------------------------------------------------------------ bindings
    def lookup(self, name: str) -> Optional[str]:
        for env in reversed(self._envs):
            if name in env:
                return env[name]
        if name.startswith("self.") and self.class_frame is not None:
            return self.class_frame.attrs.get(name)
        return None

    def _bind(self, name: str, kind: Optional[str]) -> None:
        if self._kinds:
            self._kinds.clear()
        self._envs[-1][name] = kind
        if name.startswith("self.") and self.class_frame is not None and self.function is not None:
            previous = self.class_frame.attrs.get(name)
            if kind is not None or previous is None:
                self.class_frame.attrs[name] = kind

    def _evidence(self, expr: cst.BaseExpression, kind: str) -> None:
        """Learn a name's kind from how it is used (``loss.backward()`` -> tensor)."""
        name = dotted(expr)
        if name is not None and self.lookup(name) is None and not self.imports.imported(name.split(".")[0]):
            self._bind(name, kind)

    def _bind_target(self, target: cst.BaseExpression, kind: Optional[str]) -> None:
        if isinstance(target, (cst.Name, cst.Attribute)):
            name = dotted(target)
            if name is not None:
                self._bind(name, kind)
        elif isinstance(target, (cst.Tuple, cst.List)):
            element_kind = kind if kind in T.DEVICE_TENSORS else None
            for element in target.elements:
                self._bind_target(element.value, element_kind)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None)

    def _metric_site(self, name: str, value: cst.BaseExpression) -> Optional[MetricSite]:
        """A torchmetrics construction, possibly moved (``Accuracy(...).to(device)``), a dict of
        them, ``nn.ModuleDict({...})`` or ``MetricCollection(...)``."""
        moved = False
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("to", "cuda"):
            moved = True
            value = value.func.value
        if isinstance(value, cst.Dict):
            members = []
            for element in value.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                    member = self._metric_site(str(element.key.evaluated_value), element.value)
                    if member is not None:
                        members.append(member)
            if not members:
                return None
            return MetricSite(name, "dict", None, self.statement, moved, tuple(members))  # type: ignore[arg-type]
        if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Name, cst.Attribute)):
            return None
        qual = self.qualname(value.func) or ""
        if qual in ("torch.nn.ModuleDict",) and value.args:
            inner = self._metric_site(name, value.args[0].value)
            return inner
        class_name = metric_class(qual)
        if class_name is None:
            return None
        members: Tuple[MetricSite, ...] = ()
        if class_name == "MetricCollection" and value.args:
            first = value.args[0].value
            if isinstance(first, cst.Dict):
                inner = self._metric_site(name, first)
                members = inner.members if inner is not None else ()
            elif isinstance(first, (cst.List, cst.Tuple)):
                found = [self._metric_site(name, el.value) for el in first.elements]
                members = tuple(m for m in found if m is not None)
        in_module = name.startswith("self.") and self.class_frame is not None and self.class_frame.is_module
        site = MetricSite(name, class_name, value, self.statement, moved=moved or in_module, members=members,
                          library=qual.split(".")[0])
        return site

    def _assign(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        if len(targets) == 1:
            target_name = dotted(targets[0])
            if target_name is not None:
                site = self._metric_site(target_name, value)
                if site is not None:
                    self.metric_sites[target_name] = site
                    self.all_metric_sites.append(site)
                    self.all_metric_sites.extend(site.members)
                    self._bind(target_name, T.METRIC)
                    return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and len(targets) == 1:
            name = dotted(targets[0])
            local = self.resolve_local(("name", value.func.value, ".".join(self._prefix)))
            if name is not None and local:
                self._generators[name] = local[0]  # next(name) runs the function's body
        for target in targets:
            if isinstance(target, (cst.Tuple, cst.List)):
                kinds = self._elementwise(value, len(target.elements))
                if kinds is not None:
                    for element, kind in zip(target.elements, kinds):
                        self._bind_target(element.value, kind)
                    continue
            self._bind_target(target, self.kind(value))

    def _elementwise(self, value: cst.BaseExpression, count: int) -> Optional[List[Optional[str]]]:
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == count:
            return [self.kind(el.value) for el in value.elements]
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in ("prepare", "setup") and len(value.args) == count:
                return [self.kind(arg.value) for arg in value.args]
        return None

    def _call_kind(self, call: cst.Call) -> Optional[str]:
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
            if name in self.returns:
                return self.returns[name]
            if name in self.classes:
                return T.MODULE if self.classes[name].is_module else None
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            if self.class_frame is not None:
                key = f"{self.class_frame.qualname}.{func.attr.value}"
                if key in self.returns:
                    return self.returns[key]
        return None

    # ------------------------------------------------------------------ the walk
    def run(self) -> None:
        self._visit_body(self.module.body)
        self._settle_loops()
        self.statement = None
        for rule in self._rules_in_order:
            if rule.code in self._disabled:
                continue
            try:
                rule.finish(self)
            except Exception as exc:
                self._disabled.add(rule.code)
                self.rule_errors.append((rule.code, exc))

    def _visit(self, node: cst.CSTNode) -> None:
        special = _SPECIAL.get(type(node))
        if special is not None:
            special(self, node)
            return
        self._rules(node)
        self._children(node)

    def _children(self, node: cst.CSTNode) -> None:
        visit = self._visit
        for name in _fields(type(node)):
            value = getattr(node, name)
            kind = type(value)
            if kind is tuple or kind is list:
                for child in value:
                    if _is_node(type(child)):
                        visit(child)
            elif _is_node(kind):
                visit(value)

    def _rules(self, node: cst.CSTNode) -> None:
        rules = self._dispatch.get(type(node))
        if not rules:
            return
        for rule in rules:
            if rule.code in self._disabled:
                continue
            try:
                rule.check(node, self)
            except RecursionError:
                raise
            except Exception as exc:  # a bug in one rule must not stop the others
                self._disabled.add(rule.code)
                self.rule_errors.append((rule.code, exc))

    def _visit_body(self, body: Sequence[cst.CSTNode]) -> None:
        for statement in body:
            self._visit(statement)

    def _suite(self, suite: Optional[cst.CSTNode]) -> None:
        if suite is None:
            return
        if isinstance(suite, cst.IndentedBlock):
            self._visit_body(suite.body)
        elif isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                self.statement = small
                self._visit(small)
        else:
            self._visit(suite)

    # statements
    def _simple_line(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            self.statement = small
            self._visit(small)

    def _assign_stmt(self, node: cst.Assign) -> None:
        self._rules(node)
        self._visit(node.value)
        for target in node.targets:
            self._mark_store(target.target)
            self._visit(target.target)
        self._assign([t.target for t in node.targets], node.value)

    def _ann_assign(self, node: cst.AnnAssign) -> None:
        self._rules(node)
        if node.value is not None:
            self._visit(node.value)
            self._mark_store(node.target)
            self._visit(node.target)
            self._assign([node.target], node.value)

    def _aug_assign(self, node: cst.AugAssign) -> None:
        self._rules(node)
        self._visit(node.value)
        self._mark_store(node.target)
        self._visit(node.target)
        name = dotted(node.target)
        if name is not None:
            self._bind(name, T.combine(self.lookup(name), self.kind(node.value)))

    def _mark_store(self, target: cst.CSTNode) -> None:
        if isinstance(target, (cst.Subscript, cst.Name, cst.Attribute)):
            self._stores.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._mark_store(element.value)

    def _named_expr(self, node: cst.NamedExpr) -> None:
        self._rules(node)
        self._visit(node.value)
        self._bind_target(node.target, self.kind(node.value))

    def _return(self, node: cst.Return) -> None:
        self._rules(node)
        if node.value is not None:
            self._visit(node.value)
            if self.function is not None:
                value = node.value
                if isinstance(value, cst.Tuple):
                    kinds = [self.kind(el.value) for el in value.elements]
                    kind = T.TENSOR if any(k in T.DEVICE_TENSORS for k in kinds) else None
                else:
                    kind = self.kind(value)
                self.function.returns.append(kind)

    def _import(self, node: cst.Import) -> None:
        self.imports.add_import(node)
        self._qualnames.clear()
        self._kinds.clear()

    def _import_from(self, node: cst.ImportFrom) -> None:
        self.imports.add_import_from(node)
        self._qualnames.clear()
        self._kinds.clear()

    def _if(self, node: cst.If) -> None:
        self.statement = node
        self._rules(node)
        self._visit(node.test)
        guard = self._is_guard(node)
        if guard:
            self.guard_depth += 1
        env = self._envs[-1]
        before = dict(env)
        self._suite(node.body)
        if guard:
            self.guard_depth -= 1
        after_body = dict(env)
        env.clear()
        env.update(before)
        self._kinds.clear()
        if node.orelse is not None:
            if isinstance(node.orelse, cst.If):
                self._if(node.orelse)
            else:
                self._suite(node.orelse.body)
        for name in after_body.keys() | env.keys():
            if after_body.get(name, before.get(name)) is not env.get(name, before.get(name)):
                env[name] = T.merge(after_body.get(name, before.get(name)), env.get(name, before.get(name)))
        self._kinds.clear()
        exit_kind = is_early_exit(node)
        if exit_kind == "continue" and guard and self.loops:
            self.loops[-1].rest_guarded = True
        elif exit_kind == "return" and self.function is not None and not self.loops:
            # ``if not should_log: return`` anywhere in the function guards what follows it
            if guard or (is_negated_flag(node.test) and self.kind(node.test.expression) not in T.DEVICE_TENSORS):  # type: ignore[attr-defined]
                self.function.rest_guarded = True

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

    def _for(self, node: cst.For) -> None:
        self.statement = node
        self._rules(node)
        self._visit(node.iter)
        over_loader = mentions_loader(node.iter) or self.kind(node.iter) == T.LOADER
        moved = over_loader and moves_items(node.body, target_names(node.target))
        self._bind_loop_target(node.target, node.iter, over_loader, T.HOST_BATCH if moved else T.BATCH)
        loop = LoopFrame(over_loader and self.uses_accelerator, self.function, node)
        self.loops.append(loop)
        iter_ref = self._iterated_function(node.iter)
        if iter_ref is not None:
            self.calls.append(CallSite(self.placement(), iter_ref, node))
        self._suite(node.body)
        self._close_loop()
        if node.orelse is not None:
            self._suite(node.orelse.body)

    def _iterated_function(self, iterable: cst.BaseExpression) -> Optional[Tuple[str, ...]]:
        """A generator run by the loop: ``for b in batches():`` or ``for b in it`` (it = batches())."""
        prefix = ".".join(self._prefix)
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value in ("enumerate", "iter", "tqdm", "zip"):
            if iterable.args:
                return self._iterated_function(iterable.args[0].value)
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            return ("name", iterable.func.value, prefix)
        if isinstance(iterable, cst.Name) and iterable.value in self._generators:
            return ("name", iterable.value, prefix)
        return None

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression, over_loader: bool,
                          item_kind: str = T.BATCH) -> None:
        """Kinds of a loop's names: ``enumerate`` and ``range`` give host ints, a mapping's keys
        are host values (``for k, v in batch.items()``), a loader gives batches (``item_kind``:
        host tensors when the loop moves them to a device itself)."""
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            called = iterable.func.value
            if called == "enumerate" and iterable.args and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self._bind_target(target.elements[0].value, T.NUMBER)
                self._bind_loop_target(target.elements[1].value, iterable.args[0].value, over_loader, item_kind)
                return
            if called == "range":
                self._bind_target(target, T.NUMBER)
                return
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
                and iterable.func.attr.value in ("items", "keys") and not iterable.args:
            mapping = self.kind(iterable.func.value)
            if iterable.func.attr.value == "keys":
                self._bind_target(target, T.OTHER)
            elif isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self._bind_target(target.elements[0].value, T.OTHER)
                value = target.elements[1].value
                if mapping == T.BATCH:
                    self._bind_batch(value, T.BATCH)
                else:
                    self._bind_target(value, T.TENSOR if mapping in T.DEVICE_TENSORS else None)
            else:
                self._bind_target(target, None)
            return
        if over_loader:
            self._bind_batch(target, item_kind)
            return
        kind = self.kind(iterable)
        if kind == T.BATCH:
            self._bind_batch(target, T.BATCH)
        else:
            self._bind_target(target, T.TENSOR if kind in T.DEVICE_TENSORS else None)

    def _bind_batch(self, target: cst.BaseExpression, kind: str) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_batch(element.value, kind)
        elif isinstance(target, (cst.Name, cst.Attribute)):
            self._bind_target(target, kind)

    def _while(self, node: cst.While) -> None:
        self.statement = node
        self._rules(node)
        loop = LoopFrame(False, self.function, node)
        self.loops.append(loop)
        self._visit(node.test)
        self._suite(node.body)
        self._close_loop()
        if node.orelse is not None:
            self._suite(node.orelse.body)

    def _close_loop(self) -> None:
        loop = self.loops.pop()
        if loop.is_step and loop.function is not None:
            loop.function.has_step_loop = True

    def _compound(self, node: cst.CSTNode) -> None:
        """With / Try / Match: visit the header in the statement, then the suites."""
        self.statement = node
        self._rules(node)
        if isinstance(node, cst.With):
            for item in node.items:
                self._visit(item.item)
                if item.asname is not None:
                    self._bind_target(item.asname.name, None)  # type: ignore[arg-type]
            self._suite(node.body)
        elif isinstance(node, (cst.Try, cst.TryStar)):
            self._suite(node.body)
            for handler in node.handlers:
                self.statement = node
                if handler.type is not None:
                    self._visit(handler.type)
                self._suite(handler.body)
            if node.orelse is not None:
                self._suite(node.orelse.body)
            if node.finalbody is not None:
                self._suite(node.finalbody.body)
        else:
            self._children(node)

    def _function(self, node: cst.FunctionDef) -> None:
        self.statement = node
        self._rules(node)
        for decorator in node.decorators:
            self._visit(decorator.decorator)
        name = node.name.value
        qualname = ".".join(self._prefix + [name])
        is_step = (name in self.step_functions or (
            name == "forward" and self.class_frame is not None and self.class_frame.is_module
        )) and self.uses_accelerator
        frame = FunctionFrame(qualname, name, is_step, self.class_frame, node)
        self.functions[qualname] = frame
        saved = (self.function, self.loops, self.guard_depth)
        self.function, self.loops, self.guard_depth = frame, [], 0
        env: Dict[str, Optional[str]] = {}
        self._envs.append(env)
        self._kinds.clear()
        for param in self._params(node.params):
            pname = param.name.value
            if pname == "self" and self.class_frame is not None:
                env[pname] = T.MODULE if self.class_frame.is_module else None
            elif pname == "batch" or (is_step and pname.startswith(facts.BATCH_PARAMS) and pname not in facts.BATCH_PARAM_EXCLUDE):
                env[pname] = T.BATCH
            else:
                env[pname] = self._annotated_kind(param.annotation)
            if param.default is not None:
                self._visit(param.default)
        self._prefix.append(name)
        self._suite(node.body)
        self._prefix.pop()
        self._envs.pop()
        self._kinds.clear()
        self.function, self.loops, self.guard_depth = saved
        if frame.has_step_loop:  # an epoch function: its own markers run once per call
            self._marker_functions.discard(qualname)
        elif qualname in self._stepping_functions and self.uses_accelerator \
                and not name.startswith(facts.TEST_FUNCTION_PREFIX):
            frame.is_step = True
        kinds = set(frame.returns)
        if len(kinds) == 1:
            self.returns[qualname] = kinds.pop()
        elif kinds and kinds <= T.DEVICE_TENSORS | {None} and kinds & T.DEVICE_TENSORS:
            self.returns[qualname] = T.TENSOR

    def _annotated_kind(self, annotation: Optional[cst.Annotation]) -> Optional[str]:
        """``x: torch.Tensor`` / ``Optional[torch.Tensor]``: the author says it is a tensor."""
        if annotation is None:
            return None
        node = annotation.annotation
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            if (self.qualname(node.value) or "").rsplit(".", 1)[-1] == "Optional":
                node = node.slice[0].slice.value
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
            if isinstance(node.right, cst.Name) and node.right.value == "None":
                node = node.left  # torch.Tensor | None
        if isinstance(node, (cst.Name, cst.Attribute)) and self.qualname(node) == "torch.Tensor":
            return T.TENSOR
        return None

    @staticmethod
    def _params(params: cst.Parameters) -> List[cst.Param]:
        out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        if isinstance(params.star_arg, cst.Param):
            out.append(params.star_arg)
        if params.star_kwarg is not None:
            out.append(params.star_kwarg)
        return out

    def _class(self, node: cst.ClassDef) -> None:
        self.statement = node
        self._rules(node)
        for decorator in node.decorators:
            self._visit(decorator.decorator)
        bases = []
        is_module = False
        for base in node.bases:
            self._visit(base.value)
            qual = self.imports.qualname(base.value) or ""
            bases.append(qual)
            last = qual.rsplit(".", 1)[-1]
            if qual.startswith("torch.nn.") or last.endswith(facts.MODULE_BASE_SUFFIXES) or (
                qual in self.classes and self.classes[qual].is_module
            ):
                is_module = True
        name = node.name.value
        qualname = ".".join(self._prefix + [name])
        frame = ClassFrame(qualname, name, is_module, tuple(bases))
        self.classes[qualname] = frame
        if is_module and not self._prefix:
            self.module_env[name] = T.MODULE_CLASS
        saved = self.class_frame
        self.class_frame = frame
        self._prefix.append(name)
        self._suite(node.body)
        self._prefix.pop()
        self.class_frame = saved

    def _call(self, node: cst.Call) -> None:
        self._rules(node)
        func = node.func
        qual = self.qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if is_step_marker(node, qual):
            if self.loops:
                self.loops[-1].is_step = self.loops[-1].is_step or self.uses_accelerator
            elif self.function is not None:
                self._marker_functions.add(self.function.qualname)
                if isinstance(func, cst.Attribute) and func.attr.value != "zero_grad":
                    # backward or an optimizer step in its own body: the function *is* a step
                    # (unless it turns out to hold its own step loop: an epoch function)
                    self._stepping_functions.add(self.function.qualname)
        self._learn_from_call(node, func, qual)
        self._call_args = node.args
        ref = self._call_ref(func, qual)
        if ref is not None and (self.function is not None or self.loops):
            site = CallSite(self.placement(), ref, self.statement)
            self.calls.append(site)
            if self.loops:
                self._loop_calls.append((self.loops[-1], ref))
        self._children(node)

    def _learn_from_call(self, node: cst.Call, func: cst.BaseExpression, qual: Optional[str]) -> None:
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr in ("to", "cuda"):
                site = self.metric(func.value)
                if site is not None:
                    site.moved = True
                    for member in site.members:
                        member.moved = True
            if attr == "backward" and not node.args:
                self._evidence(func.value, T.TENSOR)
            elif attr == "backward" and node.args:
                self._evidence(node.args[0].value, T.TENSOR)  # accelerator.backward(loss)
            elif attr in T.MODULE_EVIDENCE_METHODS and attr != "zero_grad":
                self._evidence(func.value, T.MODULE)
        if qual is not None and qual.startswith("torch.distributed.") and node.args:
            if qual.rsplit(".", 1)[-1] in ("all_reduce", "reduce", "broadcast", "all_gather_into_tensor"):
                self._evidence(node.args[0].value, T.TENSOR)

    def _call_ref(self, func: cst.BaseExpression, qual: Optional[str]) -> Optional[Tuple[str, ...]]:
        prefix = ".".join(self._prefix)
        if isinstance(func, cst.Name):
            if func.value == "next" and self._call_args and isinstance(self._call_args[0].value, cst.Name):
                it = self._call_args[0].value.value
                if it in self._generators:
                    return ("name", it, prefix)
            if self.imports.imported(func.value):
                return ("dotted", qual or func.value)
            return ("name", func.value, prefix)
        if isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value == "self" and self.class_frame is not None:
                return ("self", self.class_frame.qualname, func.attr.value)
            text = dotted(func)
            if text is None:
                return None
            if self.imports.imported(text.split(".")[0]):
                head = (qual or "").split(".")[0]
                if head in ("torch", "numpy", "math", "os", "sys", "time", "logging", "random"):
                    return None
                return ("dotted", qual or text)
            return ("name", text, prefix)  # Class.static_method() of this module
        return None

    def _comp_for(self, node: cst.CompFor) -> None:
        self._rules(node)
        self._visit(node.iter)
        self._bind_loop_target(node.target, node.iter, mentions_loader(node.iter))
        for condition in node.ifs:
            self._visit(condition)
        if node.inner_for_in is not None:
            self._visit(node.inner_for_in)

    def _comprehension(self, node: cst.CSTNode) -> None:
        """Visit the ``for`` clauses before the element, as Python evaluates them."""
        self._rules(node)
        self._visit(node.for_in)  # type: ignore[attr-defined]
        for name in ("elt", "key", "value"):
            part = getattr(node, name, None)
            if part is not None:
                self._visit(part)

    def _lambda(self, node: cst.Lambda) -> None:
        self._rules(node)
        self._envs.append({p.name.value: None for p in self._params(node.params)})
        self._kinds.clear()
        self._visit(node.body)
        self._envs.pop()
        self._kinds.clear()

    # ------------------------------------------------------------------ settling
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

    def resolve_local(self, ref: Tuple[str, ...]) -> List[str]:
        """The local qualnames a call may run, when they are defined in this module.

        A bare name is looked up from the innermost enclosing function outwards; ``self.m()``
        finds ``m`` in the class or its local bases, plus overrides in local subclasses."""
        if ref[0] == "name":
            parts = ref[2].split(".") if len(ref) > 2 and ref[2] else []
            for depth in range(len(parts), -1, -1):
                key = ".".join(parts[:depth] + [ref[1]])
                if key in self.functions:
                    return [key]
                if key in self._generators:
                    return [self._generators[key]]
            return []
        if ref[0] == "self":
            found: List[str] = []
            owner = self.classes.get(ref[1])
            seen = 0
            while owner is not None and seen < 10:
                key = f"{owner.qualname}.{ref[2]}"
                if key in self.functions:
                    found.append(key)
                    break
                owner = next((self.classes[b] for b in owner.bases if b in self.classes), None)
                seen += 1
            for sub in self._subclasses(ref[1]):
                key = f"{sub}.{ref[2]}"
                if key in self.functions and key not in found:
                    found.append(key)
            return found
        return []

    def _subclasses(self, qualname: str) -> List[str]:
        out, frontier = [], [qualname]
        while frontier:
            base = frontier.pop()
            for name, frame in self.classes.items():
                if base in frame.bases and name not in out:
                    out.append(name)
                    frontier.append(name)
        return out

    def _fix(self, finding: Finding, finder: PositionFinder) -> Optional[Fix]:
        plan = finding.fix
        if plan is None:
            return None
        if isinstance(plan, Fix):
            return plan
        parts = plan.build()
        if not parts:
            return None
        edits = tuple(_edit_for(part, finder, self.newline) for part in parts)
        return Fix(plan.title, plan.applicability, edits)

    def _origin_hop(self, origin: cst.CSTNode, finder: PositionFinder) -> Tuple[str, str]:
        line = finder.position(origin, origin)[0]
        if isinstance(origin, cst.FunctionDef):
            return (f"{self.path}:{line}", f"step function {origin.name.value}()")
        return (f"{self.path}:{line}", "step loop")

    def _hops(self, site: CallSite, finder: PositionFinder, from_step: bool) -> Tuple[Tuple[str, str], ...]:
        """The reach chain's links for one call: the step's origin (when the caller is the step
        itself), then the call."""
        hops = []
        origin = site.placement.step_origin() if from_step else None
        if origin is not None:
            hops.append(self._origin_hop(origin, finder))
        statement = site.statement
        line = finder.position(statement, statement)[0] if statement is not None else 1
        hops.append((f"{self.path}:{line}", _callee(site.ref)))
        return tuple(hops)

    def facts(self, report_guarded: bool, noqa: "NoqaFilter", fixes: bool = True) -> FileFacts:
        """``fixes=False`` skips building fix edits (they need exact positions, which cost a
        code generation pass): plain reports do not show them."""
        """Positions, owners and the call graph of this file, ready for the whole run."""
        facts = FileFacts(self.path, self.module_name, self.root)
        function_id = lambda qual: f"{self.path}::{qual}"  # noqa: E731
        for qual in self.functions:
            full = f"{self.module_name}.{qual}" if self.module_name else qual
            facts.functions[full] = function_id(qual)
        finder = PositionFinder(self.source, self.module, self.tree) if self.calls else None
        for site in self.calls:
            owner = site.placement.owner()
            if owner is None:
                continue
            source = STEP if owner == STEP else function_id(owner)
            local = self.resolve_local(site.ref)
            if not local and site.ref[0] != "dotted":
                continue
            assert finder is not None
            hops = self._hops(site, finder, owner == STEP)
            for target in local:
                facts.edges.append((source, ("id", function_id(target)), site.placement.guarded, hops))
            if not local:
                facts.edges.append((source, ("dotted", site.ref[1], self.root), site.placement.guarded, hops))
        for finding in self.findings:
            placement = finding.placement
            owner = STEP if placement is None else placement.owner()
            if owner is None:
                continue
            guarded = placement is not None and placement.guarded
            if guarded and not report_guarded and owner == STEP:
                continue
            if finder is None:
                finder = PositionFinder(self.source, self.module, self.tree)
            line, col, end_line, end_col = finder.position(finding.statement, finding.node)
            if noqa.suppressed(finder.line_text(line), finding.code):
                continue
            origin = placement.step_origin() if placement is not None and owner == STEP else None
            reach = (self._origin_hop(origin, finder),) if origin is not None else ()
            diagnostic = Diagnostic(
                self.path, line, col, finding.code, finding.message, self._fix(finding, finder) if fixes else None,
                end_line, end_col, guarded, reach,
            )
            if owner == STEP:
                facts.definite.append(diagnostic)
            else:
                facts.conditional.setdefault(function_id(owner), []).append(diagnostic)
        for code, exc in self.rule_errors:
            facts.errors.append(Diagnostic(
                self.path, 1, 1, "SFL001",
                f"internal error in rule {code}: {type(exc).__name__}: {exc} (other rules still ran; please report this)",
            ))
        return facts


def _callee(ref: Tuple[str, ...]) -> str:
    return (ref[2] if ref[0] == "self" else ref[1].rsplit(".", 1)[-1]) + "()"


def _edit_for(part: Any, finder: PositionFinder, newline: str) -> Edit:
    """Text edits at exact positions (libcst's own), never found by searching the text."""
    if isinstance(part, Replace):
        line, col, end_line, end_col = finder.exact(part.node)
        return Edit((line, col - 1), (end_line, end_col - 1), part.text)
    line, _, end_line, end_col = finder.exact(part.statement)
    text = finder.line_text(line)
    indent = text[: len(text) - len(text.lstrip(" \t"))]  # the new line sits in the same block
    return Edit((end_line, end_col - 1), (end_line, end_col - 1), newline + indent + part.text)


class NoqaFilter:
    """``# noqa`` and ``# noqa: SFL101,SFL2`` read as flake8 7 reads them: exactly one space
    after ``#``, ``noqa`` in any case, codes compared case-sensitively, by equality or prefix."""

    import re as _re

    _PATTERN = _re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", _re.IGNORECASE)
    _SEPARATOR = _re.compile(r"[,\s]")

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled  # off under flake8, which applies noqa itself

    def suppressed(self, line: str, code: str) -> bool:
        if not self.enabled or "noqa" not in line.lower():
            return False
        match = self._PATTERN.search(line)
        if match is None:
            return False
        codes = match.group("codes")
        if not codes:
            return True
        wanted = tuple(c for c in (part.strip() for part in self._SEPARATOR.split(codes)) if c)
        return code in wanted or code.startswith(wanted)


_SPECIAL: Dict[Type[cst.CSTNode], Any] = {
    cst.SimpleStatementLine: ModuleAnalysis._simple_line,
    cst.Assign: ModuleAnalysis._assign_stmt,
    cst.AnnAssign: ModuleAnalysis._ann_assign,
    cst.AugAssign: ModuleAnalysis._aug_assign,
    cst.NamedExpr: ModuleAnalysis._named_expr,
    cst.Return: ModuleAnalysis._return,
    cst.Import: ModuleAnalysis._import,
    cst.ImportFrom: ModuleAnalysis._import_from,
    cst.If: ModuleAnalysis._if,
    cst.For: ModuleAnalysis._for,
    cst.While: ModuleAnalysis._while,
    cst.With: ModuleAnalysis._compound,
    cst.Try: ModuleAnalysis._compound,
    cst.TryStar: ModuleAnalysis._compound,
    cst.Match: ModuleAnalysis._compound,
    cst.FunctionDef: ModuleAnalysis._function,
    cst.ClassDef: ModuleAnalysis._class,
    cst.Call: ModuleAnalysis._call,
    cst.CompFor: ModuleAnalysis._comp_for,
    cst.ListComp: ModuleAnalysis._comprehension,
    cst.SetComp: ModuleAnalysis._comprehension,
    cst.GeneratorExp: ModuleAnalysis._comprehension,
    cst.DictComp: ModuleAnalysis._comprehension,
    cst.Lambda: ModuleAnalysis._lambda,
}
