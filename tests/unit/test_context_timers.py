"""A timer object called to name a region and used as a context manager (``with timer("fwd"):``, its
``__call__`` returning itself) runs its class's ``__enter__`` and ``__exit__`` around the region."""
from __future__ import annotations

from project_lint import lint_files

_TIMER = """
    import time
    import torch

    class RegionTimer:
        def __init__(self):
            self.totals = {}

        def __call__(self, name):
            self.name = name
            return self

        def __enter__(self):
            self.t0 = time.perf_counter()
            return self

        def __exit__(self, *exc):
            torch.cuda.synchronize()
            self.totals[self.name] = time.perf_counter() - self.t0
"""

_TRAIN = """
    import torch
    from timing import RegionTimer

    def train(model, loader, opt):
        timer = RegionTimer()
        for x in loader:
            {region}
                loss = model(x.cuda()).mean()
                loss.backward()
            opt.step()
"""


def test_a_called_timer_region_runs_exit_per_step(tmp_path) -> None:
    found = lint_files(tmp_path, {"timing.py": _TIMER, "train.py": _TRAIN.format(region='with timer("fwd_bwd"):')})
    assert found == [("timing.py", 18, "SFL108")]


def test_a_region_of_another_context_manager_runs_no_exit(tmp_path) -> None:
    found = lint_files(tmp_path, {"timing.py": _TIMER, "train.py": _TRAIN.format(region="with torch.no_grad():")})
    assert found == []
