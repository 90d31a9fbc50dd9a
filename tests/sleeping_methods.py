"""Test plugin: a method that takes a while, so that two runs on one store overlap in time.

Imported with ``--plugin sleeping_methods`` (``tests/`` on ``PYTHONPATH``). The seconds per cell
come from the environment variable ``SYNTHBENCH_SLEEP`` (default 0.3).
"""

from __future__ import annotations

import os
import time

from synthbench.methods import register_method


@register_method("sleepy", description="test: random scores after sleeping SYNTHBENCH_SLEEP seconds", default=False)
def sleepy(data, models, rng):
    time.sleep(float(os.environ.get("SYNTHBENCH_SLEEP", "0.3")))
    return rng.random(data.n_features)
