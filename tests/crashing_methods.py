"""Test plugin: methods whose worker process dies, to exercise executor retries.

Imported by the tests and, through ``plugins=("crashing_methods",)``, by every worker. The
marker folder comes from the environment variable ``SYNTHBENCH_CRASH_DIR``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np

from synthbench.methods import register_method


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@register_method("crash_once", description="test: SIGKILLs its worker the first time it runs in a run", default=False)
def crash_once(data, models, rng):
    marker = Path(os.environ["SYNTHBENCH_CRASH_DIR"]) / "crashed"
    try:
        marker.touch(exist_ok=False)
    except FileExistsError:
        return rng.random(data.n_features)
    _die()


@register_method("crash_always", description="test: SIGKILLs its worker every time", default=False)
def crash_always(data, models, rng):
    with open(Path(os.environ["SYNTHBENCH_CRASH_DIR"]) / "attempts", "a") as f:
        f.write("x")
    _die()
    return np.zeros(data.n_features)
