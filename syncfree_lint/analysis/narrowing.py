"""``isinstance`` tests: what a name is inside the branch that tested it.

``if isinstance(value, (np.ndarray, np.number)): value = value.item()`` reads a numpy value, not a
tensor. The walk binds the name to that kind for the body of the ``if`` and gives it back its old
kind after, unless the body bound it again (``analysis.module``). Only classes that rule a device
value out are narrowed to (``knowledge.torch_api.ISINSTANCE_KINDS``): a ``torch.Tensor`` may live
on the host.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import libcst as cst

from syncfree_lint.analysis import kinds
from syncfree_lint.knowledge.torch_api import ISINSTANCE_KINDS

#: the knowledge table's words as the walk's kinds
_KINDS = {"numpy": kinds.NUMPY, "number": kinds.NUMBER, "other": kinds.OTHER}

Narrowed = Optional[Tuple[str, str]]


def narrowed_kind(test: cst.BaseExpression, qualname: Callable[[cst.BaseExpression], Optional[str]]) -> Narrowed:
    """(name, kind) when ``test`` is ``isinstance(name, T)`` or ``isinstance(name, (T, U))`` and every
    class it names gives the same kind."""
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance"
            and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name)):
        return None
    classes = test.args[1].value
    named = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    found = {_KINDS.get(ISINSTANCE_KINDS.get(qualname(c) or "", "")) if isinstance(c, (cst.Name, cst.Attribute)) else None
             for c in named}
    kind = found.pop() if len(found) == 1 else None
    return (test.args[0].value.value, kind) if kind is not None else None


def unnarrowed(after_body: Dict[str, Optional[str]], before: Dict[str, Optional[str]],
               narrowed: Narrowed) -> Dict[str, Optional[str]]:
    """The names after the body, with the narrowed name's old kind back when the body kept the
    narrowed one (a name rebound there keeps what the body gave it)."""
    if narrowed is not None and after_body.get(narrowed[0]) == narrowed[1]:
        name = narrowed[0]
        if name in before:
            after_body[name] = before[name]
        else:
            after_body.pop(name, None)
    return after_body
