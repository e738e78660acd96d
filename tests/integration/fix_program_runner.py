"""Run one fix-program fixture on the stand-in device and print what it did, as JSON.

``python fix_program_runner.py PROGRAM`` imports PROGRAM, calls ``main(device)`` on the sync
guard's stand-in accelerator under ``no_host_sync(mode="record")`` and prints one JSON object:
its printed lines, its result described exactly (types, values, tensors' dtype, device, shape,
requires_grad) and the host syncs recorded at lines of PROGRAM.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys

import torch

from syncfree import guard


def describe(value):
    """A JSON-able description that tells apart everything the fix must keep."""
    if isinstance(value, torch.Tensor):
        return {"tensor": value.detach().tolist(), "dtype": str(value.dtype), "device": str(value.device),
                "shape": list(value.shape), "requires_grad": value.requires_grad}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [describe(item) for item in value]}
    if isinstance(value, dict):
        return {"dict": [[describe(k), describe(v)] for k, v in value.items()]}
    return {type(value).__name__: repr(value)}


def main(path: str) -> None:
    spec = importlib.util.spec_from_file_location("program", path)
    assert spec is not None and spec.loader is not None
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    printed = io.StringIO()
    with guard.stand_in() as device:
        with guard.no_host_sync(mode="record") as recorder, contextlib.redirect_stdout(printed):
            result = program.main(device)
        described = describe(result)
    syncs = [[event.lineno, event.kind] for event in recorder.events if event.filename == path]
    print(json.dumps({"printed": printed.getvalue().splitlines(), "result": described, "syncs": syncs,
                      "steps": program.STEPS}))


if __name__ == "__main__":
    main(sys.argv[1])
