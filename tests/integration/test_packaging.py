"""One distribution, two import packages: a built wheel holds both; the install imports both."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_installed_imports_both_packages():
    import syncfree
    import syncfree_lint

    assert Path(syncfree_lint.__file__).resolve().parent == ROOT / "syncfree_lint"
    assert Path(syncfree.__file__).resolve().parent == ROOT / "runtime" / "syncfree"


@pytest.mark.slow
def test_wheel_holds_linter_and_runtime(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True, text=True,
    )
    if proc.returncode != 0 and "No module named build" in proc.stderr:
        pytest.fail("the 'build' package is part of the test extras; install .[test]")
    assert proc.returncode == 0, proc.stderr[-2000:]
    [wheel] = list(tmp_path.glob("syncfree_lint-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "syncfree_lint/cli.py" in names
    assert "syncfree_lint/rules/host_reads/item.py" in names  # rule families are subpackages
    assert "syncfree/__init__.py" in names
    assert "syncfree/guard/__init__.py" in names and "syncfree/trace/__main__.py" in names
    assert not any(name.startswith(("tests/", "fixtures/", "benchmarks/")) for name in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: libcst" in metadata
    assert "Requires-Dist: torch" in metadata and 'extra == "runtime"' in metadata
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "syncfree-lint = syncfree_lint.cli:main" in entry_points
