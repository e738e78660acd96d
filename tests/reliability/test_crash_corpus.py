"""Lint real code nobody wrote for us: the installed torch and torchmetrics sources.

Reliability contract (issue "never crash, never corrupt a file, never lose a metric value"):
- no SFL001 (internal error of a rule) on any file;
- every SFL000 is for a file that Python's own parser rejects too, or that is nested too deeply;
- the CLI exits 0 or 1 on a large real tree (never 2, never a signal).

Linting all of torch (about 2,300 files, 1.2M lines) takes about 5.5 minutes on the 2-core dev
machine, so torch is linted as a deterministic sample: every ``TORCH_EVERY``-th file in sorted
order. torchmetrics is linted whole.
"""
import ast
import importlib.util
import os
import subprocess
import sys
import time

import pytest

from syncfree_lint import engine
from syncfree_lint.config import Config

pytestmark = pytest.mark.slow

TORCH_EVERY = 4


def _package_dirs(name):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{name} is not installed")
    return list(spec.submodule_search_locations)


def _py_files(dirs):
    out = []
    for top in dirs:
        for folder, subdirs, files in os.walk(top):
            subdirs.sort()
            out.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))
    return sorted(out)


def _compile_rejects(path):
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def _check_run(files):
    started = time.perf_counter()
    result = engine.run(files, Config())
    seconds = time.perf_counter() - started
    internal = [d.format() for d in result.diagnostics if d.code == "SFL001"]
    unreadable = [d for d in result.diagnostics if d.code == "SFL000"]
    unexplained = [
        d.format() for d in unreadable
        if not (_compile_rejects(d.path) or "nested too deeply" in d.message)
    ]
    findings = sum(1 for d in result.diagnostics if not d.code.startswith("SFL0"))
    print(
        f"\n[crash corpus] files={result.files} lines={result.lines} parsed={result.parsed} "
        f"seconds={seconds:.1f} findings={findings} SFL000={len(unreadable)} SFL001={len(internal)}"
    )
    for d in unreadable:
        print("  ", d.format())
    assert result.files == len(files)
    assert not internal, "internal errors:\n" + "\n".join(internal)
    assert not unexplained, "SFL000 on files Python compiles:\n" + "\n".join(unexplained)
    return result


def test_torch_sample_never_crashes():
    files = _py_files(_package_dirs("torch"))[::TORCH_EVERY]
    print(f"\n[crash corpus] torch: every {TORCH_EVERY}th file of the installed package ({len(files)} files)")
    _check_run(files)


def test_torchmetrics_whole_never_crashes():
    _check_run(_py_files(_package_dirs("torchmetrics")))


def test_cli_exit_status_on_torchmetrics():
    tree = _package_dirs("torchmetrics")[0]
    proc = subprocess.run(
        [sys.executable, "-m", "syncfree_lint", tree],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert "SFL001" not in proc.stdout
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert (proc.returncode == 1) == bool(lines), (proc.returncode, lines[:5])
