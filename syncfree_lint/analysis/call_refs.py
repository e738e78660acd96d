"""Typed references to what a call runs: ``NameRef`` (``f()``), ``SelfRef`` (``self.m()``) and ``DottedRef``
(an imported ``pkg.mod.f``, or a method by its name alone), and how a reach chain shows them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from syncfree_lint.analysis.instances import ClassRef
from syncfree_lint.knowledge.callables import HOOK_METHOD_PREFIXES
from syncfree_lint.knowledge.library_methods import LIBRARY_METHOD_NAMES

#: the index key of a method called by its name alone (a space: never part of a dotted name)
METHOD_KEY = "method "
#: the same for a receiver known to be an ``nn.Module`` of unknown class (``self.model.log_likelihood(batch)``): only
#: methods of the project's module classes answer it
MODULE_METHOD_KEY = "module method "
#: the index key of a method as overridden by subclasses in other files: ``self.on_step_end(out)`` in a base class
#: runs their ``on_step_end`` too (``summarize`` records the call, ``callgraph`` indexes the overrides)
OVERRIDE_KEY = "override "


@dataclass(frozen=True)
class NameRef:
    """``f()`` or ``Class.static()`` looked up from ``scope`` (the caller's dotted prefix) outwards."""

    name: str
    scope: str


@dataclass(frozen=True)
class SelfRef:
    """``self.method()`` inside ``class_qualname``; ``exact`` for ``super().method()``: that class's method, never
    a subclass's override."""

    class_qualname: str
    method: str
    exact: bool = False


@dataclass(frozen=True)
class DottedRef:
    """An imported function, by its qualified name; ``bound`` for a method called on an instance (``meter.update(x)``)."""

    qualname: str
    bound: bool = False


CallRef = Union[NameRef, SelfRef, DottedRef]


def callee_name(ref: CallRef) -> str:
    """How a reach chain shows the call: ``helper()``."""
    if isinstance(ref, SelfRef):
        return ref.method + "()"
    text = ref.name if isinstance(ref, NameRef) else ref.qualname
    return text.rsplit(".", 1)[-1].rsplit(" ", 1)[-1] + "()"  # `method record_step` (``by_method_name``) too


def method_ref(cls: ClassRef, method: str) -> CallRef:
    """A call of ``method`` on an instance of ``cls``."""
    return SelfRef(cls.name, method) if cls.local else DottedRef(f"{cls.name}.{method}", bound=True)


def by_method_name(method: str, module: bool = False) -> Optional[DottedRef]:
    """A call of ``method`` on a receiver whose class the code does not say (``client.local_train()``,
    ``self.server.record_step()``): the run resolves it to the one project class that defines a
    method of that name (``callgraph.lookup``). Not for names library objects share
    (``knowledge.library_methods``), dunders, nor callback hooks (``analysis.hooks``). ``module``: the receiver is
    an ``nn.Module``, so only a module class's method answers."""
    if method.startswith("__") or method in LIBRARY_METHOD_NAMES or method.startswith(HOOK_METHOD_PREFIXES):
        return None
    return DottedRef((MODULE_METHOD_KEY if module else METHOD_KEY) + method, bound=True)


def override_key(module_name: str, ref: SelfRef) -> str:
    """The index key under which subclasses in other files answer ``self.<method>()`` of ``ref``'s class."""
    owner = f"{module_name}.{ref.class_qualname}" if module_name else ref.class_qualname
    return f"{OVERRIDE_KEY}{owner}.{ref.method}"
