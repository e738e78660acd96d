"""The torchmetrics -> syncfree switch: which classes of a file may move, and the edits that move them.

One plan for the whole file: a class switches only when every construction of it uses arguments
``syncfree`` honours, no instance is handed to other code (``ctx.escaped_metrics()``, recorded during the walk),
its finding is reported, and a MetricCollection switches together with all of its members.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from syncfree_lint.analysis.imports import dotted
from syncfree_lint.analysis.metric_sites import MetricSite, syncfree_supports
from syncfree_lint.knowledge.metric_api import SYNCFREE
from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.edits import FixPlan, InsertAfter, Part, Replace, code


#: Lightning's ``self.log(name, metric)`` takes a metric it recognises as torchmetrics'; importing
#: ``syncfree.lightning`` registers the syncfree metrics as such (the module's docstring says how)
_LIGHTNING_IMPORT = "import syncfree.lightning  # lets Lightning's self.log take syncfree metrics"


class _SwitchState:
    code = "SFL3xx-switch"


_SWITCH_STATE = _SwitchState()


def switch_plan(ctx: SemanticModel, site: MetricSite) -> Optional[FixPlan]:
    """Move ``site``'s class from torchmetrics to syncfree, when that is safe for the whole file."""
    if site.class_name not in SYNCFREE or site.call is None or site.library != "torchmetrics":
        return None
    return FixPlan(f"use `syncfree.{site.class_name}` (no sync in update)", "safe", lambda: _build_switch(ctx, site), site)


def _flagged_sites(ctx: SemanticModel) -> List[MetricSite]:
    """Sites with a switch fix on a finding that is reported (not module-level, not guarded)."""
    out = []
    for finding in ctx.findings_so_far():
        plan = finding.fix
        if not isinstance(plan, FixPlan) or not isinstance(plan.subject, MetricSite):
            continue
        placement = finding.placement
        if placement is not None and (placement.owner() is None or placement.guarded):
            continue
        out.append(plan.subject)
    return out


def _collection_entries(site: MetricSite) -> int:
    """How many metrics a MetricCollection(...) call was given (-1: not a literal)."""
    if site.call is None or not site.call.args:
        return -1
    first = site.call.args[0].value
    if isinstance(first, (cst.Dict, cst.List, cst.Tuple)):
        return len(first.elements) + max(0, len(site.call.args) - 1)
    return -1


def _switchable(ctx: SemanticModel) -> Dict[str, bool]:
    """Per class name: switch to syncfree? Every construction in the file must be supported,
    none may be handed to other code, the class must be flagged, and a MetricCollection switches
    together with all of its members or not at all."""
    cache = ctx.state(_SWITCH_STATE)
    if "classes" in cache:
        return cache["classes"]
    escaped = ctx.escaped_metrics()
    flagged_sites = _flagged_sites(ctx)
    flagged = {s.class_name for s in flagged_sites}
    sites = [s for s in ctx.metric_constructions() if s.call is not None and s.library == "torchmetrics"]
    collections = [s for s in sites if s.class_name == "MetricCollection"]
    for collection in collections:  # a flagged member flags its collection and the other members
        if any(m.class_name in flagged for m in collection.members) or "MetricCollection" in flagged:
            flagged.add("MetricCollection")
            flagged.update(m.class_name for m in collection.members)
            flagged_sites.extend((collection, *collection.members))
    cache["sites"] = {id(s.call) for s in flagged_sites}
    verdict: Dict[str, bool] = {}
    for site in sites:
        ok = (site.class_name in flagged and site.call is not None and syncfree_supports(site.class_name, site.call)
              and site.name not in escaped)
        verdict[site.class_name] = verdict.get(site.class_name, True) and ok
    changed = True
    while changed:  # members inside a collection that cannot switch cannot switch either
        changed = False
        for collection in collections:
            members_ok = len(collection.members) == _collection_entries(collection) and all(
                verdict.get(m.class_name, False) for m in collection.members
            )
            if verdict.get("MetricCollection") and not members_ok:
                verdict["MetricCollection"] = False
                changed = True
            if not verdict.get("MetricCollection"):
                for member in collection.members:
                    if verdict.get(member.class_name):
                        verdict[member.class_name] = False
                        changed = True
    cache["classes"] = verdict
    return verdict


def _build_switch(ctx: SemanticModel, site: MetricSite) -> Optional[List[Part]]:
    """The edits that move every switchable class of the file at once (identical for every
    finding, so applying any one of them leaves the file consistent; duplicates merge)."""
    verdict = _switchable(ctx)
    if not verdict.get(site.class_name):
        return None
    parts: List[Part] = []
    rewritten = set()
    need_module_import = False
    anchor: Optional[cst.CSTNode] = None
    logged = ctx.lightning_logged_metrics()
    lightning_anchor: Optional[cst.CSTNode] = None
    for other in ctx.metric_constructions():
        if other.call is None or other.library != "torchmetrics" or not verdict.get(other.class_name):
            continue
        func = other.call.func
        if isinstance(func, cst.Name):
            statement = ctx.import_statement(func.value)
            if isinstance(statement, cst.ImportFrom) and id(statement) not in rewritten:
                rewritten.add(id(statement))
                moved = _rewrite_import(ctx, statement, verdict)
                parts.extend(moved)
                if moved and lightning_anchor is None:
                    lightning_anchor = statement
        elif isinstance(func, cst.Attribute):
            if id(other.call) not in ctx.state(_SWITCH_STATE)["sites"]:
                continue  # module-style constructions switch one by one: only the reported ones
            parts.append(Replace(func, other.statement, f"syncfree.{other.class_name}"))
            if not ctx.is_imported("syncfree"):
                need_module_import = True
                anchor = anchor or ctx.import_statement((dotted(func) or "").split(".")[0])
        if other.name in logged and isinstance(func, cst.Attribute):
            lightning_anchor = lightning_anchor or ctx.import_statement((dotted(func) or "").split(".")[0])
    if need_module_import:
        if anchor is None:
            return None
        parts.append(InsertAfter(anchor, "import syncfree"))
    if parts and any(s.name in logged and verdict.get(s.class_name) for s in ctx.metric_constructions()) \
            and not ctx.is_imported("syncfree.lightning"):
        if lightning_anchor is None:
            return None
        parts.append(InsertAfter(lightning_anchor, _LIGHTNING_IMPORT))
    return parts or None


def _rewrite_import(ctx: SemanticModel, statement: cst.ImportFrom, verdict: Dict[str, bool]) -> List[Part]:
    """``from torchmetrics... import A, B`` with the switchable names moved to ``from syncfree``
    (the new import on its own line after the old one, at the same indentation)."""
    if isinstance(statement.names, cst.ImportStar):
        return []
    keep: List[cst.ImportAlias] = []
    move: List[cst.ImportAlias] = []
    for alias in statement.names:
        imported = dotted(alias.name) or ""
        local = alias.asname.name.value if alias.asname is not None else imported  # type: ignore[union-attr]
        wanted = verdict.get(imported) and (ctx.origin_of(local) or "").startswith("torchmetrics.")
        (move if wanted else keep).append(alias)
    if not move:
        return []
    moved = code(cst.ImportFrom(module=cst.Name("syncfree"), names=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in move]))
    if not keep:
        return [Replace(statement, statement, moved)]
    kept = statement.with_changes(names=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in keep], lpar=None, rpar=None)
    return [Replace(statement, statement, code(kept)), InsertAfter(statement, moved)]
