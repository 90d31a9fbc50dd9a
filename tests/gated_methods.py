"""Test plugin: a method that blocks from its N-th call on, so that a run can be killed at a known point.

Imported with ``--plugin gated_methods`` (``tests/`` on ``PYTHONPATH``; worker processes import it
too). Without the environment variable ``SYNTHBENCH_GATE_AFTER`` the method ``gate`` returns random
scores at once. With it, each call takes the next number 0, 1, 2, ... (an exclusively created file
``call-<i>`` in the folder ``SYNTHBENCH_GATE_DIR``, so worker processes share the count); calls
numbered ``SYNTHBENCH_GATE_AFTER`` or more write ``blocked-<i>`` (holding their process id) and
wait until a file ``release`` appears there, their parent process is gone, or five minutes pass.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from synthbench.methods import register_method


def _take_number(folder: Path) -> int:
    i = 0
    while True:
        try:
            os.close(os.open(folder / f"call-{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return i
        except FileExistsError:
            i += 1


@register_method("gate", description="test: random scores; blocks from call SYNTHBENCH_GATE_AFTER on", default=False)
def gate(data, models, rng):
    after = os.environ.get("SYNTHBENCH_GATE_AFTER")
    if after is not None:
        folder = Path(os.environ["SYNTHBENCH_GATE_DIR"])
        i = _take_number(folder)
        if i >= int(after):
            parent = os.getppid()
            (folder / f".blocked-{i}").write_text(str(os.getpid()))
            os.replace(folder / f".blocked-{i}", folder / f"blocked-{i}")  # appears with its content
            deadline = time.monotonic() + 300
            while not (folder / "release").exists() and os.getppid() == parent and time.monotonic() < deadline:
                time.sleep(0.05)
    return rng.random(data.n_features)
