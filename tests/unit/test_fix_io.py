"""What `--fix` does to files, apart from the edits: bytes, encodings, modes, races, leftovers."""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from syncfree_lint import cli, engine
from syncfree_lint.config import Config
from syncfree_lint.fixes import apply

ROOT = Path(__file__).resolve().parents[2]
LOOPS_DIR = ROOT / "fixtures" / "loops"

# One SFL301/SFL304 finding whose safe fix moves the import to syncfree.
STEP = """\
{cookie}# A training script\t(tabs kept)
import torch
from torchmetrics import MeanMetric

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(3)]
mean_loss = MeanMetric().to(device)  # {comment}


for x, y in loader:
\tloss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
\tloss.backward()   # trailing spaces and a comment   

\toptimizer.step()
\tmean_loss.update(loss.detach())
"""
OLD_IMPORT = "from torchmetrics import MeanMetric"
NEW_IMPORT = "from syncfree import MeanMetric"

# Attribute form: the fix also inserts `import syncfree` after `import torchmetrics`.
ATTRIBUTE_STEP = STEP.replace(OLD_IMPORT, "import torchmetrics").replace("MeanMetric()", "torchmetrics.MeanMetric()")


def fix(*args: str) -> int:
    return cli.main(["--no-cache", "--jobs", "1", "--fix", *args])


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    old = os.stat(path).st_mtime_ns - 10_000_000_000  # so that a rewrite shows in the mtime
    os.utime(path, ns=(old, old))
    return path


def snapshot(folder: Path) -> dict:
    return {p.name: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in folder.iterdir()}


# ---------------------------------------------------------------- files with nothing to fix


def test_loop_files_without_safe_fixes_are_untouched(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "loops"
    shutil.copytree(LOOPS_DIR, folder)
    for path in folder.iterdir():
        write(path, path.read_bytes())
    result = engine.run([str(folder)], Config())
    fixable = {Path(d.path).name for d in result.diagnostics
               if d.fix is not None and d.fix.applicability == "safe" and d.fix.edits}
    before = snapshot(folder)
    fix(str(folder))
    capsys.readouterr()
    after = snapshot(folder)
    assert set(after) == set(before), "files appeared or vanished"
    untouched = [name for name in before if name not in fixable]
    assert untouched, "every loop fixture has a safe fix: nothing left to check"
    for name in untouched:
        assert after[name] == before[name], f"{name} has no safe fix but --fix rewrote it"


def test_clean_file_is_not_rewritten(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "clean.py", STEP.format(cookie="", comment="none").replace(OLD_IMPORT, NEW_IMPORT).encode())
    before = snapshot(tmp_path)
    assert fix(str(path)) == 0
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- bytes that must survive


def roundtrip(tmp_path: Path, data: bytes, want: bytes) -> bytes:
    path = write(tmp_path / "train.py", data)
    fix(str(path))
    got = path.read_bytes()
    assert got == want, f"\nwant {want!r}\ngot  {got!r}"
    assert sorted(os.listdir(tmp_path)) == ["train.py"], "a temporary file was left behind"
    return got


def test_lf_utf8_with_non_ascii_comment(tmp_path: Path, capsys) -> None:
    text = STEP.format(cookie="", comment="Verlust ∑ über Schritte")
    roundtrip(tmp_path, text.encode(), text.replace(OLD_IMPORT, NEW_IMPORT).encode())


def test_crlf_line_endings_survive(tmp_path: Path, capsys) -> None:
    text = STEP.format(cookie="", comment="crlf").replace("\n", "\r\n")
    roundtrip(tmp_path, text.encode(), text.replace(OLD_IMPORT, NEW_IMPORT).encode())


def test_crlf_inserted_import_uses_crlf(tmp_path: Path, capsys) -> None:
    text = ATTRIBUTE_STEP.format(cookie="", comment="crlf").replace("\n", "\r\n")
    want = text.replace("import torchmetrics\r\n", "import torchmetrics\r\nimport syncfree\r\n")
    want = want.replace("torchmetrics.MeanMetric()", "syncfree.MeanMetric()")
    roundtrip(tmp_path, text.encode(), want.encode())


def test_utf8_bom_survives(tmp_path: Path, capsys) -> None:
    text = STEP.format(cookie="", comment="bom é")
    got = roundtrip(tmp_path, b"\xef\xbb\xbf" + text.encode(),
                    b"\xef\xbb\xbf" + text.replace(OLD_IMPORT, NEW_IMPORT).encode())
    assert not got.startswith(b"\xef\xbb\xbf\xef\xbb\xbf")


def test_latin1_cookie_and_text_survive(tmp_path: Path, capsys) -> None:
    text = STEP.format(cookie="# -*- coding: latin-1 -*-\n", comment="Größe, déjà vu, ½")
    data = text.encode("latin-1")
    assert b"\xc3" not in data and b"\xf6" in data  # really latin-1, not UTF-8
    roundtrip(tmp_path, data, text.replace(OLD_IMPORT, NEW_IMPORT).encode("latin-1"))


def test_latin1_crlf_attribute_form(tmp_path: Path, capsys) -> None:
    text = ATTRIBUTE_STEP.format(cookie="# coding: latin-1\n", comment="Maß").replace("\n", "\r\n")
    want = text.replace("import torchmetrics\r\n", "import torchmetrics\r\nimport syncfree\r\n")
    want = want.replace("torchmetrics.MeanMetric()", "syncfree.MeanMetric()")
    roundtrip(tmp_path, text.encode("latin-1"), want.encode("latin-1"))


def test_no_trailing_newline(tmp_path: Path, capsys) -> None:
    text = STEP.format(cookie="", comment="eof").rstrip("\n")
    roundtrip(tmp_path, text.encode(), text.replace(OLD_IMPORT, NEW_IMPORT).encode())


# ---------------------------------------------------------------- file system


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_mode_is_kept(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "train.py", STEP.format(cookie="", comment="mode").encode())
    os.chmod(path, 0o640)
    fix(str(path))
    assert NEW_IMPORT in path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_executable_mode_is_kept(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "train.py", ("#!/usr/bin/env python\n" + STEP.format(cookie="", comment="x")).encode())
    os.chmod(path, 0o755)
    fix(str(path))
    assert NEW_IMPORT in path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755


def test_no_temporary_file_left_after_several_files(tmp_path: Path, capsys) -> None:
    for name in ("a.py", "b.py", "c.py"):
        write(tmp_path / name, STEP.format(cookie="", comment=name).encode())
    fix(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["a.py", "b.py", "c.py"]
    assert all(NEW_IMPORT in (tmp_path / n).read_text() for n in ("a.py", "b.py", "c.py"))


def test_file_changed_on_disk_is_not_overwritten(tmp_path: Path, capsys, monkeypatch) -> None:
    path = write(tmp_path / "train.py", STEP.format(cookie="", comment="race").encode())
    edited = path.read_bytes() + b"# edited by someone else while the fix ran\n"
    real = apply.write_atomically

    def racing_write(target, text, expected, encoding, bom):
        Path(target).write_bytes(edited)  # the user saves between our read and our write
        return real(target, text, expected, encoding, bom)

    monkeypatch.setattr(apply, "write_atomically", racing_write)
    fix(str(path))
    err = capsys.readouterr().err
    assert path.read_bytes() == edited
    assert "changed on disk" in err
    assert sorted(os.listdir(tmp_path)) == ["train.py"]


def test_write_atomically_refuses_when_expected_bytes_differ(tmp_path: Path) -> None:
    path = write(tmp_path / "x.py", b"print(1)\n")
    with pytest.raises(apply.ChangedOnDisk):
        apply.write_atomically(str(path), "print(2)\n", b"print(0)\n", "utf-8", False)
    assert path.read_bytes() == b"print(1)\n"
    assert os.listdir(tmp_path) == ["x.py"]


def test_write_atomically_failure_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = write(tmp_path / "x.py", b"# -*- coding: ascii -*-\nprint(1)\n")
    with pytest.raises(UnicodeEncodeError):
        apply.write_atomically(str(path), "# -*- coding: ascii -*-\nprint('\u00e9')\n", path.read_bytes(), "ascii", False)
    assert path.read_bytes() == b"# -*- coding: ascii -*-\nprint(1)\n"
    assert os.listdir(tmp_path) == ["x.py"]


# ---------------------------------------------------------------- --unsafe-fixes alone


def test_unsafe_fixes_without_fix_or_diff_writes_nothing(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "train.py", STEP.format(cookie="", comment="unsafe").encode())
    before = snapshot(tmp_path)
    plain = cli.main(["--no-cache", "--jobs", "1", str(path)])
    plain_out = capsys.readouterr().out
    status = cli.main(["--no-cache", "--jobs", "1", "--unsafe-fixes", str(path)])
    out = capsys.readouterr().out
    assert snapshot(tmp_path) == before
    assert status == plain == 1
    assert out == plain_out and "SFL301" in out


def test_diff_on_crlf_file_writes_nothing(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "train.py", STEP.format(cookie="", comment="d").replace("\n", "\r\n").encode())
    before = snapshot(tmp_path)
    status = cli.main(["--no-cache", "--jobs", "1", "--diff", str(path)])
    out = capsys.readouterr().out
    assert status == 1
    assert "-" + OLD_IMPORT in out and "+" + NEW_IMPORT in out
    assert snapshot(tmp_path) == before


def test_import_rewrite_inside_a_block_keeps_indentation(tmp_path):
    """Regression (found by the fix property test): the moved names' new import line sits in
    the same block as the rewritten one, so a fix inside `if`/`try` still compiles."""
    source = (ROOT / "fixtures" / "rules" / "SFL305_validating_classification_metric.py").read_text()
    nested = "if True:\n" + "".join("    " + line if line.strip() else line for line in source.splitlines(keepends=True))
    target = tmp_path / "nested.py"
    target.write_text(nested)
    from syncfree_lint.cli import main as cli_main

    cli_main([str(target), "--fix", "--no-cache"])
    fixed = target.read_text()
    assert fixed != nested and "from syncfree import" in fixed
    compile(fixed, str(target), "exec")
