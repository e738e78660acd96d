"""docs/rules.md, rendered from the rules' own metadata (code, name, message, doc, fix).

    python -m syncfree_lint.docs            # print the page
    python -m syncfree_lint.docs --write    # write docs/rules.md (run from the repository root)
    python -m syncfree_lint.docs --check    # exit 1 when docs/rules.md differs from the rules

A test fails when the page is stale, so the page and ``--explain`` never disagree.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence, Type

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.rules.base import Rule

DEFAULT_PATH = Path("docs") / "rules.md"
REGENERATE = "python -m syncfree_lint.docs --write"


def _cell(text: str) -> str:
    """Text that is safe inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _demote(doc: str) -> List[str]:
    """The doc's lines with every Markdown heading one level deeper (code blocks untouched)."""
    out = []
    fenced = False
    for line in doc.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            line = "#" + line
        out.append(line.rstrip())
    return out


def anchor(rule: Type["Rule"]) -> str:
    """The id of a rule's section; the json/sarif outputs link to ``docs/rules.md#<anchor>``."""
    return f"{rule.code.lower()}-{rule.name}"


def render_rules_markdown() -> str:
    """The whole docs/rules.md page: a table of every rule, then each rule's documentation."""
    from syncfree_lint.rules import ALL_RULES

    lines = [
        "<!-- Generated from the rules' metadata by `" + REGENERATE + "`. Do not edit by hand. -->",
        "",
        "# Rules",
        "",
        "Every rule syncfree-lint has. Rules that are off by default are turned on with",
        "`--extend-select CODE` (or `extend-select` in `[tool.syncfree-lint]`; under flake8,",
        "`--extend-select CODE`). `syncfree-lint --explain CODE` prints the same section as below.",
        "",
        "| code | name | default | fix | message |",
        "|---|---|---|---|---|",
    ]
    for rule in ALL_RULES:
        default = "on" if rule.default_enabled else "off (opt-in)"
        fix = _cell(rule.fix_title) if rule.fix_title else "—"
        lines.append(
            f"| [{rule.code}](#{anchor(rule)}) | `{rule.name}` | {default} | {fix} | {_cell(rule.message)} |"
        )
    for rule in ALL_RULES:
        title, _, body = rule.explain().partition("\n")
        lines += ["", f'<a id="{anchor(rule)}"></a>', "", f"## {title.strip()}", ""]
        if rule.fix_title:
            lines += [f"Fix available: {rule.fix_title}", ""]
        body_lines = _demote(body.strip("\n"))
        lines += body_lines
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m syncfree_lint.docs", description="Render docs/rules.md from the rules.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="write the page to PATH instead of printing it")
    group.add_argument("--check", action="store_true", help="exit 1 when PATH differs from the rendered page")
    parser.add_argument("path", nargs="?", default=str(DEFAULT_PATH), help=f"the page (default: {DEFAULT_PATH})")
    args = parser.parse_args(argv)
    text = render_rules_markdown()
    path = Path(args.path)
    if args.write:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return 0
    if args.check:
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != text:
            sys.stderr.write(f"{path} is stale; regenerate it with `{REGENERATE}`\n")
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
