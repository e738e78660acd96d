"""SFL101's fix, by the statement the ``.item()`` sits in: a history list (``fixes/host_list.py``),
a running-average meter (``fixes/meter_update.py``), else a number binding (``fixes/host_read_proof.py``); where both
decline, a display-only suggestion (``fixes/display_interval.py``) when the statement only shows
the value."""
from __future__ import annotations

from typing import Dict, List, Union

from syncfree_lint.edits import Declined, Replace, Suggested
from syncfree_lint.fixes import display_interval, host_list, meter_update
from syncfree_lint.fixes import host_read_proof as proof
from syncfree_lint.analysis.scope_index import ScopeIndex


#: the words every proof's reason has when the value was not proven a float
_NOT_FLOAT = "not proven to be a float"


def decide(site: proof.ItemSite, places: Dict[int, "proof.Placement"], qualname: proof.QualName, source: str,
           cache: Dict[int, ScopeIndex]) -> proof.Proof:
    """The edits of SFL101's fix for ``site``, or the reason it is declined."""
    outer = host_list.appended_item(site)
    if outer is not None and outer.func.attr.value == "update":  # type: ignore[attr-defined]
        return meter_update.decide(site, outer, places, qualname, source, cache)  # type: ignore[arg-type]
    if outer is not None:
        return host_list.decide(site, outer, places, qualname, source, cache)  # type: ignore[arg-type]
    return proof.decide(site, places, qualname, source, cache)


def parts(site: proof.ItemSite, places: Dict[int, "proof.Placement"], qualname: proof.QualName, source: str,
          cache: Dict[int, ScopeIndex]) -> Union[List[Replace], Declined, Suggested]:
    """What the rule's ``FixPlan.build`` returns: the proven edits, a suggestion, or the reason."""
    site.context.wanted.clear()  # the functions of other files this decision asks about
    decided = decide(site, places, qualname, source, cache)
    if decided.edits is not None:
        return decided.edits
    suggestion = display_interval.suggest(site, cache)
    if suggestion is None:
        # what another file could tell: a meter class, or (when that was what failed) a result's dtype
        wants = set(decided.wants) | (site.context.wanted if _NOT_FLOAT in decided.reason else set())
        return Declined(decided.reason, tuple(sorted(wants)))
    title, guards = suggestion
    return Suggested(decided.reason, title, guards)
