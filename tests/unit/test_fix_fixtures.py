"""`syncfree-lint --fix` turns each rule fixture into its `*.fixed.py` twin, exactly.

For every `fixtures/rules/<name>.fixed.py` the source `fixtures/rules/<name>.py` is copied to a
temporary folder and fixed in-process. The result must equal the `.fixed.py` text byte for byte;
a second `--fix` changes nothing (same bytes, same mtime); the fixed file re-lints with no
finding that still offers a safe fix, and with no finding the original did not have that
stays unfixed; `--diff` on the original prints a diff, exits 1 and writes nothing.
"""
from __future__ import annotations

import collections
import os
import re
import shutil
from pathlib import Path
from typing import List

import pytest

from syncfree_lint import cli, engine
from syncfree_lint.config import Config

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "fixtures" / "rules"
FIXED = sorted(RULES_DIR.glob("*.fixed.py"))


def source_of(fixed: Path) -> Path:
    return fixed.with_name(fixed.name[: -len(".fixed.py")] + ".py")


def selected(path: Path) -> List[str]:
    """Opt-in codes named by the fixture's `# select: CODE` first line (as tests/unit/test_fixtures.py reads it)."""
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    match = re.match(r"#\s*select:\s*([A-Z0-9,\s]+)$", first)
    return [code.strip() for code in match.group(1).split(",") if code.strip()] if match else []


def run_cli(args: List[str], capsys) -> tuple:
    capsys.readouterr()
    extra = selected(Path(args[-1]))
    status = cli.main(["--no-cache", "--jobs", "1", *(["--extend-select", ",".join(extra)] if extra else []), *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def diagnostics(path: Path):
    return engine.run([str(path)], Config(extend_select=tuple(selected(path)))).diagnostics


def copy_source(fixed: Path, tmp_path: Path) -> Path:
    target = tmp_path / source_of(fixed).name
    shutil.copyfile(source_of(fixed), target)
    return target


def test_there_are_fixed_fixtures() -> None:
    codes = {p.name[:6] for p in FIXED}
    assert codes >= {"SFL301", "SFL302", "SFL303", "SFL304", "SFL305", "SFL307"}
    for path in FIXED:
        assert source_of(path).exists(), f"{path.name} has no source fixture"


@pytest.mark.parametrize("fixed", FIXED, ids=lambda p: p.name)
def test_fix_produces_the_fixed_fixture(fixed: Path, tmp_path: Path, capsys) -> None:
    target = copy_source(fixed, tmp_path)
    run_cli(["--fix", str(target)], capsys)
    got = target.read_bytes()
    want = fixed.read_bytes()
    if got != want:
        import difflib

        diff = "".join(difflib.unified_diff(
            want.decode().splitlines(keepends=True), got.decode().splitlines(keepends=True),
            fromfile=f"expected/{fixed.name}", tofile=f"got/{target.name}",
        ))
        pytest.fail(f"--fix output differs from {fixed.name}:\n{diff}")


@pytest.mark.parametrize("fixed", FIXED, ids=lambda p: p.name)
def test_fix_is_idempotent(fixed: Path, tmp_path: Path, capsys) -> None:
    target = copy_source(fixed, tmp_path)
    run_cli(["--fix", str(target)], capsys)
    once = target.read_bytes()
    stamp = os.stat(target).st_mtime_ns
    os.utime(target, ns=(stamp - 10_000_000_000, stamp - 10_000_000_000))  # an mtime a write would change
    stamp = os.stat(target).st_mtime_ns
    run_cli(["--fix", str(target)], capsys)
    assert target.read_bytes() == once, "a second --fix changed the file"
    assert os.stat(target).st_mtime_ns == stamp, "a second --fix rewrote the file"


@pytest.mark.parametrize("fixed", FIXED, ids=lambda p: p.name)
def test_fixed_file_has_no_fixable_findings_left(fixed: Path, tmp_path: Path, capsys) -> None:
    target = copy_source(fixed, tmp_path)
    before = diagnostics(target)
    fixed_codes = {d.code for d in before if d.fix is not None and d.fix.applicability == "safe"}
    assert fixed_codes, f"{source_of(fixed).name} offers no safe fix"
    unfixed = collections.Counter(d.code for d in before if d.fix is None or d.fix.applicability != "safe")
    run_cli(["--fix", str(target)], capsys)
    after = diagnostics(target)
    still_fixable = [d.format() for d in after if d.fix is not None and d.fix.applicability == "safe" and d.fix.edits]
    assert not still_fixable, "safe fixes left after --fix:\n" + "\n".join(still_fixable)
    remaining = collections.Counter(d.code for d in after)
    new = remaining - unfixed
    assert not new, f"findings after --fix that were fixed (or new): {dict(new)}\n" + "\n".join(
        d.format() for d in after if d.code in new)


@pytest.mark.parametrize("fixed", FIXED, ids=lambda p: p.name)
def test_diff_prints_and_writes_nothing(fixed: Path, tmp_path: Path, capsys) -> None:
    target = copy_source(fixed, tmp_path)
    data = target.read_bytes()
    stamp = os.stat(target).st_mtime_ns
    status, out, _ = run_cli(["--diff", str(target)], capsys)
    assert status == 1
    assert out.startswith("--- a/") and "\n+++ b/" in out and "\n@@ " in out, out[:500]
    assert target.read_bytes() == data
    assert os.stat(target).st_mtime_ns == stamp
    assert sorted(os.listdir(tmp_path)) == [target.name]
