"""What the language server decides, without the protocol: findings for a buffer, and the code
actions for them. Positions here are the linter's own: 1-based lines, 0-based columns counted in
characters (``diagnostic.Edit``); ``serve`` converts them to the client's position encoding.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from syncfree_lint.cache import CACHE_DIR, Cache
from syncfree_lint.config import Config, load_config
from syncfree_lint.diagnostic import Diagnostic, Edit
from syncfree_lint.noqa_edit import noqa_line, split_lines
from syncfree_lint.rules import BY_CODE, DEFAULTS

QUICKFIX = "quickfix"
FIX_ALL = "source.fixAll"
_DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def rule_href(code: str) -> Optional[str]:
    """Where a rule's documentation is: ``docs/rules.md#<anchor>`` of this checkout when the
    package runs from one (an editable install), else None (no link: ``syncfree-lint --explain
    CODE`` prints the text, and the hover shows it)."""
    rule = BY_CODE.get(code)
    if rule is None:
        return None
    from syncfree_lint.docs import anchor

    if _DOCS.is_file():
        return _DOCS.as_uri() + "#" + anchor(rule)
    return None


@dataclass
class Action:
    """A code action as plain data: ``edits`` replace text of the one document it is for."""

    title: str
    kind: str
    edits: List[Edit]
    diagnostic: Optional[Diagnostic] = None
    preferred: bool = False


@dataclass
class Session:
    """The server's state: per document, the text last linted and what it gave."""

    project: bool = True
    results: Dict[str, Tuple[str, List[Diagnostic]]] = field(default_factory=dict)

    def config_for(self, path: str) -> Config:
        """The configuration of the closest pyproject.toml (read again each time: it may change)."""
        start = path if os.path.exists(path) else os.path.dirname(os.path.abspath(path))
        return load_config(None, [start], list(DEFAULTS))

    def lint(self, key: str, path: str, text: str, project: Optional[bool] = None) -> List[Diagnostic]:
        """Findings for a buffer's (unsaved) ``text``, in the context of its project's other
        files as they are on disk. Raises ConfigError for a bad configuration."""
        from syncfree_lint.engine import lint_text

        config = self.config_for(path)
        cache = Cache(os.path.join(config.root, CACHE_DIR), repr(config))
        use_project = self.project if project is None else project
        found = lint_text(path, text, config, fixes=True, project_cache=cache, project=use_project)
        self.results[key] = (text, found)
        return found

    def current(self, key: str, path: str, text: str, project: Optional[bool] = None) -> List[Diagnostic]:
        """The findings for ``text``: the stored ones when that text was linted last."""
        known = self.results.get(key)
        if known is not None and known[0] == text:
            return known[1]
        return self.lint(key, path, text, project)

    def forget(self, key: str) -> None:
        self.results.pop(key, None)


def overlaps(d: Diagnostic, first_line: int, last_line: int) -> bool:
    """Whether a finding's lines meet the 1-based line span [first_line, last_line]."""
    return d.line <= last_line and (d.end_line or d.line) >= first_line


def fix_action(d: Diagnostic) -> Optional[Action]:
    if d.fix is None or not d.fix.edits:
        return None
    safe = d.fix.applicability == "safe"
    suffix = {"safe": "", "unsafe": " (unsafe)"}.get(d.fix.applicability, " (suggestion: changes what is shown)")
    title = f"{d.code}: {d.fix.title}{suffix}"
    return Action(title, QUICKFIX, list(d.fix.edits), d, preferred=safe)


def noqa_action(d: Diagnostic, text: str) -> Optional[Action]:
    """Suppress with ``# noqa: CODE`` (merged into the line's existing noqa codes)."""
    lines = split_lines(text)
    new = noqa_line(text, d.line, d.code)
    if new is None:
        return None
    old = lines[d.line - 1].rstrip("\r\n")
    return Action(f"{d.code}: suppress with `# noqa: {d.code}`", QUICKFIX, [Edit((d.line, 0), (d.line, len(old)), new)], d)


def end_of(text: str) -> Tuple[int, int]:
    """The position after the last character (1-based line, 0-based column)."""
    lines = split_lines(text)
    if not lines:
        return (1, 0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return (len(lines) + 1, 0)
    return (len(lines), len(last))


def fix_all_action(path: str, text: str, lint) -> Optional[Action]:
    """Every safe fix of the file, applied until none is left, as one edit of the whole text."""
    from syncfree_lint.fixes.apply import fix_text

    fixed = fix_text(path, text, lint, lambda d: d.fix is not None and d.fix.applicability == "safe")
    if not fixed.changed:
        return None
    count = len(fixed.applied)
    title = f"syncfree-lint: fix all safe findings in the file ({count})"
    return Action(title, FIX_ALL, [Edit((1, 0), end_of(text), fixed.fixed)])


def wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
    """Whether a client asking for ``only`` kinds (hierarchical, ``source`` covers
    ``source.fixAll``) wants an action of ``kind``."""
    return not only or any(kind == o or kind.startswith(o + ".") for o in only)


def actions_for(session: Session, key: str, path: str, text: str, first_line: int, last_line: int,
                only: Optional[Sequence[str]] = None) -> List[Action]:
    """The code actions for the findings on lines [first_line, last_line] (1-based), plus
    "fix all safe" for the file."""
    found = session.current(key, path, text)
    out: List[Action] = []
    if wanted(QUICKFIX, only):
        for d in found:
            if d.code in ("SFL000", "SFL001") or not overlaps(d, first_line, last_line):
                continue
            for action in (fix_action(d), noqa_action(d, text)):
                if action is not None:
                    out.append(action)
    if wanted(FIX_ALL, only) and any(d.fix is not None and d.fix.applicability == "safe" for d in found):
        action = fix_all_action(path, text, lambda p, t: session.lint(key + "#fix-all", p, t))
        session.forget(key + "#fix-all")
        if action is not None:
            out.append(action)
    return out
