"""Interrupting a large ``--fix`` run never leaves a half-written file or a temporary file.

300 generated training scripts, each with several fixable findings (the accumulator pattern
``running += loss.item()``, whose fix is unsafe, and a torchmetrics ``MeanMetric``, whose fix is
safe), some of them with modes 0o600 / 0o755. The fully fixed version of every file comes from an
uninterrupted run on a separate copy. Then ``syncfree-lint --fix --unsafe-fixes --no-cache -j 1``
is started on a fresh copy and sent SIGINT (then, in a second run, SIGTERM) once a few files
have been rewritten. Afterwards: the process has ended (no hang); no ``*.tmp`` is left anywhere;
every file is byte-identical to its original or to its fully fixed version; every file compiles;
modes are kept.
"""
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow  # about 40 s: a 300-file reference fix run, then two interrupted runs

N_FILES = 300
LOOPS_PER_FILE = 4
CHANGED_BEFORE_SIGNAL = 5

TEMPLATE_HEAD = '''"""generated training script {i}"""
import torch
from torchmetrics import MeanMetric

device = "cuda"
model = torch.nn.Linear(4, 1).to(device)
'''
TEMPLATE_LOOP = '''

def train_{i}_{k}(loader):
    mean_loss_{k} = MeanMetric().to(device)
    for epoch in range({k} + 1):
        running_{i}_{k} = 0.0
        correct_{k} = 0
        for step, (x, y) in enumerate(loader):
            loss = model(x.to(device)).mean()
            loss.backward()
            running_{i}_{k} += loss.item()
            correct_{k} += (y == 1).sum().item()
            mean_loss_{k}.update(loss)
        print(epoch, running_{i}_{k} / (step + 1), correct_{k}, mean_loss_{k}.compute())
'''


def _source(i):
    return TEMPLATE_HEAD.format(i=i) + "".join(TEMPLATE_LOOP.format(i=i, k=k) for k in range(LOOPS_PER_FILE))


def _mode(i):
    return (0o644, 0o600, 0o755)[i % 3]


def _write_tree(folder):
    folder.mkdir()
    for i in range(N_FILES):
        sub = folder / f"pkg{i % 7}"
        sub.mkdir(exist_ok=True)
        path = sub / f"train_{i:03d}.py"
        path.write_text(_source(i))
        os.chmod(path, _mode(i))
    return folder


def _files(folder):
    out = {}
    for top, _, names in os.walk(str(folder)):
        for name in names:
            path = os.path.join(top, name)
            out[os.path.relpath(path, str(folder))] = path
    return out


def _read_all(folder):
    result = {}
    for rel, path in _files(folder).items():
        with open(path, "rb") as handle:
            result[rel] = handle.read()
    return result


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cmd(folder):
    return [sys.executable, "-m", "syncfree_lint", "--fix", "--unsafe-fixes", "--no-cache", "--show-fixes", "-j", "1", str(folder)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(original bytes, fully fixed bytes) per relative path, from an uninterrupted run."""
    base = tmp_path_factory.mktemp("fix_interrupt")
    originals = _read_all(_write_tree(base / "original"))
    ref = _write_tree(base / "reference")
    started = time.perf_counter()
    proc = subprocess.run(_cmd(ref), capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-3000:])
    fixed = _read_all(ref)
    fixes = sum(1 for line in proc.stdout.splitlines() if line.startswith("  ") and ": SFL" in line)
    changed = sum(1 for rel in originals if fixed[rel] != originals[rel])
    print(f"\n[fix interrupt] reference run: files={N_FILES} changed={changed} fixes={fixes} seconds={seconds:.1f}")
    assert set(fixed) == set(originals)
    assert changed == N_FILES, "every generated file should get fixes"
    for rel, data in fixed.items():
        compile(data, rel, "exec", dont_inherit=True)
    again = subprocess.run(_cmd(ref), capture_output=True, text=True, timeout=300)
    assert _read_all(ref) == fixed, "the reference fix is not stable under a second --fix"
    assert "Fixed" not in again.stdout
    return base, originals, fixed


def _interrupted_run(folder, signum):
    mtimes = {rel: os.stat(path).st_mtime_ns for rel, path in _files(folder).items()}
    paths = _files(folder)
    # the linter starts with Ctrl-C's default action, as from a terminal: a test run started in the
    # background of a non-interactive shell inherits SIGINT ignored, which would hide the handling
    proc = subprocess.Popen(_cmd(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    started = time.perf_counter()
    changed_at_signal = None
    try:
        while proc.poll() is None and time.perf_counter() - started < 120:
            changed = 0
            for rel, path in paths.items():
                try:
                    if os.stat(path).st_mtime_ns != mtimes[rel]:
                        changed += 1
                except FileNotFoundError:  # between temp write and rename there is always a file
                    changed += 1
            if changed >= CHANGED_BEFORE_SIGNAL:
                changed_at_signal = changed
                proc.send_signal(signum)
                break
            time.sleep(0.002)
        signalled = time.perf_counter()
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"syncfree-lint --fix did not end within 60 s of {signal.Signals(signum).name}")
        waited = time.perf_counter() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, changed_at_signal, waited, out, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_fix_leaves_whole_files(reference, signum):
    base, originals, fixed = reference
    folder = _write_tree(base / f"run_{signal.Signals(signum).name}")
    rc, changed_at_signal, waited, out, err = _interrupted_run(folder, signum)
    after = _files(folder)
    leftovers = sorted(rel for rel in after if rel.endswith(".tmp") or os.path.basename(rel).startswith(".syncfree-"))
    assert not leftovers, f"temporary files left after {signal.Signals(signum).name}: {leftovers}"
    assert set(after) == set(originals), sorted(set(after) ^ set(originals))
    n_original = n_fixed = 0
    half = []
    for rel, path in after.items():
        with open(path, "rb") as handle:
            data = handle.read()
        if data == originals[rel]:
            n_original += 1
        elif data == fixed[rel]:
            n_fixed += 1
        else:
            half.append(rel)
        compile(data, rel, "exec", dont_inherit=True)
        i = int(rel[-6:-3])
        assert stat.S_IMODE(os.stat(path).st_mode) == _mode(i), f"mode of {rel} changed"
    print(
        f"\n[fix interrupt] {signal.Signals(signum).name}: signalled after {changed_at_signal} files changed, "
        f"exit={rc}, ended {waited:.2f}s after the signal; files fixed={n_fixed} original={n_original} other={len(half)}"
    )
    assert not half, f"files neither original nor fully fixed: {half[:10]}"
    assert changed_at_signal is not None, "the run ended before the signal could be sent (make the files bigger)"
    assert n_original > 0, "the signal came too late to interrupt anything"
    assert rc != 0, (rc, err[-2000:])


def test_sigint_during_fix_exits_130_without_traceback(reference):
    base, _, _ = reference
    folder = _write_tree(base / "run_SIGINT_exit_status")
    rc, changed_at_signal, _, _, err = _interrupted_run(folder, signal.SIGINT)
    assert changed_at_signal is not None
    assert "Traceback" not in err, err[-2000:]
    assert rc == 130, (rc, err[-2000:])
