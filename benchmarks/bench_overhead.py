"""Harness overhead: the share of a run's wall time not spent in methods or model training.

Runs a grid in this process (``--jobs 1``, so idle workers at the end of a parallel run do not
count as overhead) into a fresh temporary store, then splits the wall time ``W`` into

* useful work ``U``: every cell's method (and scoring) time plus every model's training,
  counted once per model (a cell's stored ``seconds`` include the training of the models it
  needs as if it ran alone; the duplicates are taken out), and
* overhead ``W - U``: data generation, column permutation, the database, scheduling, the
  model cache, package-version lookups.

Usage::

    python benchmarks/bench_overhead.py [--datasets ring,xor] [--decoys 100,1000] [--methods default]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from default_run import breakdown

from synthbench.methods import default_methods, method_names
from synthbench.models import TrainSettings
from synthbench.runner.execute import execute
from synthbench.runner.grid import GridSpec
from synthbench.runner.store import ResultStore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="ring,xor")
    parser.add_argument("--decoys", default="100,1000")
    parser.add_argument("--methods", default="default")
    parser.add_argument("--n-samples", type=int, default=1000)
    parser.add_argument("--folds", type=int, default=6)
    args = parser.parse_args(argv)
    methods = {"default": default_methods(), "all": method_names()}.get(args.methods) or args.methods.split(",")
    grid = GridSpec(
        tuple(args.datasets.split(",")),
        tuple(methods),
        tuple(int(d) for d in args.decoys.split(",")),
        args.n_samples,
        args.folds,
    )
    cells = grid.cells()
    with tempfile.TemporaryDirectory() as tmp, ResultStore(Path(tmp) / "overhead.sqlite") as store:
        t0 = time.perf_counter()
        summary = execute(cells, store, settings=TrainSettings(device="cpu"))
        wall = time.perf_counter() - t0
        stored = store.cells()
    parts = breakdown(stored[stored.status == "ok"])
    method_s = sum(parts["methods"].values())
    train_s = sum(parts["training"].values()) + parts["ceiling"]["all"]  # the ceilings are trainings too
    overhead = wall - method_s - train_s
    print(
        f"{len(cells)} cells ({summary.failed} failed) in {wall:.1f}s: methods {method_s:.1f}s, "
        f"model training {train_s:.1f}s, harness overhead {overhead:.1f}s = {100 * overhead / wall:.1f} % of the run"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
