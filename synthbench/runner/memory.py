"""Peak memory of a cell, measured without slowing it down.

:class:`PeakMemory` reads the kernel's own counters instead of tracing allocations: on Linux it
resets the process's peak resident set size (``VmHWM``, by writing ``5`` to
``/proc/self/clear_refs``) when the cell starts, and reads it when the cell ends. The figure is
the peak *resident* memory of the whole process during the cell (every allocator: NumPy, torch,
scikit-learn's C code, Python objects) minus what was resident when the cell started, in bytes.
It costs two small file operations per cell, whatever the cell allocates; ``tracemalloc``, which
it replaces, hooked every Python allocation and made cells up to 3.5× slower.

What it counts is the *extra* resident memory the cell needed: pages that earlier cells freed but
the allocator kept resident are reused without raising the peak, so a cell that fits in memory an
earlier cell already used reads low (down to 0), and the first cell of a worker reads its full
size. That is the figure that says whether a grid will run out of memory.

Where the peak cannot be reset (not Linux, or ``/proc`` not writable) the kernel only offers the
peak since the process started, which says nothing about a cell that stays below an earlier
cell's peak; the figure is then recorded as unknown (None), never as a misleading number.
"""

from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["PeakMemory"]

log = logging.getLogger(__name__)

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(*keys: str) -> dict[str, int]:
    out = {}
    with _STATUS.open() as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in keys:
                out[key] = int(value.split()[0])
    return out


class PeakMemory:
    """Context manager: ``with PeakMemory() as peak: ...`` then ``peak.bytes`` (int, or None when unknown).

    Not reentrant, and it measures the whole process: two cells running at once in one process
    would see each other's memory (the executors run one cell at a time per process).
    """

    def __init__(self) -> None:
        self.bytes: int | None = None
        self._start_kib: int | None = None

    def __enter__(self) -> PeakMemory:
        try:
            _CLEAR_REFS.write_text("5")
            self._start_kib = _status_kib("VmRSS")["VmRSS"]
        except (OSError, KeyError, ValueError) as exc:
            log.debug("peak memory unavailable here: %s", exc)
            self._start_kib = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._start_kib is None:
            return
        try:
            peak = _status_kib("VmHWM")["VmHWM"]
        except (OSError, KeyError, ValueError):
            return
        self.bytes = max(0, peak - self._start_kib) * 1024
