"""The walk: one pass over one parsed file that keeps the shared facts and runs every rule.

The facts live in their own modules, mixed in here: bindings and kinds (``bindings``), objects
(``objects``), calls (``calls``), torchmetrics objects (``metric_sites``), frequency (``frequency``, ``loops``,
``guards``), functions and classes (``definitions``). The walk visits nodes in source order; bindings
are updated as statements finish, so a rule looking at an expression sees what the names held just
before it. Rules are dispatched by node type; they ask the shared questions (``kind``, ``qualname``,
``placement``) and call ``report``. Nothing here prints or reads files."""
from __future__ import annotations

import ast
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Type, Union

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.answers import AnswersMixin
from syncfree_lint.analysis.arguments import ArgumentsMixin, Seeds
from syncfree_lint.analysis.bindings import BindingsMixin
from syncfree_lint.analysis.call_kinds import CallKindsMixin
from syncfree_lint.analysis.calls import CallRef, CallsMixin, DottedRef, SelfRef
from syncfree_lint.analysis.definitions import DefinitionsMixin
from syncfree_lint.analysis.filefacts import CallSite, ExternalKinds, Finding
from syncfree_lint.analysis.frequency import FrequencyMixin
from syncfree_lint.analysis.hooks import EACH_HOOK_KEY
from syncfree_lint.analysis.loops import LoopsMixin
from syncfree_lint.analysis.device import default_device_is_accelerator
from syncfree_lint.analysis.dispatchers import Dispatcher, dispatchers, hook_call
from syncfree_lint.analysis.events import EVENT_KEY, calls_with_itself, emitted_event
from syncfree_lint.analysis.eval_loops import turns_grad_off
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.instances import FUNCTION_KIND_PREFIX, InstanceTable, ScopedNames
from syncfree_lint.analysis.narrowing import narrowed_kind, unnarrowed
from syncfree_lint.analysis.objects import ObjectsMixin
from syncfree_lint.analysis.passed_callables import PassedCallables
from syncfree_lint.analysis.metric_sites import MetricSite, MetricSitesMixin
from syncfree_lint.analysis.model import Checker, Reporting
from syncfree_lint.analysis.nodes import code_fields, is_node
from syncfree_lint.analysis.scope import (
    ClassFrame, FunctionFrame, LoopFrame, is_step_marker,
)
from syncfree_lint.analysis.guards import (
    catches_exhaustion, is_early_exit, is_flag_exit, leaves_by_error, returns_inside, steps_optimizer_after)
from syncfree_lint.diagnostic import Fix
from syncfree_lint.edits import FixPlan
from syncfree_lint.knowledge import frequency as facts


class ModuleAnalysis(BindingsMixin, CallKindsMixin, ObjectsMixin, CallsMixin, ArgumentsMixin, MetricSitesMixin, FrequencyMixin, LoopsMixin,
                     DefinitionsMixin, AnswersMixin):
    """Walks one module once, answering the shared questions for every rule."""

    def __init__(
        self,
        path: str,
        source: str,
        module: cst.Module,
        rules: Sequence[Checker],
        step_functions: frozenset,
        tree: Optional[ast.Module] = None,
        module_name: str = "",
        is_package: bool = False,
        root: str = "",
        uses_accelerator: bool = True,
        logging_words: Sequence[str] = facts.LOGGING_FLAG_WORDS,
        opt_in_words: Sequence[str] = facts.OPT_IN_FLAG_WORDS,
        parameter_kinds: Optional[Seeds] = None,
        external: Optional[ExternalKinds] = None,
        earlier_returns: Optional[Dict[str, Optional[str]]] = None,
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
        self.parameter_kinds: Seeds = parameter_kinds or {}  # what this file's calls pass (``arguments``)
        self.argument_records: List[Any] = []
        self.external = external or ExternalKinds()  # what the rest of the run says (``run_kinds``)
        self.deferred_seeds: Set[str] = set()  # seeded functions no step of this file reaches (``analyse``)
        self.imported_returns: Dict[str, str] = {name: tensors.OTHER if kind.startswith(FUNCTION_KIND_PREFIX) else kind
                                                 for name, kind in self.external.returns}
        self.returned_functions = {name: kind[len(FUNCTION_KIND_PREFIX):] for name, kind in self.external.returns
                                   if kind.startswith(FUNCTION_KIND_PREFIX)}  # factories' closures (``function_value``)
        self.calls_out: List[Any] = []  # argument kinds of calls of imported functions
        self.unknown_imports: Set[str] = set()  # imported functions whose result kind was needed
        self.has_steps = False  # a step loop anywhere (step functions are frames with is_step)
        self.unknown_reads: Set[Tuple[str, str]] = set()  # (function, name) read with no kind known
        self.named_batches: Set[str] = set()  # functions with a parameter taken for a batch by its name only
        self.tree = tree  # the ``ast`` of the same source, for positions
        self.newline = "\r\n" if "\r\n" in source else ("\r" if "\r" in source and "\n" not in source else "\n")
        self.imports = ImportMap(module_name, is_package)
        self.inference = tensors.TensorInference(self.imports, self.lookup, self._call_kind, self.kind)
        self.inference.factories_on_device = self.default_on_accelerator = default_device_is_accelerator(source)
        self.findings: List[Finding] = []
        self.calls: List[CallSite] = []
        self.rule_errors: List[Tuple[str, BaseException]] = []
        self._dispatch: Dict[type, List[Checker]] = {}
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
        self.grad_off = False  # inside `with torch.no_grad():` or a function decorated so
        self.guard_nodes: List[cst.CSTNode] = []  # the guarding ``if`` statements around the walk's place
        self.statement: Optional[cst.CSTNode] = None
        self._stores: Set[int] = set()
        self._called_attributes: Set[int] = set()  # ids of attributes that are a call's callee (not property reads)
        self._loop_calls: List[Tuple[LoopFrame, CallRef]] = []
        self.functions: Dict[str, FunctionFrame] = {}  # local qualname -> frame
        self.classes: Dict[str, ClassFrame] = {}
        # local qualname -> return kind; a walk starts from the last one's, so a call of a function defined further
        # down knows what it returns (``forward_returns``: the names asked before their definition was walked)
        self.returns: Dict[str, Optional[str]] = dict(earlier_returns or {})
        self.forward_returns: Set[str] = set()
        self._marker_functions: Set[str] = set()
        self._stepping_functions: Set[str] = set()
        self._prefix: List[str] = []
        self._generators: Dict[str, str] = {}  # name bound to a local generator -> its qualname
        self.yields: Dict[str, Set[Optional[str]]] = {}  # local generator -> the kinds it yields
        self.instances = InstanceTable()  # names holding instances of known classes (``analysis.instances``)
        self.results_of: ScopedNames[str] = ScopedNames()  # names holding an imported call's result of unknown class
        self.objects_wanted: Set[str] = set()  # imported functions whose result has a method called on it
        self.callables: ScopedNames[CallRef] = ScopedNames()  # names standing for functions (``step = compile(f)``)
        self.alternatives: ScopedNames[Tuple[CallRef, ...]] = ScopedNames()  # `f if c else g`'s g; lists of callables
        self.bound_arguments: ScopedNames[Tuple[cst.Arg, ...]] = ScopedNames()  # ``partial(f, a, k=v)``'s
        self.passed_callables = PassedCallables()  # functions handed to parameters that are called
        self.dispatchers = dispatchers(module, source)  # functions that call the hook a string names
        self.named_handlers: Dict[str, List[str]] = {}  # event name -> this file's handlers of it (``events``)
        self.pass_hooks: List[Any] = []  # (hook, statement, called with, placement, how): per pass or event
        self.metric_sites: Dict[str, MetricSite] = {}  # bound name -> where the metric was built
        self.all_metric_sites: List[MetricSite] = []
        self.metric_escapes: Set[str] = set()
        self.metric_lightning_logged: Set[str] = set()
        self.fix_plans: List[Any] = []
        self._metric_calls: List[Any] = []
        self._call_args: Sequence[cst.Arg] = ()

    # ------------------------------------------------------------------ questions rules ask
    def kind(self, expr: cst.BaseExpression) -> Optional[str]:
        """The inferred kind of ``expr`` (see ``analysis.tensors``); memoised until a name is rebound."""
        key = id(expr)
        if key in self._kinds:
            return self._kinds[key]
        kind = self._kinds[key] = self.inference.infer(expr)
        return kind

    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """The dotted name of a Name/Attribute chain through the imports (memoised per node)."""
        key = id(expr)
        if key in self._qualnames:
            return self._qualnames[key]
        qual = self._qualnames[key] = self.imports.qualname(expr)
        return qual

    def report(
        self, rule: Reporting, node: cst.CSTNode, key: str = "default", fix: Union[Fix, FixPlan, None] = None,
        statement: Optional[cst.CSTNode] = None, **fields: str,
    ) -> None:
        """Record a finding at ``node`` with the rule's message ``key`` (its template filled with
        ``fields``); ``statement`` when the node is not in the current one."""
        placement = self.placement() if rule.step_only else None
        if placement is not None and placement.function is None and not placement.loops:
            return  # module-level code outside loops runs once
        message = rule.format_message(key, **fields)
        self.findings.append(Finding(rule.code, message, node, statement or self.statement, placement, fix))

    # ------------------------------------------------------------------ the walk
    def run(self) -> None:
        self._visit_body(self.module.body)
        for site in self.passed_callables.sites(self.resolve_local, self.functions):
            self.calls.append(site)
            if site.placement.loops:  # `for b in loader: step_fn(b)` steps when `step_fn` does
                self._loop_calls.append((site.placement.loops[-1], site.ref))
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
        if type(node) in self._dispatch:  # most nodes have no rule: no call for them
            self._rules(node)
        self._children(node)

    def _children(self, node: cst.CSTNode) -> None:
        visit = self._visit
        for name in code_fields(type(node)):
            value = getattr(node, name)
            kind = type(value)
            if kind is tuple or kind is list:
                for child in value:
                    if is_node(type(child)):
                        visit(child)
            elif is_node(kind):
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
        self._remember_annotated_instance(node.target, node.annotation)
        if self.function is None and self.class_frame is not None and isinstance(node.target, cst.Name):
            # a field declared on the class (``loss: torch.Tensor`` of a dataclass): what its instances hold
            # or what the constructions give it (``StepState(batch=batch.to(dev))``, ``arguments._field_seeds``)
            declared = self._annotated_kind(node.annotation) or \
                self.parameter_kinds.get(f"{self.class_frame.qualname}.__init__", {}).get(node.target.value)
            if declared is not None and self.class_frame.attrs.get(f"self.{node.target.value}") is None:
                self.class_frame.attrs[f"self.{node.target.value}"] = declared

    def _aug_assign(self, node: cst.AugAssign) -> None:
        self._rules(node)
        self._visit(node.value)
        self._mark_store(node.target)
        self._visit(node.target)
        name = dotted(node.target)
        if name is not None:
            self._bind(name, tensors.in_place(self.lookup(name), self.kind(node.value)))

    def _named_expr(self, node: cst.NamedExpr) -> None:
        self._rules(node)
        self._visit(node.value)
        self._bind_target(node.target, self.kind(node.value))

    def _emitter_given(self, func: cst.BaseExpression) -> List[cst.Arg]:
        """``self.fire(Events.STEP_COMPLETED)`` of a class whose ``fire`` calls each handler with the engine: the
        handlers get ``self`` (``def _record(engine): engine.state.output``); [] otherwise."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
                and self.class_frame is not None and isinstance(self.class_frame.node, cst.ClassDef)):
            return []
        method = next((statement for statement in self.class_frame.node.body.body
                       if isinstance(statement, cst.FunctionDef) and statement.name.value == func.attr.value), None)
        return [cst.Arg(func.value)] if method is not None and calls_with_itself(method) else []

    def _return(self, node: cst.Return) -> None:
        self._rules(node)
        if node.value is not None:
            self._visit(node.value)
            if self.function is not None:
                value = node.value
                if isinstance(value, cst.Tuple):
                    kind = tensors.tuple_kind([None if isinstance(el, cst.StarredElement) else self.kind(el.value)
                                               for el in value.elements])
                else:  # `return Trainer(cfg)` (a factory): an instance of that class; a metric with its checks
                    kind = self.metric_value_kind(value) or self.kind(value) or self._object_kind(value, constructed=True)
                self.function.returns.append(kind)

    def _raise(self, node: cst.Raise) -> None:
        """What a ``raise`` evaluates (``f"bad {x}"``) runs only when it raises: once per run."""
        self._rules(node)
        self.guard_depth += 1
        self._children(node)
        self.guard_depth -= 1

    def _import(self, node: Union[cst.Import, cst.ImportFrom]) -> None:
        self.imports.add_import(node) if isinstance(node, cst.Import) else self.imports.add_import_from(node)
        self._qualnames.clear()
        self._kinds.clear()

    def _if(self, node: cst.If) -> None:
        self.statement = node
        self._rules(node)
        self._visit(node.test)
        guard = self._is_guard(node)
        if guard:
            self.guard_depth += 1
            self.guard_nodes.append(node)
        env = self._envs[-1]
        before = dict(env)
        narrowed = narrowed_kind(node.test, self.qualname)  # `isinstance(v, np.ndarray)`: `v` is one in the body
        if narrowed is not None:
            self._bind(*narrowed)
        self._suite(node.body)
        if guard:
            self.guard_depth -= 1
            self.guard_nodes.pop()
        after_body = unnarrowed(dict(env), before, narrowed)
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
                env[name] = tensors.merge(after_body.get(name, before.get(name)), env.get(name, before.get(name)))
        self._kinds.clear()
        exit_kind = is_early_exit(node)
        guard = guard or self._exit_interval(node.test)  # `if step % k != 0: continue`: the rest is one in k
        if exit_kind == "continue" and guard and self.loops and not steps_optimizer_after(self.loops[-1].node, node):
            self.loops[-1].rest_guarded = True
        elif exit_kind == "return" and self.function is not None and not self.loops:
            # ``if not should_log: return`` anywhere in the function guards what follows it
            test = node.test
            if guard or (isinstance(test, cst.UnaryOperation) and is_flag_exit(node)
                         and self.kind(test.expression) not in tensors.DEVICE_TENSORS):
                self.function.rest_guarded = True
        self._note_opt_in_objects(node)

    def _compound(self, node: cst.CSTNode) -> None:
        """With / Try / Match: visit the header in the statement, then the suites."""
        self.statement = node
        self._rules(node)
        if isinstance(node, cst.With):
            for item in node.items:
                self._visit(item.item)
                self.calls.extend(CallSite(self.placement(), ref, node) for ref in self.context_methods(item.item))
                if item.asname is not None:
                    self._bind_target(item.asname.name, None)
            saved, self.grad_off = self.grad_off, self.grad_off or any(
                turns_grad_off(item.item, self.qualname) for item in node.items)
            self._suite(node.body)
            self.grad_off = saved
            if self.function is not None and returns_inside(node, self.function.node):
                self.function.rest_guarded = True
        elif isinstance(node, (cst.Try, cst.TryStar)):
            self._suite(node.body)
            for handler in node.handlers:
                self.statement = node
                if handler.type is not None:
                    self._visit(handler.type)
                # `except ...: log(...); raise` runs once; `except StopIteration:` once per pass over the data
                rare = leaves_by_error(handler.body) or catches_exhaustion(handler)
                self.guard_depth += rare
                self._suite(handler.body)
                self.guard_depth -= rare
            if node.orelse is not None:
                self._suite(node.orelse.body)
            if node.finalbody is not None:
                self._suite(node.finalbody.body)
        else:
            self._children(node)

    def _call(self, node: cst.Call) -> None:
        self._rules(node)
        self._note_metric_escape(node)
        func = node.func
        self._called_attributes.add(id(func))
        qual = self.qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if is_step_marker(node, qual):
            self._note_marker(func)
        self._learn_from_call(node, func, qual)
        self._call_args = node.args
        ref = self._call_ref(func, qual)
        if self.loops and (self.grad_off or self._grad_off_function(ref)) and self._runs_model(node):
            self.loops[-1].collects = True  # a rollout (``sample(policy, prompt)`` of a no_grad function)
        for each in ([ref] if ref is not None else []) + self.alternative_refs(func):
            self._record_arguments(each, self.with_bound_arguments(func, node.args))
            inherited = self.inherited(each) if isinstance(each, SelfRef) else None
            if inherited is not None:  # `self.log_value(loss)` of a base in another file learns `loss`
                self._record_arguments(inherited, node.args)
            self._add_call_site(each)
        if self.dispatchers and ref is not None:  # (a method defined further down is not resolved yet)
            local = [f"{ref.class_qualname}.{ref.method}"] if isinstance(ref, SelfRef) else self.resolve_local(ref)
            for qualname in local:
                self._dispatched_hook(self.dispatchers.get(qualname), node)
        emitted = emitted_event(node)
        if emitted is not None:  # `bus.emit("critic_updated", loss=loss)`: the handlers of that name, in any file
            given = emitted[1] or self._emitter_given(func)
            self._handing_itself = not emitted[1]
            self._record_arguments(DottedRef(EVENT_KEY + emitted[0]), given)
            self._handing_itself = False
            self._add_call_site(DottedRef(EVENT_KEY + emitted[0]))
        if not self.wraps_callable(node):
            self._passed_functions(node, ref)
        if isinstance(func, (cst.Name, cst.Attribute)) and self.function is not None:  # `cb(x)`, `self.on_step(x)`
            self.passed_callables.parameter_called(self.function, dotted(func) or "", self.placement(), self.statement)
        self._children(node)




    def _dispatched_hook(self, dispatcher: Optional[Dispatcher], node: cst.Call) -> None:
        """``self._fire("on_batch_end", logs)``: the hook that string names, on each callback (``dispatchers``)."""
        called = hook_call(dispatcher, node.args) if dispatcher is not None else None
        if called is None:
            return
        ref = DottedRef(EACH_HOOK_KEY + called[0], bound=True)
        self._record_arguments(ref, called[1])
        self._add_call_site(ref)

    def _add_call_site(self, ref: CallRef) -> None:
        """A call of ``ref`` here, where code that runs more than once can call (in a function or a loop)."""
        if self.function is not None or self.loops:
            self.calls.append(CallSite(self.placement(), ref, self.statement))
            if self.loops:
                self._loop_calls.append((self.loops[-1], ref))


_SPECIAL: Dict[Type[cst.CSTNode], Any] = {
    cst.SimpleStatementLine: ModuleAnalysis._simple_line,
    cst.Assign: ModuleAnalysis._assign_stmt,
    cst.AnnAssign: ModuleAnalysis._ann_assign,
    cst.AugAssign: ModuleAnalysis._aug_assign,
    cst.NamedExpr: ModuleAnalysis._named_expr,
    cst.Return: ModuleAnalysis._return,
    cst.Yield: ModuleAnalysis._yield,
    cst.Raise: ModuleAnalysis._raise,
    cst.Import: ModuleAnalysis._import,
    cst.ImportFrom: ModuleAnalysis._import,
    cst.If: ModuleAnalysis._if, cst.IfExp: ModuleAnalysis._if_exp,
    cst.For: ModuleAnalysis._for,
    cst.While: ModuleAnalysis._while,
    cst.With: ModuleAnalysis._compound,
    cst.Try: ModuleAnalysis._compound,
    cst.TryStar: ModuleAnalysis._compound,
    cst.Match: ModuleAnalysis._compound,
    cst.FunctionDef: ModuleAnalysis._function,
    cst.ClassDef: ModuleAnalysis._class,
    cst.Call: ModuleAnalysis._call,
    cst.Attribute: ModuleAnalysis._attribute,
    cst.CompFor: ModuleAnalysis._comp_for,
    cst.ListComp: ModuleAnalysis._comprehension,
    cst.SetComp: ModuleAnalysis._comprehension,
    cst.GeneratorExp: ModuleAnalysis._comprehension,
    cst.DictComp: ModuleAnalysis._comprehension,
    cst.Lambda: ModuleAnalysis._lambda,
}

