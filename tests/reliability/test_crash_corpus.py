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


# ---- --fix round trip on copies of real trees ------------------------------------------------
# Contract: `--fix --unsafe-fixes` on a real tree exits 0/1 (never 2, never a signal), every file
# it changed still compiles, and a second `--fix --unsafe-fixes` changes nothing (bytes and mtimes).
# torch is sampled more thinly than above: the round trip lints the tree twice.
FIX_TORCH_EVERY = 8
DEV_CORPUS = "/work/corpus"
DEV_CORPUS_TREES = ("pytorch-examples", os.path.join("accelerate", "examples"))


def _copy_files(pairs, dest):
    """Copy (source file, relative path) pairs under ``dest``; returns the copied paths."""
    import shutil

    out = []
    for source, rel in pairs:
        target = os.path.join(str(dest), rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
        out.append(target)
    return out


def _snapshot(folder):
    """{relative path: (bytes, mtime_ns, mode)} of every file under ``folder``."""
    out = {}
    for top, subdirs, files in os.walk(str(folder)):
        subdirs[:] = [d for d in subdirs if d != ".syncfree_cache"]
        for name in files:
            path = os.path.join(top, name)
            st = os.stat(path)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, str(folder))] = (handle.read(), st.st_mtime_ns, st.st_mode)
    return out


def _fix_cli(folder, *extra):
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "syncfree_lint", "--fix", "--unsafe-fixes", "--show-fixes", *extra, str(folder)],
        capture_output=True, text=True, timeout=600,
    )
    seconds = time.perf_counter() - started
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    fixed = 0
    for line in proc.stdout.splitlines():
        if line.startswith("Fixed ") and line.rstrip().endswith(":"):
            fixed = int(line.split()[1])
    return proc, fixed, seconds


def _does_not_compile(data, path):
    try:
        compile(data, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{path}: {type(exc).__name__}: {exc}"
    return None


def _fix_round_trip(folder, label):
    before = _snapshot(folder)
    proc, fixed, seconds = _fix_cli(folder, "--no-cache")
    after = _snapshot(folder)
    assert set(after) == set(before), sorted(set(after) ^ set(before))  # no temp file left, nothing lost
    changed = sorted(rel for rel in before if after[rel][0] != before[rel][0])
    broken = []
    for rel in changed:
        path = os.path.join(str(folder), rel)
        if _does_not_compile(before[rel][0], path) is None:  # it compiled before the fix
            problem = _does_not_compile(after[rel][0], path)
            if problem:
                broken.append(problem)
        assert after[rel][2] == before[rel][2], f"mode of {rel} changed"
    again, fixed_again, seconds_again = _fix_cli(folder, "--no-cache")
    final = _snapshot(folder)
    moved = sorted(rel for rel in after if final.get(rel, (None, None))[:2] != after[rel][:2])
    print(
        f"\n[fix round trip] {label}: files={len(before)} changed={len(changed)} fixes={fixed} "
        f"exit={proc.returncode} seconds={seconds:.1f}; second run: fixes={fixed_again} "
        f"files changed={len(moved)} seconds={seconds_again:.1f}"
    )
    for rel in changed:
        print("   changed:", rel)
    assert not broken, "fixed files no longer compile:\n" + "\n".join(broken)
    assert not moved and fixed_again == 0, (
        f"second --fix changed {moved} ({fixed_again} fixes):\n"
        + "\n".join(line for line in again.stdout.splitlines() if line.startswith("  "))
    )


def test_fix_round_trip_on_torch_sample_and_torchmetrics(tmp_path):
    pairs = []
    for name, every in (("torch", FIX_TORCH_EVERY), ("torchmetrics", 1)):
        top = _package_dirs(name)[0]
        pairs += [(f, os.path.join(name, os.path.relpath(f, top))) for f in _py_files([top])[::every]]
    _copy_files(pairs, tmp_path)
    _fix_round_trip(tmp_path, f"torch every {FIX_TORCH_EVERY}th file + torchmetrics")


def test_fix_round_trip_on_dev_corpus(tmp_path):
    import shutil

    if not os.path.isdir(DEV_CORPUS):
        pytest.skip(f"{DEV_CORPUS} (the dev corpus) is not present on this machine")
    trees = [t for t in DEV_CORPUS_TREES if os.path.isdir(os.path.join(DEV_CORPUS, t))]
    if not trees:
        pytest.skip(f"none of {DEV_CORPUS_TREES} under {DEV_CORPUS}")
    for tree in trees:
        shutil.copytree(os.path.join(DEV_CORPUS, tree), os.path.join(str(tmp_path), tree), symlinks=True)
    _fix_round_trip(tmp_path, "dev corpus: " + " + ".join(trees))
