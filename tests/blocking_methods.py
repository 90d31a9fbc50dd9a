"""Test plugin: a method that blocks mid-run, so that a signal lands while cells are computing.

Imported with ``--plugin blocking_methods`` (``tests/`` on ``PYTHONPATH``). While the environment
variable ``SYNTHBENCH_BLOCK`` names a file, ``blocker`` creates ``<that file>.<its process id>``
(the sign that this worker is inside a cell) and then sleeps for a minute; without it, it returns
random scores at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from synthbench.methods import register_method


@register_method(
    "blocker", description="test: random scores; blocks a minute while SYNTHBENCH_BLOCK names a file", default=False
)
def blocker(data, models, rng):
    flag = os.environ.get("SYNTHBENCH_BLOCK")
    if flag:
        Path(f"{flag}.{os.getpid()}").touch()
        time.sleep(60)
    return rng.random(data.n_features)
