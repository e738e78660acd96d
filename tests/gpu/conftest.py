"""GPU tests: skipped, folder-wide, when CUDA is not available."""

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (torch.cuda.is_available() is False)")
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)
