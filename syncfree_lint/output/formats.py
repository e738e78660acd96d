"""Every output format as one small function of the same list of diagnostics.

The JSON schema (stable; documented in docs/output.md) is a list of objects:
``{"code", "message", "path", "start": {"line", "column"}, "end": {"line", "column"},
"fix": null | {"title", "applicability", "edits": [{"content", "start", "end"}]}, "url"}``
with 1-based lines and columns.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence

from syncfree_lint import __version__
from syncfree_lint.diagnostic import Diagnostic
from syncfree_lint.output.text import format_text
from syncfree_lint.rules import ALL_RULES, BY_CODE

DOCS_URL = "https://github.com/syncfree/syncfree-lint/blob/main/docs/rules.md#{anchor}"
SCHEMA_VERSION = 1


def rule_url(code: str) -> str:
    rule = BY_CODE.get(code)
    anchor = f"{code.lower()}-{rule.name}" if rule is not None else code.lower()
    return DOCS_URL.format(anchor=anchor)


def _end(d: Diagnostic) -> Dict[str, int]:
    return {"line": d.end_line or d.line, "column": d.end_col or d.col}


def _fix_json(d: Diagnostic):
    if d.fix is None:
        return None
    return {
        "title": d.fix.title,
        "applicability": d.fix.applicability,
        "edits": [
            {"content": e.content, "start": {"line": e.start[0], "column": e.start[1] + 1},
             "end": {"line": e.end[0], "column": e.end[1] + 1}}
            for e in d.fix.edits
        ],
    }


def format_json(diagnostics: Sequence[Diagnostic]) -> str:
    items = [
        {
            "code": d.code,
            "message": d.message,
            "path": d.path,
            "start": {"line": d.line, "column": d.col},
            "end": _end(d),
            "fix": _fix_json(d),
            "url": rule_url(d.code),
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
        props = (f"file={_escape_property(d.path)},line={d.line},col={d.col},"
                 f"endLine={end['line']},endColumn={end['column']},title={_escape_property(d.code)}")
        lines.append(f"::{level} {props}::{_escape_data(d.code + ' ' + d.message)}")
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
            out.append(f"  {d.line}:{d.col} {d.code} {d.message}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def _related(index: int, where: str, what: str) -> Dict[str, object]:
    """A reach-chain link as a SARIF related location (``path:line``)."""
    path, _, line = where.rpartition(":")
    return {
        "id": index,
        "message": {"text": what},
        "physicalLocation": {
            "artifactLocation": {"uri": path.replace(os.sep, "/"), "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": int(line) if line.isdigit() else 1},
        },
    }


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
            "help": {"text": rule.doc.strip(), "markdown": rule.doc.strip()},
            "helpUri": rule_url(rule.code),
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
        result = {
            "ruleId": d.code,
            "ruleIndex": index.get(d.code, 0),
            "level": "error" if d.code in ("SFL000", "SFL001") else "warning",
            "message": {"text": d.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": d.line, "startColumn": d.col,
                               "endLine": end["line"], "endColumn": end["column"]},
                }
            }],
        }
        if fingerprints is not None:
            result["partialFingerprints"] = {"syncfreeLintKey/v1": fingerprints[position]}
        if d.reach:
            result["relatedLocations"] = [_related(i, where, what) for i, (where, what) in enumerate(d.reach)]
        if d.fix is not None and d.fix.edits:
            result["fixes"] = [{
                "description": {"text": d.fix.title},
                "artifactChanges": [{
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                    "replacements": [{
                        "deletedRegion": {"startLine": e.start[0], "startColumn": e.start[1] + 1,
                                          "endLine": e.end[0], "endColumn": e.end[1] + 1},
                        "insertedContent": {"text": e.content},
                    } for e in d.fix.edits],
                }],
            }]
        results.append(result)
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "syncfree-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": "https://github.com/syncfree/syncfree-lint",
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
