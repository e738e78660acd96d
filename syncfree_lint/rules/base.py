"""The base of every rule: its trigger, its message, its doc, and (later) its fix."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Generic, Tuple, Type, TypeVar

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.module import ModuleAnalysis

NodeT = TypeVar("NodeT", bound=cst.CSTNode)


class Rule(Generic[NodeT]):
    """Subclasses set the class attributes and implement ``check``.

    ``check(node, ctx)`` is called for every node whose type is in ``node_types``; it asks
    ``ctx`` (the file's shared analysis) what it needs and calls ``ctx.report``. ``NodeT`` is
    the node type ``check`` takes (``Rule[cst.Call]`` for a rule whose ``node_types`` is
    ``(cst.Call,)``); a bare ``Rule`` subclass may narrow it freely.
    """

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case slug
    message: ClassVar[str]  # default one-line message
    doc: ClassVar[str]  # What it does / Why it syncs / Example / Use instead / Fix safety
    node_types: ClassVar[Tuple[Type[cst.CSTNode], ...]] = ()
    default_enabled: ClassVar[bool] = True
    step_only: ClassVar[bool] = True  # reported only where the code runs once per step
    fix_title: ClassVar[str] = ""  # empty: no automatic fix

    def check(self, node: NodeT, ctx: "ModuleAnalysis") -> None:  # pragma: no cover
        raise NotImplementedError

    def finish(self, ctx: "ModuleAnalysis") -> None:
        """Called once after the walk, for rules that judge the whole file."""
        return None

    @classmethod
    def explain(cls) -> str:
        state = "on by default" if cls.default_enabled else "off by default (opt in with --extend-select)"
        return f"{cls.code} ({cls.name}) — {state}\n\n{cls.message}\n\n{cls.doc.strip()}\n"


class MetaRule(Rule[cst.CSTNode]):
    """A code the tool itself emits (SFL000, SFL001); it has no trigger."""

    node_types = ()
    step_only = False

    def check(self, node: cst.CSTNode, ctx: "ModuleAnalysis") -> None:  # pragma: no cover
        return None


def method_call(node: cst.Call) -> str:
    """The method name of ``x.name(...)``, or ''."""
    func = node.func
    return func.attr.value if isinstance(func, cst.Attribute) else ""


def receiver(node: cst.Call) -> cst.BaseExpression:
    return node.func.value  # type: ignore[attr-defined]
