"""SFL101's unsafe fix for a history list: ``history.append(loss.item())`` -> ``history.append(loss.detach())``.

The list then holds device tensors, and each place that reads it gets the Python numbers back
with one host read, ``(torch.stack(history).flatten().tolist() if history else [])`` (one element,
``history[-1]``, is read as ``history[-1].item()``): the same
values with the same Python types as the ``.item()`` results (one append site, a float or
count value, so one dtype; ``flatten`` undoes one-element shapes). ``decide`` proves, or
declines with the reason:
1. the statement is ``name.append(x.item())`` and ``name`` is bound once in the scope, to ``[]``;
2. ``x`` is proven a floating tensor or an integer count;
3. nothing else calls a method on the list, rebinds it or uses it in a nested scope;
4. every read uses the list's contents there and then (``len``/``sum``/``min``/``max``/``sorted``/
   ``print``/..., numpy, ``statistics``, ``math``, ``json``, a subscript, a ``for`` loop, an f-string,
   ``return``): a read that may keep the list (an alias, a container, another function) would
   see a snapshot instead of later appends;
5. every read runs less often than the step (after the loop, or under a log guard);
6. an in-place change that can reach the detached tensor gets ``.detach().clone()``.
The list holds one small device tensor per step until it is read (a list never read keeps them
all: device memory grows by one allocation per step where Python floats cost host memory).
``meter.update(x.item(), n)`` is the meter fix's (``fixes/meter_update.py``).
"""
from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from syncfree_lint.edits import Replace, code
from syncfree_lint.fixes import host_read_proof as proof
from syncfree_lint.analysis.number_kind import is_count, is_float
from syncfree_lint.analysis.scope_index import BINDERS, ScopeIndex

#: calls that use a list's contents at once and keep no reference to it
_CONSUMERS = frozenset({"len", "sum", "min", "max", "sorted", "print", "str", "repr", "any", "all", "list", "tuple"})
_CONSUMER_MODULES = ("numpy.", "statistics.", "math.", "json.")


def appended_item(site: proof.ItemSite) -> Optional[cst.Call]:
    """The ``name.append(...)``/``name.update(...)`` call whose first argument is the site's
    ``.item()`` (for ``update``, also ``x.item() * k``), as a whole statement; else None."""
    statement = site.statement
    if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
        return None
    call = statement.value
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in ("append", "update"):
        return None
    if not call.args or call.args[0].keyword is not None:
        return None
    value = call.args[0].value
    weighted = call.func.attr.value == "update" and isinstance(value, cst.BinaryOperation) and \
        isinstance(value.operator, cst.Multiply) and site.call in (value.left, value.right)
    return call if value is site.call or weighted else None


def decide(site: proof.ItemSite, outer: cst.Call, places: Dict[int, object], qualname: proof.QualName, source: str,
           cache: Dict[int, ScopeIndex]) -> proof.Proof:
    """The edits for ``outer`` (``name.append(x.item())``), or the first condition that fails."""
    func = outer.func
    assert isinstance(func, cst.Attribute)
    if len(outer.args) != 1 or not isinstance(func.value, cst.Name):
        return proof.Proof(None, "not `name.append(x.item())` on a local list")
    torch = proof.torch_module_name(source)
    if torch is None:
        return proof.Proof(None, "the file does not `import torch`, which the reads would need")
    name = func.value.value
    index = cache.get(id(site.scope))
    if index is None:
        index = cache[id(site.scope)] = ScopeIndex(site.scope, site.context)
    receiver = site.call.func.value  # type: ignore[attr-defined]
    if not (is_float(receiver, index, qualname, set()) or is_count(receiver, qualname)):
        return proof.Proof(None, "the value is not proven to be a float or an integer count")
    reads = _reads(name, func.value, index, qualname)
    if isinstance(reads, str):
        return proof.Proof(None, reads)
    problem = proof.read_frequency(site, [r for r in reads if not _counted(r, index)], index, places)  # type: ignore[arg-type]
    if problem:
        return proof.Proof(None, problem)
    method = "detach().clone" if proof.may_change_in_place(receiver, index) else "detach"
    parts = [Replace(site.call.func.attr, site.statement, method)]  # type: ignore[attr-defined]
    for read in reads:
        item = _one_item(read, index)
        if item is not None:  # history[-1] -> history[-1].item(): one element read, not the whole list
            parts.append(Replace(item, index.statement_of(read), f"{code(item)}.item()"))
        elif not _counted(read, index):
            parts.append(Replace(read, index.statement_of(read), f"({torch}.stack({name}).flatten().tolist() if {name} else [])"))
    return proof.Proof(parts, "proven")


def _reads(name: str, appended: cst.Name, index: ScopeIndex, qualname: proof.QualName):
    """The reads of the list, or why its uses are more than one ``[]`` binding, this append and reads."""
    if name in index.params:
        return f"`{name}` is a parameter: the list is not built here"
    initialised = False
    reads: List[cst.Name] = []
    for node, nested in index.occurrences(name):
        if nested:
            return f"`{name}` is used in a nested function, lambda, class or comprehension"
        if node is appended:
            continue
        if isinstance(index.parent.get(id(node)), BINDERS):
            return f"`{name}` is bound by an import, def, with/except or global/nonlocal"
        bound_by = index.stores.get(id(node))
        if bound_by is not None:
            if isinstance(bound_by, cst.Assign) and len(bound_by.targets) == 1 and bound_by.targets[0].target is node \
                    and isinstance(bound_by.value, cst.List) and not bound_by.value.elements and not initialised:
                initialised = True
                continue
            return f"`{name}` has another binding than one `{name} = []`"
        problem = _read_context(node, index, qualname)
        if problem:
            return problem
        reads.append(node)
    if not initialised:
        return f"`{name}` is not bound to `[]` in the same scope"
    return reads


def _read_context(read: cst.Name, index: ScopeIndex, qualname: proof.QualName) -> Optional[str]:
    """None where a read uses the list's contents at once, else why the fix cannot convert it there."""
    problem = proof.self_documenting(read, index)
    if problem:
        return problem
    parent = index.parent.get(id(read))
    if isinstance(parent, cst.Attribute):
        return f"a method of the list is called (`.{parent.attr.value}`): its contents would be device tensors"
    if isinstance(parent, cst.Subscript) and parent.value is read:
        if any(isinstance(a, (cst.AssignTarget, cst.AugAssign, cst.Del)) for a in index.ancestors(parent)):
            return "an item of the list is assigned or deleted"
        return None
    if isinstance(parent, (cst.FormattedStringExpression, cst.Return)):
        return None
    if isinstance(parent, cst.Element) and isinstance(index.parent.get(id(parent)), cst.Tuple) \
            and isinstance(index.parent.get(id(index.parent.get(id(parent)))), cst.Return):
        return None  # `return history, hits`: the function is done appending
    if isinstance(parent, cst.For) and parent.iter is read:
        return None
    if isinstance(parent, cst.Arg) and parent.value is read and not parent.star and parent.keyword is None:
        call = index.parent.get(id(parent))
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _CONSUMERS:
            return None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and \
                (qualname(call.func) or "").startswith(_CONSUMER_MODULES):
            return None
    return ("the list is read where it may be kept or changed (an alias, a container, another function): "
            "a converted copy would not see later appends")


def _counted(read: cst.Name, index: ScopeIndex) -> bool:
    """``len(name)``: the same with tensors in the list, no conversion needed."""
    arg = index.parent.get(id(read))
    call = index.parent.get(id(arg)) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "len"


def _one_item(read: cst.Name, index: ScopeIndex) -> Optional[cst.Subscript]:
    """``name[i]`` (one index, not a slice), whose ``.item()`` is the element ``.item()`` gave."""
    parent = index.parent.get(id(read))
    if isinstance(parent, cst.Subscript) and parent.value is read and len(parent.slice) == 1 \
            and isinstance(parent.slice[0].slice, cst.Index) and parent.slice[0].slice.star is None:
        return parent
    return None
