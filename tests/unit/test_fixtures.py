"""The fixtures are the spec in code: every `# expect:` marker must match what the linter reports.

A line ending in `# expect: SFL101` (or `# expect: SFL102, SFL103`) must produce exactly those
codes; `# expect: none` and unmarked lines must produce nothing. A fixture whose first line is
`# select: SFL402` is linted with that opt-in rule added; `# expect-file: SFL000 line N` expects a
finding on a line that cannot carry a comment. `fixtures/loops` is linted as one run, so that a
helper reached from a step in another file is found.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

import pytest

from syncfree_lint import engine
from syncfree_lint.config import Config
from syncfree_lint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "fixtures" / "rules"
LOOPS_DIR = ROOT / "fixtures" / "loops"

_EXPECT = re.compile(r"#\s*expect:\s*([A-Za-z0-9_,\s]+?)\s*(?:#|$)")
_EXPECT_FILE = re.compile(r"#\s*expect-file:\s*(SFL\d{3})\s+line\s+(\d+)")
_SELECT = re.compile(r"#\s*select:\s*([A-Z0-9,\s]+)")

Finding = Tuple[int, str]


def expectations(path: Path) -> Tuple[Set[Finding], Set[int]]:
    """(expected (line, code) pairs, lines marked `# expect: none`) of one fixture."""
    expected: Set[Finding] = set()
    negatives: Set[int] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        file_marker = _EXPECT_FILE.search(line)
        if file_marker:
            expected.add((int(file_marker.group(2)), file_marker.group(1)))
            continue
        marker = _EXPECT.search(line)
        if not marker:
            continue
        codes = [c.strip().upper() for c in marker.group(1).split(",") if c.strip()]
        if codes == ["NONE"]:
            negatives.add(number)
        else:
            assert "NONE" not in codes, f"{path.name}:{number}: `none` mixed with codes"
            expected.update((number, code) for code in codes)
    return expected, negatives


def extra_codes(path: Path) -> Tuple[str, ...]:
    """Codes named by a `# select:` comment on the first line."""
    first = path.read_text(encoding="utf-8").splitlines()[:1]
    match = _SELECT.search(first[0]) if first else None
    if not match:
        return ()
    return tuple(c.strip() for c in match.group(1).split(",") if c.strip())


def lint(paths: Iterable[Path], extend_select: Tuple[str, ...] = ()) -> Dict[Path, Set[Finding]]:
    """Run the linter in-process; (line, code) pairs per resolved file path."""
    result = engine.run([str(p) for p in paths], Config(extend_select=extend_select))
    found: Dict[Path, Set[Finding]] = {}
    for diagnostic in result.diagnostics:
        found.setdefault(Path(diagnostic.path).resolve(), set()).add((diagnostic.line, diagnostic.code))
    return found


def compare(path: Path, found: Set[Finding]) -> List[str]:
    """Human-readable lines for every missed and every extra finding."""
    expected, _ = expectations(path)
    lines = path.read_text(encoding="utf-8").splitlines()

    def show(finding: Finding) -> str:
        number, code = finding
        text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        return f"  {path.name}:{number}: {code}    | {text}"

    problems = []
    missed = sorted(expected - found)
    extra = sorted(found - expected)
    if missed:
        problems.append("missed (expected, not reported):")
        problems.extend(show(f) for f in missed)
    if extra:
        problems.append("extra (reported, not expected):")
        problems.extend(show(f) for f in extra)
    return problems


RULE_FIXTURES = sorted(p for p in RULES_DIR.glob("*.py") if not p.name.endswith(".fixed.py"))  # .fixed.py: expected --fix output
LOOP_FIXTURES = sorted(LOOPS_DIR.glob("*.py"))


@pytest.fixture(scope="module")
def loops_run() -> Dict[Path, Set[Finding]]:
    return lint([LOOPS_DIR])


@pytest.mark.parametrize("path", RULE_FIXTURES, ids=lambda p: p.name)
def test_rule_fixture(path: Path) -> None:
    found = lint([path], extend_select=extra_codes(path)).get(path.resolve(), set())
    problems = compare(path, found)
    assert not problems, f"{path.name} disagrees with its markers:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", LOOP_FIXTURES, ids=lambda p: p.name)
def test_loop_fixture(path: Path, loops_run: Dict[Path, Set[Finding]]) -> None:
    found = loops_run.get(path.resolve(), set())
    problems = compare(path, found)
    assert not problems, f"{path.name} disagrees with its markers:\n" + "\n".join(problems)


def test_fixture_folders_are_not_empty() -> None:
    assert len(RULE_FIXTURES) >= 15
    assert len(LOOP_FIXTURES) >= 7


CHECKED_RULES = [rule for rule in ALL_RULES if rule.code != "SFL001"]


@pytest.mark.parametrize("rule", CHECKED_RULES, ids=lambda r: r.code)
def test_every_rule_has_positive_and_negative_fixture(rule) -> None:
    positives = 0
    negatives = 0
    for path in RULE_FIXTURES + LOOP_FIXTURES:
        expected, none_lines = expectations(path)
        positives += sum(1 for _, code in expected if code == rule.code)
        if path.name.startswith(rule.code + "_"):
            negatives += len(none_lines)
    assert positives, f"{rule.code}: no fixture line is marked `# expect: {rule.code}`"
    if rule.code != "SFL000":
        assert negatives, f"{rule.code}: its fixture has no `# expect: none` line"


DOC_SECTIONS = ("What it does", "Why it", "Example", "Use instead", "Fix safety")


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_doc_has_sections(rule) -> None:
    headings = [line.lstrip("#").strip() for line in rule.doc.splitlines() if line.lstrip().startswith("#")]
    missing = [s for s in DOC_SECTIONS if not any(h.startswith(s) for h in headings)]
    assert not missing, f"{rule.code} doc lacks sections: {missing}"
