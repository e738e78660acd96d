"""Issue 23: a per-rank checkpoint of another world size is refused (loading it alone would drop or
double-count other ranks' states); a list of every rank's file, or a merged one, loads."""

import os

import pytest
import torch
from test_distributed import _launch, _ok

import syncfree


def _coll():
    return syncfree.MetricCollection({"sum": syncfree.SumMetric(), "acc": syncfree.MulticlassAccuracy(3)})


def _save(rank, world, directory):
    c = _coll()
    c["sum"].update(torch.tensor([float(rank + 1)]))
    c["acc"].update(torch.tensor([rank % 3]), torch.tensor([rank % 3]))
    torch.save(c.state_dict(), os.path.join(directory, f"rank{rank}.pt"))
    s = syncfree.SumMetric()
    s.update(torch.tensor(float(rank + 1)))
    torch.save(s.state_dict(), os.path.join(directory, f"sum{rank}.pt"))


def _load_own_file(rank, world, directory):
    errors = {}
    for kind, make in (("rank", _coll), ("sum", syncfree.SumMetric)):
        sd = torch.load(os.path.join(directory, f"{kind}{rank}.pt"), weights_only=True)
        try:
            make().load_state_dict(sd)
            errors[kind] = None
        except ValueError as exc:
            errors[kind] = str(exc)
    return errors


def _load_merged(rank, world, directory):
    old = [torch.load(os.path.join(directory, f"sum{r}.pt"), weights_only=True) for r in range(3)]
    a = syncfree.SumMetric()
    a.load_state_dict(syncfree.merge_state_dicts(old))
    b = syncfree.SumMetric()
    b.load_state_dict(old)
    return {"merged": a.compute().item(), "list": b.compute().item()}


def test_own_rank_file_of_another_world_size_is_refused(tmp_path):
    _ok(_launch(_save, 3, directory=str(tmp_path)))
    for r in _ok(_launch(_load_own_file, 2, directory=str(tmp_path))).values():
        for kind in ("rank", "sum"):
            assert r[kind] is not None, "a 3-rank file loaded silently on 2 ranks"
            assert "3 ranks" in r[kind] and "2 ranks" in r[kind]
            assert "merge_state_dicts" in r[kind] and "every rank" in r[kind]
    for r in _ok(_launch(_load_merged, 2, directory=str(tmp_path))).values():
        assert r == {"merged": 6.0, "list": 6.0}  # 1 + 2 + 3 once, not once per rank


def test_same_world_size_loads_its_own_file():
    s = syncfree.SumMetric()
    s.update(torch.tensor(4.0))
    t = syncfree.SumMetric()
    t.load_state_dict(s.state_dict())
    assert t.compute().item() == 4.0


def test_one_rank_file_of_a_multi_rank_run_is_refused_in_one_process():
    s = syncfree.SumMetric()
    s.update(torch.tensor(4.0))
    sd = {**s.state_dict(), "_rank": 1, "_world_size": 3}
    t = syncfree.SumMetric()
    with pytest.raises(ValueError, match="3 ranks"):
        t.load_state_dict(sd)
    assert t.compute().item() == 0.0  # untouched
    t.load_state_dict([{**sd, "_rank": r} for r in range(3)])
    assert t.compute().item() == 12.0
