"""The base of every rule, and the registry that each rule joins when its class is defined.

A rule is one unit: its code and name, its messages (templates keyed by variant), the node types
it looks at, the words a file must hold for it to fire (the text pre-filter), its documentation,
its fix, and its own VALID/INVALID examples.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, ClassVar, Dict, Generic, Iterable, Mapping, Tuple, Type, TypeVar

import libcst as cst

from syncfree_lint.analysis.model import SemanticModel
from syncfree_lint.diagnostic import Diagnostic

NodeT = TypeVar("NodeT", bound=cst.CSTNode)

#: every rule class with a code, by code, in the order they were defined
REGISTRY: Dict[str, Type["Rule"]] = {}


class Rule(Generic[NodeT]):
    """Subclasses set the class attributes and implement ``check``.

    ``check(node, ctx)`` is called for every node whose type is in ``node_types``; it asks
    ``ctx`` (the file's shared analysis, seen through ``analysis.model.SemanticModel``: nothing
    else of it) what it needs and calls ``ctx.report(self, node, key,
    **fields)``, where ``key`` names one of ``messages`` and ``fields`` fill its template.
    ``NodeT`` is the node type ``check`` takes (``Rule[cst.Call]`` for a rule whose ``node_types``
    is ``(cst.Call,)``); a bare ``Rule`` subclass may narrow it freely.

    A class that sets ``code`` joins ``REGISTRY`` when it is defined; a base class without a code
    (shared behaviour of a family) does not.
    """

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case slug
    #: every message the rule can report: variant key -> template (``str.format`` fields);
    #: "default" is the one-line summary (``--list-rules``, the docs' table)
    messages: ClassVar[Mapping[str, str]]
    message: ClassVar[str]  # set from messages["default"] when the class is defined
    doc: ClassVar[str]  # What it does / Why it syncs / Example / Use instead / Fix safety
    node_types: ClassVar[Tuple[Type[cst.CSTNode], ...]] = ()
    #: words of which a file must hold one for this rule to fire, beyond the analysis' own
    #: starting words (``knowledge.evidence``); the engine's text pre-filter is their union
    evidence: ClassVar[Tuple[str, ...]] = ()
    #: words of which a file must hold one for this rule to fire at all (the names of the calls it
    #: matches, whatever the imports call them); a file without any is walked without the rule
    requires: ClassVar[Tuple[str, ...]] = ()
    #: snippets the rule must not report, and snippets it must report (tests/unit/test_rule_examples.py)
    valid: ClassVar[Tuple[str, ...]] = ()
    invalid: ClassVar[Tuple[str, ...]] = ()
    default_enabled: ClassVar[bool] = True
    step_only: ClassVar[bool] = True  # reported only where the code runs once per step
    fix_title: ClassVar[str] = ""  # empty: no automatic fix

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return
        if cls.code in REGISTRY:
            raise TypeError(f"rule code {cls.code} is taken by {REGISTRY[cls.code].__qualname__}; pick another code")
        if "default" not in cls.messages:
            raise TypeError(f"{cls.code} declares no 'default' message in `messages`")
        cls.message = cls.messages["default"]
        REGISTRY[cls.code] = cls

    @classmethod
    def format_message(cls, key: str = "default", **fields: str) -> str:
        """The text of one message variant, its fields filled in."""
        try:
            template = cls.messages[key]
        except KeyError:
            raise KeyError(f"{cls.code} has no message {key!r}; declare it in the rule's `messages`") from None
        return template.format(**fields)

    def check(self, node: NodeT, ctx: SemanticModel) -> None:  # pragma: no cover
        raise NotImplementedError

    def finish(self, ctx: SemanticModel) -> None:
        """Called once after the walk, for rules that judge the whole file."""
        return None

    @classmethod
    def explain(cls) -> str:
        state = "on by default" if cls.default_enabled else "off by default (opt in with --extend-select)"
        text = f"{cls.code} ({cls.name}) — {state}\n\n{cls.message}\n\n"
        variants = [template for key, template in cls.messages.items() if key != "default"]
        if variants:
            text += "Messages it reports:\n" + "".join(f"- {template}\n" for template in variants) + "\n"
        return text + f"{cls.doc.strip()}\n"


def load_family(package: str, path: Iterable[str]) -> None:
    """Import every rule module of a family folder (all but ``_``-prefixed helpers), so that a new
    rule is one new file: defining its class registers it."""
    for module in sorted(pkgutil.iter_modules(path), key=lambda info: info.name):
        if not module.name.startswith("_"):
            importlib.import_module(f"{package}.{module.name}")


class MetaRule(Rule[cst.CSTNode]):
    """A code the tool itself emits (SFL000, SFL001); it has no trigger."""

    node_types = ()
    step_only = False

    def check(self, node: cst.CSTNode, ctx: SemanticModel) -> None:  # pragma: no cover
        return None

    @classmethod
    def at(cls, path: str, line: int, col: int, key: str = "default", **fields: str) -> Diagnostic:
        """The tool's own finding at a position, with one of the rule's messages."""
        return Diagnostic(path, line, col, cls.code, cls.format_message(key, **fields))


def method_call(node: cst.Call) -> str:
    """The method name of ``x.name(...)``, or ''."""
    func = node.func
    return func.attr.value if type(func) is cst.Attribute else ""  # type: ignore[attr-defined]  # exact: see imports.dotted


def receiver(node: cst.Call) -> cst.BaseExpression:
    return node.func.value  # type: ignore[attr-defined]
