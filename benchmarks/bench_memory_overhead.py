"""Does measuring a cell's peak memory change its seconds? Per-cell seconds with and without it.

Usage: ``python benchmarks/bench_memory_overhead.py [--p 32 1000] [--methods rf mi mrmr relief saliency] [--repeats 3]``

For each method and feature count (``xor``, n = 1000, fold 0 of the benchmark's protocol) the cell
(the method, and the training of the model it needs, as a cell with a fresh fold does) runs ``--repeats`` times in
each of three
ways, interleaved so that machine noise hits all three alike:

- ``plain``: nothing measured;
- ``peak``: inside :class:`synthbench.runner.memory.PeakMemory`, what every cell runs under now
  (the kernel's peak-RSS counter reset and read, two file operations);
- ``tracemalloc``: inside ``tracemalloc.start()/stop()``, what cells ran under before (the reference).

Prints the median seconds of each and the ratios ``peak/plain`` (goal: 1.00 within noise) and
``tracemalloc/plain``, plus each way's memory figure.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, make_folds
from synthbench.runner.memory import PeakMemory


def _plain(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0, None


def _peak(fn):
    with PeakMemory() as peak:
        t0 = time.perf_counter()
        fn()
        seconds = time.perf_counter() - t0
    return seconds, peak.bytes


def _traced(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        fn()
    finally:
        seconds = time.perf_counter() - t0
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return seconds, top


WAYS = {"plain": _plain, "peak": _peak, "tracemalloc": _traced}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, nargs="+", default=[32, 1000])
    parser.add_argument("--methods", nargs="+", default=["rf", "mi", "mrmr", "relief", "saliency"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'method':<12}{'p':>6}{'plain s':>10}{'peak s':>10}{'traced s':>10}{'peak/plain':>12}{'traced/plain':>14}"
        f"{'peak MB':>10}{'traced MB':>11}"
    )
    for p in args.p:
        ds = datasets.make("xor", n_samples=1000, n_decoys=p - 2, seed=0)
        data = FoldData.from_dataset(ds, make_folds(ds.n_samples, ds.n_features, n_folds=6, seed=0)[0])
        for name in args.methods:
            spec = get_method(name)
            times = {w: [] for w in WAYS}
            memory = {w: None for w in WAYS}
            for _ in range(args.repeats):
                for way, measure in WAYS.items():
                    seconds, mem = measure(lambda: run_method(spec, data, SharedModels(data)))
                    times[way].append(seconds)
                    memory[way] = mem
            med = {w: statistics.median(t) for w, t in times.items()}
            mb = {w: "-" if memory[w] is None else f"{memory[w] / 2**20:.1f}" for w in WAYS}
            print(
                f"{name:<12}{p:>6}{med['plain']:>10.3f}{med['peak']:>10.3f}{med['tracemalloc']:>10.3f}"
                f"{med['peak'] / med['plain']:>12.2f}{med['tracemalloc'] / med['plain']:>14.2f}"
                f"{mb['peak']:>10}{mb['tracemalloc']:>11}",
                flush=True,
            )


if __name__ == "__main__":
    main()
