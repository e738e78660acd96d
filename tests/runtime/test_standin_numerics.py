"""The stand-in divides a device tensor by a host number the way CUDA does (a multiplication by the
rounded reciprocal), so CPU CI sees the last-bit differences a GPU shows (guard/standin_numerics.py)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from syncfree import guard  # noqa: E402

SUMS = [0.1 * k + 0.0137 * k * k for k in range(1, 400)]


def _python_quotients(count: int):
    return [s / count for s in SUMS]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_division_by_a_host_number_multiplies_by_the_reciprocal(dtype):
    with guard.stand_in() as device:
        sums = torch.tensor(SUMS, dtype=dtype, device=device)
        divided = sums / 7
        in_place = sums.clone()
        in_place /= 7
        by_host_tensor = sums / torch.tensor(7)
    reciprocal = torch.ones((), dtype=dtype) / torch.tensor(7.0, dtype=dtype)
    expected = torch.tensor(SUMS, dtype=dtype) * reciprocal
    assert torch.equal(divided, expected) and torch.equal(in_place, expected) and torch.equal(by_host_tensor, expected)
    cpu = torch.tensor(SUMS, dtype=dtype) / 7
    assert not torch.equal(divided, cpu), "some quotients differ in the last bit, as on CUDA"


def test_other_divisions_are_the_cpu_s():
    with guard.stand_in() as device:
        sums = torch.tensor(SUMS, dtype=torch.float64, device=device)
        by_device = sums / torch.full_like(sums, 7.0)          # a tensor on the device: divided
        ints = torch.arange(1, 50, device=device) / 7             # ints promote to float: not the same dtype
        floor = torch.div(sums, 7, rounding_mode="floor")
    host = torch.tensor(SUMS, dtype=torch.float64) / 7            # outside the stand-in: the CPU's
    assert by_device.tolist() == _python_quotients(7) == host.tolist()
    assert ints.tolist() == (torch.arange(1, 50) / 7).tolist()
    assert floor.tolist() == torch.div(torch.tensor(SUMS, dtype=torch.float64), 7, rounding_mode="floor").tolist()
