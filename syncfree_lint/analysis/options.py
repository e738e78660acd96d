"""Command-line options that are off unless the user turns them on.

``parser.add_argument("--metrics-avg", default=None)`` or ``action="store_true"``: a branch on
``args.metrics_avg`` runs only when the user asks for it, so it is an opt-in flag like
``if args.debug:``. Read from the file's own ``add_argument`` calls (anywhere in the file), never
from the option's name.
"""
from __future__ import annotations

import ast
from typing import FrozenSet, Optional


def off_by_default(tree: Optional[ast.AST]) -> FrozenSet[str]:
    """The destinations (``metrics_avg``) of options whose default is off: ``store_true`` without
    a true default, or ``default=None``/``False``/``""`` (an option that takes a value, such as a
    path the user may give)."""
    if tree is None:
        return frozenset()
    found = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        long_flags = [f for f in flags if f.startswith("--")]
        if not long_flags:
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        dest = keywords.get("dest")
        name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else \
            long_flags[0][2:].replace("-", "_")
        action = keywords.get("action")
        action_name = action.value if isinstance(action, ast.Constant) else None
        if "default" in keywords:
            default = keywords["default"]
            off = isinstance(default, ast.Constant) and (default.value is None or default.value is False or default.value == "") \
                and action_name != "store_false"
        else:
            off = action_name in ("store_true", None) and action_name != "store_false" and "required" not in keywords \
                and "nargs" not in keywords
        if off:
            found.add(name)
    return frozenset(found)
