"""The test suite's wall time as the README runs it beside the same suite in one process (issue 32's goal: 8 min on
2 cores).

Runs ``python -m pytest`` (the README's test command: one pytest-xdist worker per usable core, each pinned
to its core; see ``tests/conftest.py``), then ``python -m pytest -n 0`` (every test in this one process, as
the suite ran before), from the repository root, and prints both wall times, their ratio and the goal.
Each run must pass; ``--only-parallel`` skips the one-process reference.

Usage::

    python benchmarks/suite_time.py [--only-parallel]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from timing import timed

from synthbench.machine import usable_cores

GOAL_SECONDS = 480.0
ROOT = Path(__file__).resolve().parents[1]


def run_pytest(*extra: str) -> None:
    """``python -m pytest -q *extra`` in the repository root; CalledProcessError when a test fails."""
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only-parallel", action="store_true", help="skip the one-process reference run")
    args = parser.parse_args(argv)
    _, parallel = timed(run_pytest)
    print(
        f"python -m pytest ({usable_cores()} pinned workers)   {parallel:7.0f} s   goal {GOAL_SECONDS:.0f} s: "
        f"{'met' if parallel <= GOAL_SECONDS else 'not met'}"
    )
    if not args.only_parallel:
        _, serial = timed(run_pytest, "-n", "0")
        print(f"python -m pytest -n 0 (one process)     {serial:7.0f} s   ratio {serial / parallel:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
