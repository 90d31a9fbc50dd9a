"""What the benchmark scripts share: timing one call, and the best of several."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    """``fn(*args, **kwargs)`` and its wall seconds (``time.perf_counter``)."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def best_of(repeats: int, fn: Callable[[], T]) -> tuple[T, float]:
    """The last result of ``fn()`` and its fastest wall time over ``repeats`` runs."""
    seconds, out = float("inf"), None
    for _ in range(repeats):
        out, took = timed(fn)
        seconds = min(seconds, took)
    return out, seconds
