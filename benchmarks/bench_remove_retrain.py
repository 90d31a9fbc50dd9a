"""Wall time of the removal scorers (ROAR, KAR, ROAD) on a whole grid, as the command line runs it.

Runs every cell of the grid ``--dataset`` × the default methods that accept it × the scorers
``--scorers`` (``--repeats`` retrainings, ``--fractions``), all folds (or only ``--fold``, then
projected to all by multiplying the wall time by the number of folds), with ``--jobs`` local
worker processes of one torch thread each (the command line's default engine; ``--jobs 1`` runs
in this process), into ``--store`` (default: a temporary one), with an empty model cache. Prints
the grid's wall time and, per scorer, the seconds the scorer itself took (the retrainings; the
method seconds and the fold's shared models are counted apart).

Usage::

    python benchmarks/bench_remove_retrain.py --dataset digits --repeats 3 --scorers roar,kar
    python benchmarks/bench_remove_retrain.py --dataset digits --scorers road
    python benchmarks/bench_remove_retrain.py --dataset ring_xor --decoys 100 --repeats 3 --scorers roar
    python benchmarks/bench_remove_retrain.py --dataset xor --decoys 100 --model screened_mlp --fold 0 --jobs 1 \
        --repeats 1 --fractions 0.2,0.5,0.8 --scorers roar,kar
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from synthbench import datasets
from synthbench.datasets.base import default_decoys
from synthbench.methods import default_methods
from synthbench.models import TrainSettings
from synthbench.runner.execute import execute
from synthbench.runner.executors import ProcessExecutor, SerialExecutor
from synthbench.runner.grid import GridSpec
from synthbench.runner.store import ResultStore


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="digits")
    p.add_argument("--decoys", type=int, default=None, help="decoy count (datasets that take decoys)")
    p.add_argument("--n-samples", type=int, default=1000)
    p.add_argument("--folds", type=int, default=6)
    p.add_argument("--fold", type=int, default=None, help="measure this fold only and project to all folds")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--fractions", default="0.1,0.3,0.5,0.7,0.9")
    p.add_argument("--scorers", default="roar,kar,road")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--model", default=None, help="the network preset the methods explain (default: the grid's)")
    p.add_argument("--store", type=Path, default=None, help="keep the results in this store (default: temporary)")
    args = p.parse_args()
    fractions = tuple(float(t) for t in args.fractions.split(","))
    decoys = () if args.decoys is None else (args.decoys,)
    if datasets.spec(args.dataset).decoys and not decoys:
        decoys = (default_decoys(args.dataset),)
    scorers = tuple(args.scorers.split(","))
    options = {"fractions": fractions, **({"repeats": args.repeats} if {"roar", "kar"} & set(scorers) else {})}
    grid = GridSpec(
        (args.dataset,),
        tuple(default_methods()),
        decoys,
        args.n_samples,
        args.folds,
        scorers=scorers,
        skip_inapplicable=True,
        scorer_options=options,
        **({"models": (args.model,)} if args.model else {}),
    )
    cells = [c for c in grid.cells() if args.fold is None or c.fold == args.fold]
    methods = sorted({c.method for c in cells})
    print(
        f"{args.dataset} n={args.n_samples} decoys={decoys or '-'}: "
        f"{'all folds' if args.fold is None else f'fold {args.fold}'} of {args.folds}, {len(methods)} methods, "
        f"scorers {', '.join(scorers)}, {dict(options)}, {args.jobs} jobs"
    )
    executor = SerialExecutor() if args.jobs == 1 else ProcessExecutor(args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        store_path = args.store or Path(tmp) / "bench.sqlite"
        with ResultStore(store_path) as store:
            start = time.perf_counter()
            summary = execute(
                cells, store, executor=executor, settings=TrainSettings(cache_dir=str(Path(tmp) / "cache"))
            )
            wall = time.perf_counter() - start
            table = store.cells(c.cell_id for c in cells)
    print(
        f"{summary.ok} cells ok, {summary.failed} failed, {summary.skipped} already stored; "
        f"wall time {wall:.1f} s ({wall / 60:.1f} min)"
    )
    for scorer, g in table.groupby("scorer", sort=False):
        print(
            f"  {scorer:6s} scorer seconds: {g['scorer_seconds'].sum():8.1f} in all, "
            f"{g['scorer_seconds'].mean():6.2f} per cell"
        )
    method_seconds = table.drop_duplicates(["method", "fold"])["seconds"].sum()
    print(f"  methods (each once per fold, with the models they need): {method_seconds:.1f} s")
    if args.fold is not None:
        print(f"projected grid of {args.folds} folds on this machine: {wall * args.folds / 60:.1f} min")


if __name__ == "__main__":
    main()
