"""Test plugin: a method that takes a while, so that two runs on one store overlap in time.

Imported with ``--plugin sleeping_methods`` (``tests/`` on ``PYTHONPATH``). The seconds per cell
come from the environment variable ``SYNTHBENCH_SLEEP`` (default 0.3). Where
``SYNTHBENCH_WAIT_FOR_RUNS`` is ``<store path>:<count>``, every cell first waits (two minutes at most)
until that many runs are registered in the store, so no run can finish the grid before the others
have started: the runs overlap by construction, whatever the machine's load.
"""

from __future__ import annotations

import os
import sqlite3
import time

from synthbench.methods import register_method


def _wait_for_runs(spec: str, timeout: float = 120.0) -> None:
    path, count = spec.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while True:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        finally:
            con.close()
        if runs >= int(count):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{runs} of {count} runs registered in {path} after {timeout:.0f} s")
        time.sleep(0.05)


@register_method("sleepy", description="test: random scores after sleeping SYNTHBENCH_SLEEP seconds", default=False)
def sleepy(data, models, rng):
    if os.environ.get("SYNTHBENCH_WAIT_FOR_RUNS"):
        _wait_for_runs(os.environ["SYNTHBENCH_WAIT_FOR_RUNS"])
    time.sleep(float(os.environ.get("SYNTHBENCH_SLEEP", "0.3")))
    return rng.random(data.n_features)
