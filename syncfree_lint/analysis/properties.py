"""Properties: reading ``obj.attr`` runs ``attr``'s getter when the class defines it with ``@property``.

``self.history.append(self.model.attention_entropy)`` calls the property's body as surely as a method call would,
and as often as the read runs: a ``.item()`` at its end syncs once per step when the read is in a step. The walk
adds a call site for such a read when the receiver's class is known (``self`` in the class, an instance the code
built or was handed, an attribute kept on ``self``); for a class of another file the run resolves it through the
index of properties (``PROPERTY_KEY``) that file's facts list, so a method read as a value calls nothing.
"""
from __future__ import annotations

from functools import lru_cache
from typing import FrozenSet, Optional

import libcst as cst

from syncfree_lint.analysis.imports import dotted

#: the prefix of a property's entry in the run's index (``PROPERTY_KEY + "model.Net.spread"``; a space: never part
#: of a dotted name), so a read of a plain method or a data attribute of another file's class calls nothing
PROPERTY_KEY = "property "


@lru_cache(maxsize=256)  # asked at every attribute read in the class's methods (nodes are hashable by identity)
def property_names(node: Optional[cst.CSTNode]) -> FrozenSet[str]:
    """The names a class defines with ``@property`` (or ``functools.cached_property``: computed on first read)."""
    if not isinstance(node, cst.ClassDef) or not isinstance(node.body, cst.IndentedBlock):
        return frozenset()
    return frozenset(statement.name.value for statement in node.body.body
                     if isinstance(statement, cst.FunctionDef) and any(
                         (dotted(d.decorator) or "").rsplit(".", 1)[-1] in _GETTERS for d in statement.decorators))


_GETTERS = frozenset({"property", "cached_property"})
