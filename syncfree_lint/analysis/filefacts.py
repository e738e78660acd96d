"""What one file contributes to a run: findings, and its part of the call graph.

Plain data that crosses process boundaries (``--jobs``) and is stored in the cache: no libcst
trees, only strings and numbers. Function ids are ``path::qualname``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from syncfree_lint.analysis.scope import STEP, Placement
from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.knowledge.meters import MeterShape

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef

Hop = Tuple[str, str]  # (where: "path:line", what: "step loop" / "helper()"), a link of a reach chain
#: the kinds of one call's arguments: (positional kinds up to the first ``*args``, (keyword, kind) pairs)
ArgKinds = Tuple[Tuple[Optional[str], ...], Tuple[Tuple[str, Optional[str]], ...]]


@dataclass
class Finding:
    """A rule's report before its position and owner are settled."""

    code: str
    message: str
    node: cst.CSTNode
    statement: Optional[cst.CSTNode]
    placement: Optional[Placement]  # None: reported wherever it is (not step-gated)
    fix: Optional[object] = None  # a Fix, or a FixPlan built once positions are known


@dataclass
class CallSite:
    """A call the walk saw: where it sits, what it may run, and its statement (for the reach)."""

    placement: Placement
    ref: CallRef
    statement: Optional[cst.CSTNode] = None


@dataclass(frozen=True)
class Edge:
    """``source`` (STEP or a function id) may run ``target``: a function id of the same file, or a
    dotted name imported from elsewhere (resolved against the whole run)."""

    source: str
    target: str
    imported: bool
    importer_root: str
    guarded: bool
    hops: Tuple[Hop, ...]


@dataclass(frozen=True)
class ExternalKinds:
    """What the rest of the run says about one file's values (``analysis.run_kinds``): the kinds
    that imported functions return (by the dotted name the file calls them by), and the argument
    kinds of other files' calls of this file's functions (by local qualname)."""

    returns: Tuple[Tuple[str, str], ...] = ()
    calls_in: Tuple[Tuple[str, ArgKinds], ...] = ()
    # local qualnames that the run reaches from a step in another file, whose parameters this
    # file's own calls give kinds (``FileFacts.deferred``): the walk applies those seeds now
    reached: Tuple[str, ...] = ()
    # what other files' functions return (``"float"``, ``"same:<i>"``: ``number_kind.return_dtype``)
    # and which of their classes are meters, by the dotted names this file's fixes asked for
    # (``FileFacts.wanted``); and, for the file that defines them, the local qualnames others asked
    # about: it is walked (parsed, if the pre-filter skipped it) to tell them
    meters: Tuple[Tuple[str, MeterShape], ...] = ()
    dtypes: Tuple[Tuple[str, str], ...] = ()
    asked: Tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.returns or self.calls_in or self.reached or self.meters or self.dtypes or self.asked)


@dataclass(frozen=True)
class ParameterCall:
    """``function`` (an id) calls its parameter ``parameter`` from ``source`` (STEP or a function
    id); ``position``: the parameter's index among the arguments of a call on an instance (``self``
    not counted) or of a plain call, -1 for keyword-only; ``method``: it is a method."""

    function: str
    parameter: str
    position: int
    method: bool
    source: str
    guarded: bool
    hops: Tuple[Hop, ...]


@dataclass(frozen=True)
class Pass:
    """A call of ``callee`` (a dotted name the run resolves; ``bound``: called on an instance) hands it
    ``function`` (a function id, or a dotted name when ``imported``; ``method``: a bound method, whose
    ``self`` the callee does not pass) as the argument at ``slot`` (a position or a keyword)."""

    callee: str
    bound: bool
    slot: Union[int, str]
    function: str
    imported: bool
    importer_root: str
    method: bool = False


@dataclass
class FileFacts:
    """What one file contributes to the run: findings, and its part of the call graph."""

    path: str
    module_name: str
    root: str
    definite: List[Diagnostic] = field(default_factory=list)
    conditional: Dict[str, List[Diagnostic]] = field(default_factory=dict)  # function id -> findings
    edges: List[Edge] = field(default_factory=list)
    functions: Dict[str, str] = field(default_factory=dict)  # dotted name -> function id
    tables: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # dispatch table's dotted name -> function ids
    # dotted class name -> the dotted names of its bases, so a method a class inherits from a
    # class of another file is found under the subclass's name (``callgraph.lookup``)
    classes: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # what its classes keep on their instances, by dotted name (``app.Model.users`` -> ``app.Tower``): a call of
    # the attribute through an instance (``self.model.users(x)``) runs the held object's ``__call__`` or ``forward``
    held: Dict[str, str] = field(default_factory=dict)
    errors: List[Diagnostic] = field(default_factory=list)
    has_step: bool = False  # a step loop or a step function of its own
    skipped: bool = False  # not parsed: the text pre-filter found no word any rule or analysis starts from
    # skipped, and its text returns a constructor call (``return SpacedDiffusion(...)``): a factory whose
    # object a step may call methods on, so the run parses it when a step needs what it returns
    returns_object: bool = False
    # what other files may learn about values from this one, and what this one could learn
    # (``analysis.run_kinds``): kinds its functions return, the argument kinds of its calls of
    # imported functions, and the reads a kind from elsewhere could settle
    returns: Dict[str, str] = field(default_factory=dict)  # function id -> return kind
    # (imported dotted name, argument kinds, the caller: STEP, a function id, or "" at module level)
    calls_out: List[Tuple[str, ArgKinds, str]] = field(default_factory=list)
    unknown_params: Set[str] = field(default_factory=set)  # function ids with a parameter read of unknown kind
    # function ids with a parameter taken for a batch by its name only: calls that all pass a number make it a size
    named_batches: Set[str] = field(default_factory=set)
    unknown_imports: Set[str] = field(default_factory=set)  # imported dotted names whose result kind was needed
    objects_wanted: Set[str] = field(default_factory=set)  # those whose result had a method called on it
    # the methods of its classes (not dunders): (name, function id, declared with a do-nothing body, of a module);
    # a call on an object of unknown class runs them by name: every override of a callback hook
    # (``on_batch_end``), or the one project method of another name (``callgraph.lookup``)
    methods: List[Tuple[str, str, bool, bool]] = field(default_factory=list)
    # functions passed to another file's function, which may call them where it calls that
    # parameter (``callgraph.passed_edges``): where this file's functions call a parameter, and
    # the functions this file hands to functions it does not define
    parameter_calls: List[ParameterCall] = field(default_factory=list)
    passes: List[Pass] = field(default_factory=list)
    # local qualnames whose parameters this file's own calls give a telling kind, not applied
    # because no step of this file reaches them; the run says when another file's step does
    deferred: Set[str] = field(default_factory=set)
    # module-level classes proven running-average meters (``analysis.meter_class``), by dotted name;
    # the result dtypes of the functions others asked about (``ExternalKinds.asked``); and the dotted
    # names of other files' functions and classes this file's fixes need to know (``Declined.wants``)
    meters: Dict[str, MeterShape] = field(default_factory=dict)
    dtypes: Dict[str, str] = field(default_factory=dict)
    wanted: Set[str] = field(default_factory=set)
    # ``"mod.Class.attr"`` -> the device kind its instances hold there (a registered buffer, a
    # tensor kept by ``__init__``): ``loss_fn.center`` in another file reads a tensor
    attributes: Dict[str, str] = field(default_factory=dict)
    # the parameter seeds and earlier returns its last walk used (``arguments.analyse``): a walk of the same
    # text with more taught starts there
    settled: Optional[Tuple[Dict[str, Dict[str, str]], Dict[str, Optional[str]]]] = None


__all__ = ["STEP", "Hop", "ArgKinds", "ExternalKinds", "Finding", "CallSite", "Edge", "ParameterCall", "Pass", "FileFacts"]
