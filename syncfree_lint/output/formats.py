"""Every output format as one small function of the same list of diagnostics.

The JSON schema (stable; documented in docs/output.md) is a list of objects:
``{"code", "message", "path", "cell", "start": {"line", "column"}, "end": {"line", "column"},
"fix": null | {"title", "applicability", "edits": [{"content", "start", "end"}]}, "url", "explain",
"reach"}`` with 1-based lines and columns. ``cell`` is null for a Python file; in a notebook it is
the 1-based cell (every cell of the file counts) and every line, of the finding and of its fix's
edits, is the line in that cell. ``url`` is the rule's section in ``docs/rules.md`` of the
syncfree-lint source tree, ``explain`` the command that prints the same text.

SARIF keeps ``path`` as the artifact and puts the cell in the location's property bag
(``"properties": {"cell": N}``), with the region's lines in that cell.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from syncfree_lint import __version__
from syncfree_lint.diagnostic import Diagnostic, Edit
from syncfree_lint.notebook import split_where
from syncfree_lint.output.text import format_text
from syncfree_lint.rules import ALL_RULES, BY_CODE

#: the rules' page in the syncfree-lint source tree (rendered from the rules: ``syncfree_lint.docs``);
#: the same text is printed by ``syncfree-lint --explain CODE`` wherever the package is installed
DOCS_URL = "docs/rules.md#{anchor}"
SCHEMA_VERSION = 1


def rule_url(code: str) -> str:
    rule = BY_CODE.get(code)
    anchor = f"{code.lower()}-{rule.name}" if rule is not None else code.lower()
    return DOCS_URL.format(anchor=anchor)


def explain_command(code: str) -> str:
    return f"syncfree-lint --explain {code}"


def _end(d: Diagnostic) -> Dict[str, int]:
    return {"line": d.shown_end_line, "column": d.end_col or d.col}


def _edit_lines(d: Diagnostic, e: Edit) -> Tuple[int, int]:
    """An edit's (start, end) lines as shown: in the finding's cell for a notebook."""
    return e.start[0] - d.cell_start, e.end[0] - d.cell_start


def _fix_json(d: Diagnostic):
    if d.fix is None:
        return None
    return {
        "title": d.fix.title,
        "applicability": d.fix.applicability,
        "edits": [
            {"content": e.content, "start": {"line": _edit_lines(d, e)[0], "column": e.start[1] + 1},
             "end": {"line": _edit_lines(d, e)[1], "column": e.end[1] + 1}}
            for e in d.fix.edits
        ],
    }


def format_json(diagnostics: Sequence[Diagnostic]) -> str:
    items = [
        {
            "code": d.code,
            "message": d.message,
            "path": d.path,
            "cell": d.cell,
            "start": {"line": d.shown_line, "column": d.col},
            "end": _end(d),
            "fix": _fix_json(d),
            "url": rule_url(d.code),
            "explain": explain_command(d.code),
            "reach": [{"where": where, "what": what} for where, what in d.reach],
        }
        for d in diagnostics
    ]
    return json.dumps(items, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(diagnostics: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands: one annotation per finding."""
    lines = []
    for d in diagnostics:
        level = "error" if d.code in ("SFL000", "SFL001") else "warning"
        end = _end(d)
        props = (f"file={_escape_property(d.path)},line={d.shown_line},col={d.col},"
                 f"endLine={end['line']},endColumn={end['column']},title={_escape_property(d.code)}")
        cell = f"cell {d.cell}: " if d.cell is not None else ""
        lines.append(f"::{level} {props}::{_escape_data(cell + d.code + ' ' + d.message)}")
    return "".join(line + "\n" for line in lines)


def format_grouped(diagnostics: Sequence[Diagnostic]) -> str:
    """Findings under one header per file, as ruff's grouped output."""
    by_path: Dict[str, List[Diagnostic]] = defaultdict(list)
    for d in diagnostics:
        by_path[d.path].append(d)
    out = []
    for path in sorted(by_path):
        out.append(f"{path}:")
        for d in by_path[path]:
            cell = f"cell {d.cell}:" if d.cell is not None else ""
            out.append(f"  {cell}{d.shown_line}:{d.col} {d.code} {d.message}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def _related(index: int, where: str, what: str) -> Dict[str, object]:
    """A reach-chain link as a SARIF related location (``path:line`` or ``path:cell N:line``)."""
    path, cell, line = split_where(where)
    location: Dict[str, object] = {
        "id": index,
        "message": {"text": what},
        "physicalLocation": {
            "artifactLocation": {"uri": path.replace(os.sep, "/"), "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": line},
        },
    }
    if cell is not None:
        location["properties"] = {"cell": cell}
    return location


def format_sarif(diagnostics: Sequence[Diagnostic], fingerprints: Optional[Sequence[str]] = None) -> str:
    """SARIF 2.1.0 for GitHub code scanning: every rule with its help, results with fixes.

    ``fingerprints`` (one per diagnostic, ``fingerprint.fingerprints``) go into each result's
    ``partialFingerprints``: they stay the same when lines are inserted elsewhere."""
    index = {rule.code: i for i, rule in enumerate(ALL_RULES)}
    rules = [
        {
            "id": rule.code,
            "name": "".join(part.capitalize() for part in rule.name.split("-")),
            "shortDescription": {"text": rule.message},
            "fullDescription": {"text": rule.doc.strip().split("\n\n")[1] if "\n\n" in rule.doc.strip() else rule.message},
            "help": {"text": rule.doc.strip() + f"\n\n(`{explain_command(rule.code)}` prints this.)",
                     "markdown": rule.doc.strip() + f"\n\n(`{explain_command(rule.code)}` prints this.)"},
            "defaultConfiguration": {"level": "error" if rule.code in ("SFL000", "SFL001") else "warning",
                                     "enabled": rule.default_enabled},
            "properties": {"tags": ["performance", "pytorch"]},
        }
        for rule in ALL_RULES
    ]
    results = []
    for position, d in enumerate(diagnostics):
        end = _end(d)
        uri = d.path.replace(os.sep, "/")
        where: Dict[str, object] = {
            "physicalLocation": {
                "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": d.shown_line, "startColumn": d.col,
                           "endLine": end["line"], "endColumn": end["column"]},
            }
        }
        if d.cell is not None:
            where["properties"] = {"cell": d.cell}
        result = {
            "ruleId": d.code,
            "ruleIndex": index.get(d.code, 0),
            "level": "error" if d.code in ("SFL000", "SFL001") else "warning",
            "message": {"text": d.message},
            "locations": [where],
        }
        if fingerprints is not None:
            result["partialFingerprints"] = {"syncfreeLintKey/v1": fingerprints[position]}
        if d.reach:
            result["relatedLocations"] = [_related(i, where, what) for i, (where, what) in enumerate(d.reach)]
        if d.fix is not None and d.fix.edits and d.fix.applicability != "display":
            change: Dict[str, object] = {
                "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                "replacements": [{
                    "deletedRegion": {"startLine": _edit_lines(d, e)[0], "startColumn": e.start[1] + 1,
                                      "endLine": _edit_lines(d, e)[1], "endColumn": e.end[1] + 1},
                    "insertedContent": {"text": e.content},
                } for e in d.fix.edits],
            }
            if d.cell is not None:
                change["properties"] = {"cell": d.cell}
            result["fixes"] = [{"description": {"text": d.fix.title}, "artifactChanges": [change]}]
        results.append(result)
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "syncfree-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": _root_uri()}},
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2) + "\n"


def _root_uri() -> str:
    path = os.path.abspath(".").replace(os.sep, "/")
    return "file://" + (path if path.startswith("/") else "/" + path) + "/"


FORMATS: Dict[str, Callable[[Sequence[Diagnostic]], str]] = {
    "text": format_text,
    "json": format_json,
    "sarif": format_sarif,
    "github": format_github,
    "grouped": format_grouped,
}
