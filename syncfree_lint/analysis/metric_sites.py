"""torchmetrics, as the linter sees it: which classes exist, which sync, which syncfree replaces.

Names are matched on the qualified name reached through the imports, so ``torchmetrics.MeanMetric``,
``torchmetrics.aggregation.MeanMetric`` and ``from torchmetrics.classification import
MulticlassAccuracy as Acc`` all resolve here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Set, Tuple

import libcst as cst

from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.kinds import METRIC_PREFIX, METRICS_PREFIX
from syncfree_lint.analysis.call_args import keyword_value
from syncfree_lint.analysis.classifier_updates import LETTERS as UPDATE_LETTERS, update_read
from syncfree_lint.knowledge.metric_api import (
    AGGREGATORS, CLASSIFICATION_BASES, LIGHTNING_LOG_METHODS, RUNTIME_BASE_KWARGS,
    RUNTIME_CLASS_KWARGS, RUNTIME_REQUIRED_VALUES, SHARED_METRIC_API, SYNCFREE,
)

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.scope import ClassFrame


def metric_class(qualname: Optional[str]) -> Optional[str]:
    """The torchmetrics (or syncfree) class name for a qualified name, or None."""
    if not qualname or not qualname.startswith(("torchmetrics.", "syncfree.")):
        return None
    last = qualname.rsplit(".", 1)[-1]
    if not last[:1].isupper():
        return None
    return last


def is_aggregator(name: str) -> bool:
    return name in AGGREGATORS


def is_classification(name: str) -> bool:
    for base in CLASSIFICATION_BASES:
        if name == base or (name.startswith(("Binary", "Multiclass", "Multilabel")) and name.endswith(base)):
            return True
    return False


def _literal(expr: cst.BaseExpression) -> object:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, (cst.Integer, cst.Float)):
        return expr.evaluated_value
    return _UNKNOWN


_UNKNOWN = object()


def syncfree_supports(name: str, call: cst.Call) -> bool:
    """True when ``syncfree.<name>(same arguments)`` behaves as the torchmetrics call does."""
    family = SYNCFREE.get(name)
    if family is None:
        return False
    if family == "collection":
        return True  # checked member by member by the caller
    allowed = RUNTIME_CLASS_KWARGS[family] | RUNTIME_BASE_KWARGS
    for arg in call.args:
        if arg.star:
            return False  # **kwargs: cannot see what is passed
        if arg.keyword is None:
            continue  # positional arguments follow torchmetrics' order
        key = arg.keyword.value
        if key not in allowed:
            return False
        required = RUNTIME_REQUIRED_VALUES.get(key)
        if required is not None and _literal(arg.value) not in required:
            return False
    if family == "multiclass" and not any(a.keyword is not None and a.keyword.value == "num_classes" for a in call.args) \
            and not any(a.keyword is None for a in call.args):
        return False  # syncfree needs num_classes
    if family == "task":
        task = next((a for a in call.args if a.keyword is not None and a.keyword.value == "task"), None)
        positional = [a for a in call.args if a.keyword is None]
        if task is None and not positional:
            return False
        if _literal((task or positional[0]).value) not in ("binary", "multiclass"):
            return False
    return True


@dataclass
class MetricSite:
    """Where a torchmetrics object was built: its class, the constructor call, its statement."""

    name: str
    class_name: str
    call: Optional[cst.Call]  # None for a dict of metrics
    statement: Optional[cst.CSTNode]
    moved: bool = False  # .to(device)/.cuda() seen, or owned by an nn.Module that is moved
    members: Tuple["MetricSite", ...] = field(default=())  # for dicts and collections
    library: str = "torchmetrics"  # or "syncfree": rules about torchmetrics' syncs skip those
    #: for a metric built elsewhere (known by its kind, ``site_of_kind``): the checks its construction left on
    #: (``v`` validates inputs, ``n`` checks for NaN); None for a construction of this file
    checks: Optional[str] = None


def nan_checks_on(site: MetricSite) -> bool:
    """Every nan_strategy but "disable" checks values with a host read."""
    if site.checks is not None:
        return "n" in site.checks
    if site.call is None:
        return False
    strategy = keyword_value(site.call, "nan_strategy")
    if strategy is None and site.call.args and site.call.args[0].keyword is None:
        strategy = site.call.args[0].value
    return not (isinstance(strategy, cst.SimpleString) and strategy.evaluated_value == "disable")


def update_reads(site: MetricSite) -> Optional[str]:
    """What an update of a classification metric reads from the device (``classifier_updates.update_read``):
    ``"validation"``, ``"counting"``, ``"labels"`` or None; a dict of metrics: its members are sites of their own."""
    if not is_classification(site.class_name) or (site.call is None and site.checks is None):
        return None
    return update_read(site.class_name, site.call, site.checks)


def metric_kind(site: MetricSite) -> Optional[str]:
    """The kind that carries a torchmetrics construction to code that receives the object (an argument, a return,
    an attribute): its class and the checks its arguments leave on; None for a ``syncfree`` metric."""
    if site.library != "torchmetrics":
        return None
    members = site.members or (site,)
    container = site.class_name == "dict"
    specs = sorted({_keyed(m.name if container else "",
                           f"{m.class_name}/{UPDATE_LETTERS.get(update_reads(m) or '', '')}"
                           f"{'n' if nan_checks_on(m) else ''}")
                    for m in members if m.library == "torchmetrics"})
    if not specs:
        return None
    return (METRICS_PREFIX if container else METRIC_PREFIX) + "|".join(specs)


def _keyed(key: str, spec: str) -> str:
    """A dict member's spec with its key (``"train_acc=BinaryAccuracy/v"``), so ``metrics["train_acc"]`` finds it;
    a key with characters the kind's syntax uses is left out."""
    return f"{key}={spec}" if _PLAIN_KEY.fullmatch(key) else spec


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.\-]+")


def site_of_kind(name: str, kind: Optional[str]) -> Optional[MetricSite]:
    """The metric a value of ``kind`` holds, as a site without a construction here (rules read its class and
    checks; the switch fix, which edits the construction, leaves it alone)."""
    if kind is None or not kind.startswith((METRIC_PREFIX, METRICS_PREFIX)):
        return None
    container = kind.startswith(METRICS_PREFIX)
    members = []
    for spec in kind.split(":", 1)[1].split("|"):
        key, _, spec = spec.rpartition("=")
        class_name, _, checks = spec.partition("/")
        members.append(MetricSite(key or name, class_name, None, None, moved=True, checks=checks))
    if len(members) == 1 and not container:
        return members[0]
    return MetricSite(name, "dict" if container else "MetricCollection", None, None, moved=True, members=tuple(members),
                      checks="")


class MetricSitesMixin:
    """Where each torchmetrics object of a file was built, for ``ModuleAnalysis`` (which provides
    the attributes below): ``metric(expr)`` answers which construction an expression refers to,
    ``metric_call(call)`` what a call does with one, and ``metric_escapes`` which of them are
    handed to other code or read beyond the API torchmetrics and syncfree share (the switch fix
    leaves those alone)."""

    metric_sites: Dict[str, MetricSite]
    metric_escapes: Set[str]  # names of metric objects handed to other code, or read through internals
    metric_lightning_logged: Set[str]  # names of metric objects handed to ``self.log``/``self.log_dict``
    class_frame: Optional["ClassFrame"]
    statement: Optional[cst.CSTNode]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    _rules: Callable[[cst.CSTNode], None]
    _children: Callable[[cst.CSTNode], None]
    _property_read: Callable[[cst.Attribute], None]
    _metric_calls: List[Any]  # [the last call asked about, its answer]

    def metric_call(self, node: cst.Call) -> Optional[Tuple[MetricSite, str]]:
        """(site, "update" | "forward" | "compute") for a call on a torchmetrics object (asked by each
        torchmetrics rule at the same call: answered once)."""
        memo = self._metric_calls
        if memo and memo[0] is node:
            return memo[1]
        found = self._metric_call(node)
        memo[:] = [node, found]
        return found

    def _metric_call(self, node: cst.Call) -> Optional[Tuple[MetricSite, str]]:
        func = node.func
        site, what = None, "forward"
        if isinstance(func, cst.Attribute) and func.attr.value in ("update", "forward", "compute"):
            site, what = self.metric(func.value), func.attr.value
        if site is None:
            site = self.metric(func)
            if site is not None and isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
                site = None
        if site is None or site.library != "torchmetrics":
            return None
        return site, what

    def _note_metric_escape(self, node: cst.CSTNode) -> None:
        """Record a metric handed to a call that is not its own method, or read through an
        attribute outside the shared API (called by the walk for every Call and Attribute)."""
        if not self.metric_sites:
            return
        if isinstance(node, cst.Attribute):
            site = self.metric(node.value)
            if site is not None and node.attr.value not in SHARED_METRIC_API:
                self.metric_escapes.add(site.name)
        elif isinstance(node, cst.Call) and _lightning_log(node):
            for arg in node.args:
                site = self.metric(arg.value)
                if site is not None:
                    self.metric_lightning_logged.add(site.name)
        elif isinstance(node, cst.Call):
            for arg in node.args:
                site = self.metric(arg.value)
                if site is not None and self.metric_call(node) is None:
                    self.metric_escapes.add(site.name)

    def _attribute(self, node: cst.Attribute) -> None:
        self._rules(node)
        self._note_metric_escape(node)
        self._property_read(node)
        self._children(node)

    def metric(self, expr: cst.BaseExpression) -> Optional[MetricSite]:
        """The torchmetrics object ``expr`` refers to (``self.acc``, ``metrics["acc"]``), or None."""
        if isinstance(expr, cst.Subscript):
            group = self.metric(expr.value)
            if group is None or not group.members:
                return group
            key = expr.slice[0].slice.value if isinstance(expr.slice[0].slice, cst.Index) else None
            wanted = key.evaluated_value if isinstance(key, cst.SimpleString) else None
            return next((m for m in group.members if m.name == wanted), group.members[0])
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("to", "cuda"):
            return self.metric(expr.func.value)
        name = dotted(expr)
        site = self.metric_sites.get(name) if name is not None else None
        if site is None and isinstance(expr, (cst.Name, cst.Attribute, cst.Call)):
            site = site_of_kind(name or "", self.kind(expr))  # handed in, or returned by a factory
        return site

    def metric_value_kind(self, expr: cst.BaseExpression) -> Optional[str]:
        """The kind of a metric value handed on (an argument, a return value): a construction's class and checks."""
        site = self.metric(expr) or self._metric_site("", expr)
        return metric_kind(site) if site is not None else None

    def _metric_site(self, name: str, value: cst.BaseExpression) -> Optional[MetricSite]:
        """A torchmetrics construction, possibly moved (``Accuracy(...).to(device)``), a dict of
        them, ``nn.ModuleDict({...})`` or ``MetricCollection(...)``."""
        moved = False
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("to", "cuda"):
            moved = True
            value = value.func.value
        if isinstance(value, cst.DictComp):  # `{name: MeanMetric().to(device) for name in names}`
            member = self._metric_site(name, value.value)
            return MetricSite(name, "dict", None, self.statement, moved, (member,)) if member is not None else None
        if isinstance(value, cst.Dict):
            entries: List[MetricSite] = []
            for element in value.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                    member = self._metric_site(str(element.key.evaluated_value), element.value)
                    if member is not None:
                        entries.append(member)
            if not entries:
                return None
            return MetricSite(name, "dict", None, self.statement, moved, tuple(entries))
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


def _lightning_log(call: cst.Call) -> bool:
    """``self.log(name, metric, ...)`` / ``self.log_dict(metrics, ...)``: Lightning logs the metric
    object through the API both packages share."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in LIGHTNING_LOG_METHODS \
        and isinstance(func.value, cst.Name) and func.value.value == "self"
