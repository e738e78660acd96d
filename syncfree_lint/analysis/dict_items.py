"""Dicts filled item by item: ``logs = {}`` then ``logs["loss"] = loss.detach()`` in a step.

A name bound to a dict display (``{}``, ``{"lr": lr}``, ``dict()``, ``OrderedDict()``) is marked; an item stored
into it afterwards tells what it holds. A device tensor stored makes it a container of device tensors
(``TENSORS``), so ``float(logs["loss"])`` or ``f"{logs['loss']:.3f}"`` read the device; a host value stored under a
constant key joins the dict's host keys (``logs["lr"] = lr``: ``logs["lr"]`` is not a device tensor, as for a
display, ``kinds.HOST_KEYS``); a host value stored under a key not known makes its items unknown again.
"""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from syncfree_lint.analysis.kinds import DEVICE_TENSORS, HOST_KEYS, OTHER, TENSORS

#: suffix of an environment key marking a name bound to a dict display
DICT_DISPLAY = " {}"
_DICT_TYPES = frozenset({"dict", "OrderedDict", "defaultdict"})


def is_dict_display(value: cst.BaseExpression) -> bool:
    """``{...}``, ``dict(...)``, ``OrderedDict()``, ``defaultdict(...)`` (by the name called)."""
    if isinstance(value, cst.Dict):
        return True
    func = value.func if isinstance(value, cst.Call) else None
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
    return name in _DICT_TYPES


def store_item(name: str, key: Optional[str], kind: Optional[str], lookup: Callable[[str], Optional[str]],
               bind: Callable[[str, Optional[str]], None], mark: Callable[[str, str], None]) -> None:
    """``name[key] = <a value of kind>``; ``key`` None when not a constant string. ``bind`` rebinds the name
    (dropping its marks), ``mark`` sets a mark on it."""
    if lookup(name + DICT_DISPLAY) is None:
        return
    held = lookup(name + HOST_KEYS)
    host_keys = [k for k in held.split("\0") if k] if held else []
    current = lookup(name)
    if kind in DEVICE_TENSORS:
        host_keys = [k for k in host_keys if k != key]
        kind_now: Optional[str] = TENSORS
    elif key is None:
        kind_now = None  # unknown, not a Python sequence: a dict indexed by a tensor hashes it
    else:
        host_keys.append(key)
        kind_now = current
    if kind_now != current:
        bind(name, kind_now)
    mark(name + DICT_DISPLAY, OTHER)
    if host_keys:
        mark(name + HOST_KEYS, "\0".join(dict.fromkeys(host_keys)))
