"""What a rule may ask about the file being walked: the ``SemanticModel`` protocol.

Rules and fix helpers receive the walk as ``ctx: SemanticModel`` and use nothing else of it
(``tests/unit/test_architecture.py`` checks every ``ctx.<name>`` in ``rules/`` and ``fixes/``).
``analysis.module.ModuleAnalysis`` implements it; mypy checks that where the walk hands itself to
a rule. Answers are about the walk's current position: a rule called for a node sees the names as
they were bound just before it, the statement, function and loops around it.

``Checker`` is the other side, what the walk needs of a rule, so that ``analysis`` names no type
of ``rules``.
"""
from __future__ import annotations

from typing import Any, Dict, FrozenSet, Optional, Protocol, Sequence, Tuple, Type, Union

import libcst as cst

from syncfree_lint.analysis.filefacts import Finding
from syncfree_lint.analysis.instances import ClassRef
from syncfree_lint.analysis.metric_sites import MetricSite
from syncfree_lint.analysis.scope import Placement
from syncfree_lint.diagnostic import Fix
from syncfree_lint.edits import FixPlan
from syncfree_lint.knowledge.meters import MeterShape


class Keyed(Protocol):
    """Whatever owns per-file scratch space (``SemanticModel.state``): a rule, or a fix shared
    by several rules."""

    @property
    def code(self) -> str: ...


class Reporting(Keyed, Protocol):
    """What ``SemanticModel.report`` reads of the rule that reports."""

    @property
    def step_only(self) -> bool: ...

    def format_message(self, key: str = "default", **fields: str) -> str: ...


class Checker(Reporting, Protocol):
    """What the walk needs of a rule (``rules.base.Rule`` is one)."""

    @property
    def node_types(self) -> Tuple[Type[cst.CSTNode], ...]: ...

    def check(self, node: Any, ctx: "SemanticModel") -> None: ...

    def finish(self, ctx: "SemanticModel") -> None: ...


class SemanticModel(Protocol):
    """Everything a rule may ask the walk, and the one thing it may do: ``report``."""

    # ------------------------------------------------------------------ values
    def kind(self, expr: cst.BaseExpression) -> Optional[str]:
        """The inferred kind of ``expr`` (a constant of ``analysis.tensors``: a device tensor, a
        host tensor, a number, a batch, ...), or None when nothing is known."""
        ...

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        """Positive evidence that ``expr`` is a tensor that may live on an accelerator."""
        ...

    def maybe_tensor(self, expr: cst.BaseExpression) -> bool:
        """Not known to be anything but a device tensor (numpy, number, host tensor, module)."""
        ...

    def element_kind(self, comp: cst.BaseExpression) -> Optional[str]:
        """The kind of a comprehension's element (``g.abs().max()`` of ``... for g in grads``), its
        loop names bound from what they iterate; None for anything but a comprehension."""
        ...

    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """The dotted name of a Name/Attribute chain through the imports (``th.save`` ->
        ``torch.save``); unimported heads as written; None for other expressions."""
        ...

    def instance_class(self, expr: cst.BaseExpression) -> Optional[ClassRef]:
        """The class ``expr`` holds an instance of, when the code says (``meter = Meter()``,
        ``self.scaler = GradScaler()``, ``meter: Meter``); see ``analysis.instances``."""
        ...

    def imported_dtype(self, qualname: str) -> Optional[str]:
        """What a function another file of the run defines returns: ``"float"``, or ``"same:<i>"``
        (its ``i``-th argument's dtype), by the dotted name this file imports it as; None when the
        run has not said (``number_kind.return_dtype``, taught when a fix's ``Declined.wants`` asks)."""
        ...

    def imported_meter(self, qualname: str) -> Optional[MeterShape]:
        """The running-average meter shape (``knowledge.meters.MeterShape``) of a class another
        file of the run defines, by the dotted name this file imports it as; None when the run has
        not said (``analysis.run_kinds`` teaches it when a fix's ``Declined.wants`` asks)."""
        ...

    def default_device_is_accelerator(self) -> bool:
        """The file makes an accelerator the default device (``torch.set_default_device("cuda")``,
        ``torch.set_default_tensor_type(torch.cuda.FloatTensor)``): factories build on it."""
        ...

    def is_store(self, node: cst.CSTNode) -> bool:
        """True for an assignment target (``t[mask] = ...``)."""
        ...

    def is_cpu_device(self, expr: cst.BaseExpression) -> bool:
        """True for ``"cpu"``, ``"cpu:0"`` and ``torch.device("cpu")`` (through the imports)."""
        ...

    def is_off_switch(self, expr: cst.BaseExpression) -> bool:
        """A test that is false unless the user turns something on: a debug, logging or opt-in
        flag (``DEBUG``, ``args.verbose``), an option off by default (``if args.dump:``)."""
        ...

    # ------------------------------------------------------------------ imports
    def is_imported(self, name: str) -> bool:
        """Whether an import statement seen so far binds the local ``name``."""
        ...

    def alias_of(self, qualname: str) -> Optional[str]:
        """The first local name an import binds to ``qualname`` (``th`` after ``import torch as
        th``), or None."""
        ...

    def origin_of(self, name: str) -> Optional[str]:
        """The dotted name the local ``name`` was imported as (``torchmetrics.MeanMetric`` after
        ``from torchmetrics import MeanMetric``), or None."""
        ...

    def import_statement(self, name: str) -> Optional[cst.CSTNode]:
        """The import statement that binds the local ``name`` (the last one seen), or None."""
        ...

    # ------------------------------------------------------------------ where the walk is
    def placement(self) -> Placement:
        """Where the current statement runs: its loops, function and guards."""
        ...

    def current_statement(self) -> Optional[cst.CSTNode]:
        """The (small or compound) statement holding the current node; None after the walk."""
        ...

    def current_function_name(self) -> Optional[str]:
        """The name of the innermost function being walked (``training_step``), or None."""
        ...

    def current_scope(self) -> cst.CSTNode:
        """The innermost function definition being walked, or the module: the code that binds
        the names the current node reads (``enclosing_scopes()[0]``)."""
        ...

    def enclosing_scopes(self) -> Sequence[cst.CSTNode]:
        """The innermost function definition being walked (if any), then the module."""
        ...

    def enclosing_loops(self) -> Sequence[cst.CSTNode]:
        """The ``for``/``while`` statements around the current node in its function (or module
        code), outermost first."""
        ...

    def source_text(self) -> str:
        """The file's source text."""
        ...

    # ------------------------------------------------------------------ metrics
    def metric_call(self, node: cst.Call) -> Optional[Tuple[MetricSite, str]]:
        """(site, "update" | "forward" | "compute") for a call on a torchmetrics object."""
        ...

    def metric_constructions(self) -> Sequence[MetricSite]:
        """Every metric construction seen so far (torchmetrics and syncfree), in source order."""
        ...

    def escaped_metrics(self) -> FrozenSet[str]:
        """Names of metric objects handed to other code or read through internals so far."""
        ...

    def lightning_logged_metrics(self) -> FrozenSet[str]:
        """Names of metric objects handed to Lightning's ``self.log``/``self.log_dict`` so far."""
        ...

    # ------------------------------------------------------------------ reporting
    def report(
        self, rule: Reporting, node: cst.CSTNode, key: str = "default", fix: Union[Fix, FixPlan, None] = None,
        statement: Optional[cst.CSTNode] = None, **fields: str,
    ) -> None:
        """Record a finding at ``node`` with the rule's message ``key`` (its template filled with
        ``fields``); ``statement`` when the node is not in the current one. A ``step_only`` rule's
        finding in module code outside loops is dropped (it runs once)."""
        ...

    def findings_so_far(self) -> Sequence[Finding]:
        """The findings recorded so far, by every rule (a fix built after the walk sees all)."""
        ...

    def state(self, rule: Keyed) -> Dict[Any, Any]:
        """Per-file scratch space for one rule (or one shared fix), keyed by its ``code``."""
        ...
