"""Seconds and peak memory of one cell as the number of samples grows (the sample-size axis).

Usage: ``python benchmarks/bench_sample_size.py [--n 1000 10000 50000] [--p 2048] [--dataset ring_xor_sum]
[--methods rf saliency] [--model passemiers2023]``

For each n, fold 0 of the benchmark's protocol (6 folds, so 5/6 of the rows train the models and
1/6 are explained) is run as the runner runs it (:func:`synthbench.runner.cells.run_task`): the
data are generated, then each method's cell trains the model it needs (the 500-tree forest, the
MLP of ``--model``) and scores the truth. Printed per cell: wall seconds (the model's training
included), peak resident memory above the process's size at the cell's start, the model's held-out
AUROC and best_k; and the process's peak resident memory over the whole run.
"""

from __future__ import annotations

import argparse
import resource
import time

from synthbench import datasets
from synthbench.methods import get_method
from synthbench.runner.cells import run_task
from synthbench.runner.grid import Cell, FoldTask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--p", type=int, default=2048, help="total feature count")
    parser.add_argument("--dataset", default="ring_xor_sum")
    parser.add_argument("--methods", nargs="+", default=["rf", "saliency"])
    parser.add_argument("--model", default="passemiers2023")
    args = parser.parse_args()
    k = datasets.make(args.dataset, n_samples=8, n_decoys=0, seed=0).n_features
    print(f"{args.dataset}, p = {args.p}, fold 0 of 6; MLP preset {args.model}")
    print(f"{'n':>7} {'method':<12}{'seconds':>9}{'peak MB':>9}{'model AUROC':>13}{'best_k':>8}")
    for n in args.n:
        cells = [
            Cell(args.dataset, n, args.p - k, 0, 6, 0, m, model=args.model if get_method(m).uses_preset else None)
            for m in args.methods
        ]
        t0 = time.perf_counter()
        for cell in cells:  # one task per cell: each trains its own model, timed with it
            (result,) = run_task(FoldTask((cell,)))
            auroc = next(iter((result.model or {}).values()), {}).get("test_auroc", float("nan"))
            peak = "-" if result.peak_memory_bytes is None else f"{result.peak_memory_bytes / 2**20:.0f}"
            print(
                f"{n:>7} {cell.method:<12}{result.seconds:>9.1f}{peak:>9}{auroc:>13.3f}"
                f"{result.scores.get('best_k', float('nan')):>8.2f}  {result.status} {result.message or ''}",
                flush=True,
            )
        print(f"{n:>7} (all cells, data generated once per cell) {time.perf_counter() - t0:.1f} s")
    print(f"process peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GB")


if __name__ == "__main__":
    main()
