"""Argument kinds: what a file's own calls pass into its functions' parameters.

A helper's parameter has no kind of its own: ``def log_stats(loss): print(f"{loss:.3f}")`` says
nothing about ``loss``. Its call sites do: ``log_stats(loss)`` in a step passes a device tensor,
``log_stats(loss.item())`` a number. The walk records, for every call of a plain name or of
``self.method``, the kinds of its arguments; after the walk, ``parameter_seeds`` turns them into
kinds for the parameters, and ``analyse`` walks the file again with those kinds bound at the
top of each function, until nothing changes (a helper's helper learns from the second walk).

A parameter gets a seed only from evidence that holds for every call the file shows:

- a device kind when some call passes a device tensor and none passes a value known to live
  elsewhere (calls passing an unknown value do not count against it: the tensor call alone
  syncs);
- a host kind (a number, numpy, a host tensor, ...) when every call passes that same kind.

An annotation that names a kind (``torch.Tensor``) wins over the seed. Calls from other files are
not seen here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.calls import CallRef, NameRef, SelfRef

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.module import ModuleAnalysis
    from syncfree_lint.analysis.scope import FunctionFrame

#: function qualname -> parameter name -> kind
Seeds = Dict[str, Dict[str, str]]
#: (reference, positional kinds up to the first ``*args``, keyword kinds)
_Record = Tuple[CallRef, Tuple[Optional[str], ...], Tuple[Tuple[str, Optional[str]], ...]]
#: at most this many walks of one file (the first plus re-walks with new seeds)
MAX_WALKS = 3


class ArgumentsMixin:
    """Records argument kinds for ``ModuleAnalysis`` and derives parameter seeds from them."""

    functions: Dict[str, "FunctionFrame"]
    argument_records: List[_Record]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    resolve_local: Callable[[CallRef], List[str]]

    def _record_arguments(self, ref: CallRef, args: Sequence[cst.Arg]) -> None:
        if not args or not (isinstance(ref, SelfRef) or (isinstance(ref, NameRef) and "." not in ref.name)):
            return
        positional: List[Optional[str]] = []
        keywords: List[Tuple[str, Optional[str]]] = []
        for arg in args:
            if arg.star:
                if arg.star == "**":
                    break
                positional.append(_UNKNOWN_REST)
                break
            if arg.keyword is not None:
                keywords.append((arg.keyword.value, self.kind(arg.value)))
            elif not keywords:
                positional.append(self.kind(arg.value))
        self.argument_records.append((ref, tuple(positional), tuple(keywords)))

    def parameter_seeds(self) -> Seeds:
        """Kinds for parameters that every call of this file agrees on (see the module doc)."""
        passed: Dict[Tuple[str, str], List[Optional[str]]] = {}
        for ref, positional, keywords in self.argument_records:
            for qualname in self.resolve_local(ref):
                frame = self.functions.get(qualname)
                if frame is None:
                    continue
                names = _positional_names(frame, bound=isinstance(ref, SelfRef))
                if names is None:
                    continue
                given = dict(keywords)
                for index, name in enumerate(names):
                    if index < len(positional):
                        if positional[index] == _UNKNOWN_REST:
                            break
                        given.setdefault(name, positional[index])
                for name in names + _keyword_only_names(frame):
                    passed.setdefault((qualname, name), []).append(given.get(name))
        seeds: Seeds = {}
        for (qualname, name), kinds in passed.items():
            seed = _agreed_kind(kinds)
            if seed is not None:
                seeds.setdefault(qualname, {})[name] = seed
        return seeds


#: a positional ``*args`` at the call: the parameters from here on are not known
_UNKNOWN_REST = "*"


def _agreed_kind(kinds: List[Optional[str]]) -> Optional[str]:
    known = {k for k in kinds if k is not None}
    if known and known <= tensors.DEVICE_TENSORS:
        return known.pop() if len(known) == 1 else tensors.TENSOR
    if len(known) == 1 and None not in kinds:
        only = known.pop()
        return only if only in tensors.NOT_DEVICE else None
    return None


def _positional_names(frame: "FunctionFrame", bound: bool) -> Optional[List[str]]:
    """The parameters a call's positional arguments fill; None for a method called unbound."""
    node = frame.node
    if not isinstance(node, cst.FunctionDef):
        return None
    names = [p.name.value for p in list(node.params.posonly_params) + list(node.params.params)]
    static = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)
    if frame.class_frame is not None and not static:
        if not bound:
            return None  # ``Class.method(obj, ...)``: not worth the ambiguity
        names = names[1:]
    return names


def _keyword_only_names(frame: "FunctionFrame") -> List[str]:
    node = frame.node
    return [p.name.value for p in node.params.kwonly_params] if isinstance(node, cst.FunctionDef) else []


def analyse(walk: Callable[[Seeds], "ModuleAnalysis"]) -> "ModuleAnalysis":
    """Walk a file (``walk(seeds)`` builds and runs one analysis) until its parameter seeds settle."""
    seeds: Seeds = {}
    analysis = walk(seeds)
    for _ in range(MAX_WALKS - 1):
        found = analysis.parameter_seeds()
        if found == seeds:
            break
        seeds = found
        analysis = walk(seeds)
    return analysis
