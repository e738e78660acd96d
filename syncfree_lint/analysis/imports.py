"""Import aliases: which dotted name a local name stands for (``import torch as T`` -> ``torch``)."""
from __future__ import annotations

from typing import Dict, Optional

import libcst as cst


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None.

    Exact type tests: libcst's node classes are ABCs, whose ``isinstance`` costs several times
    more, and this runs for nearly every expression the walk meets; no node subclasses these."""
    if type(node) is cst.Name:
        return node.value  # type: ignore[attr-defined]
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is cst.Name:
        parts.append(node.value)  # type: ignore[attr-defined]
        return ".".join(reversed(parts))
    return None


def _module_name(node: cst.BaseExpression) -> str:
    return dotted(node) or ""


class ImportMap:
    """Maps local names to the qualified names they were imported as."""

    def __init__(self, module_name: str = "", is_package: bool = False) -> None:
        self.aliases: Dict[str, str] = {}
        self.sources: Dict[str, cst.CSTNode] = {}  # local name -> the import statement that binds it
        self.module_name = module_name
        self.is_package = is_package

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = name
                self.sources[alias.asname.name.value] = node
            else:
                head = name.split(".")[0]
                self.aliases[head] = head
                self.sources[head] = node

    def add_import_from(self, node: cst.ImportFrom) -> None:
        base = _module_name(node.module) if node.module is not None else ""
        level = len(node.relative)
        if level:
            base = self._resolve_relative(base, level)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{base}.{name}" if base else name
            self.sources[local] = node

    def _resolve_relative(self, base: str, level: int) -> str:
        parts = self.module_name.split(".") if self.module_name else []
        if not self.is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
        if base:
            parts.append(base)
        return ".".join(parts)

    def qualname(self, node: cst.BaseExpression) -> Optional[str]:
        """The qualified name of a Name/Attribute chain, resolved through imports.

        Unimported heads are returned as written (``model.fc``)."""
        text = dotted(node)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return text
        return f"{target}.{rest}" if rest else target

    def imported(self, name: str) -> bool:
        return name in self.aliases
