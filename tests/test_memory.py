"""Peak memory of a cell from the kernel's counters: it sees real allocations and costs nothing to time."""

import numpy as np
import pytest
import torch

from synthbench.runner import memory
from synthbench.runner.memory import PeakMemory

linux = pytest.mark.skipif(not memory._CLEAR_REFS.exists(), reason="needs Linux /proc/self/clear_refs")


@linux
def test_a_numpy_and_a_torch_allocation_are_seen_after_they_are_freed():
    with PeakMemory() as peak:
        a = np.ones(40 * 2**20 // 8)  # 40 MiB, touched
        del a
    assert 38 * 2**20 <= peak.bytes <= 60 * 2**20
    with PeakMemory() as again:  # the peak is reset per measurement: a small cell is small
        b = torch.ones(80 * 2**20 // 4)  # 80 MiB through torch's allocator, which tracemalloc never saw
        del b
    assert 76 * 2**20 <= again.bytes <= 110 * 2**20
    with PeakMemory() as small:
        sum(range(1000))
    assert small.bytes < 8 * 2**20


def test_where_the_peak_cannot_be_reset_it_is_unknown_not_zero(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "_CLEAR_REFS", tmp_path / "missing" / "clear_refs")
    with PeakMemory() as peak:
        np.ones(2**20)
    assert peak.bytes is None
