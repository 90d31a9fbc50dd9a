"""Seconds of the removal scorers (ROAR, KAR, ROAD) on one fold of a grid, and the whole grid projected.

Runs every cell of fold ``--fold`` of the grid ``--dataset`` × the default methods that accept
it × the scorers ``roar,kar,road`` (``--repeats`` retrainings, ``--fractions``) in this process
(torch uses every core), into a temporary store, then prints per scorer the seconds the scorer
itself took (the retrainings; the shared models are the fold's and counted once, apart), the
method seconds, and the fold's wall time. The projection multiplies the fold's wall time by the
number of folds (folds cost alike: same sizes, same methods).

Usage::

    python benchmarks/bench_remove_retrain.py --dataset digits --repeats 3
    python benchmarks/bench_remove_retrain.py --dataset ring_xor --decoys 100 --repeats 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from synthbench import datasets
from synthbench.datasets.base import default_decoys
from synthbench.methods import default_methods
from synthbench.models import TrainSettings
from synthbench.runner.execute import execute
from synthbench.runner.grid import GridSpec
from synthbench.runner.store import ResultStore


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="digits")
    p.add_argument("--decoys", type=int, default=None, help="decoy count (datasets that take decoys)")
    p.add_argument("--n-samples", type=int, default=1000)
    p.add_argument("--folds", type=int, default=6)
    p.add_argument("--fold", type=int, default=0, help="the fold measured")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--fractions", default="0.1,0.3,0.5,0.7,0.9")
    p.add_argument("--scorers", default="roar,kar,road")
    args = p.parse_args()
    fractions = tuple(float(t) for t in args.fractions.split(","))
    decoys = () if args.decoys is None else (args.decoys,)
    if datasets.spec(args.dataset).decoys and not decoys:
        decoys = (default_decoys(args.dataset),)
    scorers = tuple(args.scorers.split(","))
    grid = GridSpec((args.dataset,), tuple(default_methods()), decoys, args.n_samples, args.folds,
                    scorers=scorers, skip_inapplicable=True,
                    scorer_options={"repeats": args.repeats, "fractions": fractions})
    cells = [c for c in grid.cells() if c.fold == args.fold]
    methods = sorted({c.method for c in cells})
    print(f"{args.dataset} n={args.n_samples} decoys={decoys or '-'}: fold {args.fold} of {args.folds}, "
          f"{len(methods)} methods, scorers {', '.join(scorers)}, {args.repeats} repeats, fractions {fractions}")
    with tempfile.TemporaryDirectory() as tmp:
        store_path = Path(tmp) / "bench.sqlite"
        with ResultStore(store_path) as store:
            start = time.perf_counter()
            summary = execute(cells, store, settings=TrainSettings(cache_dir=str(Path(tmp) / "cache")))
            wall = time.perf_counter() - start
            table = store.cells()
    print(f"{summary.ok} cells ok, {summary.failed} failed; fold wall time {wall:.1f} s")
    for scorer, g in table.groupby("scorer", sort=False):
        print(f"  {scorer:6s} scorer seconds: {g['scorer_seconds'].sum():8.1f} in all, "
              f"{g['scorer_seconds'].mean():6.2f} per cell")
    method_seconds = table.drop_duplicates("method")["seconds"].sum()
    print(f"  methods (each once, with the models they need): {method_seconds:.1f} s")
    print(f"projected grid of {args.folds} folds on this machine: {wall * args.folds / 60:.1f} min")


if __name__ == "__main__":
    main()
