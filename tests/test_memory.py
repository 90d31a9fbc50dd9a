"""Peak memory of a cell from the kernel's counters: it sees real allocations and costs nothing to time."""

import numpy as np
import pytest

from synthbench.runner import memory
from synthbench.runner.memory import PeakMemory

linux = pytest.mark.skipif(not memory._CLEAR_REFS.exists(), reason="needs Linux /proc/self/clear_refs")


_MEASURE = """
import numpy as np, torch
from synthbench.runner.memory import PeakMemory
with PeakMemory() as peak:
    a = np.ones(40 * 2**20 // 8)  # 40 MiB, touched
    del a
with PeakMemory() as again:  # the peak is reset per measurement: a small cell is small
    b = torch.ones(80 * 2**20 // 4)  # 80 MiB through torch's allocator, which tracemalloc never saw
    del b
with PeakMemory() as small:
    sum(range(1000))
print(peak.bytes, again.bytes, small.bytes)
"""


@linux
def test_a_numpy_and_a_torch_allocation_are_seen_after_they_are_freed():
    # In a fresh process: in a long test session freed heap pages of earlier tests are reused, and
    # the resident size need not grow (which is what a cell in a fresh worker never sees).
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _MEASURE], capture_output=True, text=True, check=True).stdout
    peak, again, small = map(int, out.split())
    assert 38 * 2**20 <= peak <= 60 * 2**20
    assert 76 * 2**20 <= again <= 110 * 2**20
    assert small < 8 * 2**20


def test_where_the_peak_cannot_be_reset_it_is_unknown_not_zero(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "_CLEAR_REFS", tmp_path / "missing" / "clear_refs")
    with PeakMemory() as peak:
        np.ones(2**20)
    assert peak.bytes is None
