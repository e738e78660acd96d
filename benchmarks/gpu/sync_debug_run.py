"""Run programs on CUDA under the GPU's own sync detector and write which lines synced (CUDA only).

    python benchmarks/gpu/sync_debug_run.py --out syncs.json PROGRAM...

Each PROGRAM runs in its own process with ``torch.cuda.set_sync_debug_mode("warn")``: every
operation that makes the host wait for the GPU (a blocking copy, ``.item()``, ``nonzero``, masked
indexing...) warns, and each warning is charged to the innermost frame of the stack in a file under
``fixtures/`` or ``benchmarks/`` (the program or a helper it imports).  Optimizer steps are counted
with torch's global step hook, so a line's syncs can be read per step.

A program with ``def main(device)`` and ``STEPS`` (``fixtures/fix_programs/``) is called with the
CUDA device, and its printed lines and result are kept to compare a fixed copy with the original;
any other program runs as ``__main__`` from its own folder.  This is independent of
``syncfree.guard``: the guard's CUDA back end is built on the same mode, and this file checks the
linter against the detector itself, not against our reading of it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import runpy
import subprocess
import sys
import traceback
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_OWN = (str(ROOT / "fixtures"), str(ROOT / "benchmarks"), str(ROOT / ".gpuwork"))


def describe(value):
    """A JSON-able description: values, and tensors' dtype/shape/requires_grad (device left out)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": value.detach().cpu().tolist(), "dtype": str(value.dtype), "shape": list(value.shape),
                "requires_grad": value.requires_grad}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [describe(item) for item in value]}
    if isinstance(value, dict):
        return {"dict": [[describe(k), describe(v)] for k, v in value.items()]}
    return {type(value).__name__: repr(value)}


def _charged_frame(here: str) -> tuple[str, int] | None:
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename.startswith(_OWN) and frame.filename != here:
            return frame.filename, frame.lineno or 0
    return None


def run_one(path: Path, device_name: str = "cuda") -> dict:
    """Run PATH in this process under sync debug mode; what synced, per line and in which step."""
    import torch

    steps = [0]
    syncs: Counter = Counter()
    first_step: dict = {}
    here = str(Path(__file__).resolve())

    def show(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message):
            return
        where = _charged_frame(here)
        key = f"{where[0]}:{where[1]}" if where else "(outside the program)"
        syncs[key] += 1
        first_step.setdefault(key, steps[0])

    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(lambda *a, **k: steps.__setitem__(0, steps[0] + 1))
    warnings.simplefilter("always")
    warnings.showwarning = show
    printed = io.StringIO()
    text = path.read_text(encoding="utf-8")
    result = None
    has_main = "\ndef main(device" in text and "\nSTEPS" in text
    device = torch.device(device_name)
    on_cuda = device.type == "cuda"
    if on_cuda:
        torch.cuda.set_sync_debug_mode("warn")
    try:
        with contextlib.redirect_stdout(printed):
            if has_main:
                spec = importlib.util.spec_from_file_location("program", path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                result = describe(module.main(device))
            else:
                os.chdir(path.parent)
                sys.path.insert(0, str(path.parent))
                sys.argv = [str(path)]
                runpy.run_path(str(path), run_name="__main__")
        error = None
    except BaseException as exc:  # noqa: BLE001 - a program's failure is reported, the others still run
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if on_cuda:
            torch.cuda.set_sync_debug_mode("default")
    return {"program": str(path), "steps": steps[0], "syncs": dict(syncs), "first_step": first_step,
            "printed": printed.getvalue().splitlines(), "result": result, "error": error}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="write the JSON list here")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cuda", help="cuda (cpu only to try the plumbing: nothing warns)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per program (120)")
    parser.add_argument("--jobs", type=int, default=4, help="programs run at once (4)")
    parser.add_argument("programs", nargs="+")
    args = parser.parse_args(argv)
    if args.one:
        Path(args.out).write_text(json.dumps(run_one(Path(args.programs[0]).resolve(), args.device)), encoding="utf-8")
        return 0

    def run(index_program):
        index, program = index_program
        one = Path(args.out).with_suffix(f".{index}.json")
        cmd = [sys.executable, __file__, "--one", "--device", args.device, "--out", str(one), program]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            row = json.loads(one.read_text(encoding="utf-8")) if one.exists() else {
                "program": program, "error": f"exit {done.returncode}: {done.stderr[-1500:]}"}
        except subprocess.TimeoutExpired:
            row = {"program": program, "error": f"timed out after {args.timeout} s"}
        one.unlink(missing_ok=True)
        print(f"{program}: steps {row.get('steps')} sync lines {len(row.get('syncs') or {})} "
              f"error {row.get('error')}", flush=True)
        return row

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, enumerate(args.programs)))
    Path(args.out).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
