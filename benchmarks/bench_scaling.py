"""Seconds and peak memory per cell against the number of features, with each method's growth exponent.

One cell per (method, p): fold 0 of ``ring_xor`` (4 relevant features + ``p - 4`` decoys), n = 1000,
6 folds, run by the benchmark's own cell runner in a fresh subprocess (so the peak resident memory
is the cell's own, models included) under a wall-clock limit, after a tiny warm-up cell of the
same method (imports and first-call costs are paid once per worker in a real run). Seconds are the runner's accounting:
the method plus the training of every model it needs. A method that runs past the limit, or
declares a feature limit below ``p``, is not tried at larger ``p``.

The growth exponent is the least-squares slope of log(seconds) against log(p) over the sizes
from 1,000 up (where fixed costs no longer dominate).

Usage::

    python benchmarks/bench_scaling.py [--p 100 1000 10000 100000] [--methods rf,mi,...] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

import numpy as np

_CHILD = r"""
import json, resource, sys
from synthbench.runner.cells import run_task
from synthbench.runner.grid import Cell, FoldTask
from synthbench.models import TrainSettings
method, p, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
settings = TrainSettings(n_jobs=threads, device="cpu")
list(run_task(FoldTask((Cell("ring_xor", 60, 0, 1, 2, 0, method),)), settings=settings))  # warm-up: imports, kernels
cell = Cell("ring_xor", n, p - 4, 0, 6, 0, method)
(result,) = run_task(FoldTask((cell,)), settings=settings)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"status": result.status, "seconds": result.seconds, "rss": rss, "message": result.message}))
"""


def run_cell(method: str, p: int, n: int, threads: int, timeout: float) -> dict:
    """One cell in a subprocess; ``status`` is ``ok``, ``failed``, ``skipped`` or ``timeout``."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, method, str(p), str(n), str(threads)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": time.perf_counter() - start, "rss": None, "message": f">{timeout:.0f}s"}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"status": "crashed", "seconds": None, "rss": None, "message": f"exit {proc.returncode}: {tail}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def growth_exponent(ps: list[int], seconds: list[float]) -> float:
    """Slope of log(seconds) on log(p) over the points with p >= 1000 (NaN with fewer than two)."""
    pts = [(math.log(p), math.log(s)) for p, s in zip(ps, seconds) if p >= 1000 and s and s > 0]
    if len(pts) < 2:
        return float("nan")
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def main(argv: list[str] | None = None) -> int:
    from synthbench.methods import get_method, method_names

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--p", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--methods", default="all", help="comma-separated names or 'all'")
    parser.add_argument("--timeout", type=float, default=900.0, help="wall-clock limit per cell, seconds")
    parser.add_argument("--threads", type=int, default=1, help="threads a cell may use (1: as one --jobs worker)")
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args(argv)
    methods = method_names() if args.methods == "all" else args.methods.split(",")

    rows = []
    for method in methods:
        limit = get_method(method).max_features
        stopped = None
        for p in sorted(args.p):
            if stopped is not None:
                rows.append((method, p, {"status": "not run", "message": stopped}))
                continue
            if limit is not None and p > limit:
                stopped = f"declared limit {limit}"
                rows.append((method, p, {"status": "skipped", "message": stopped}))
                continue
            r = run_cell(method, p, args.n, args.threads, args.timeout)
            rows.append((method, p, r))
            secs = "" if r["seconds"] is None else f"{r['seconds']:9.2f}s"
            rss = "" if r["rss"] is None else f"{r['rss'] / 2**30:6.2f} GiB"
            print(f"{method:<28} p={p:<7} {r['status']:<8} {secs} {rss} {r.get('message') or ''}", flush=True)
            if r["status"] != "ok":
                stopped = f"{r['status']} at p={p}"

    sizes = sorted(args.p)
    print(
        f"\nseconds per cell (n={args.n}, {args.threads} thread(s)); peak RSS at the largest size run; "
        "exponent: slope of log s on log p for p >= 1000"
    )
    print(f"{'method':<28}" + "".join(f"{p:>11}" for p in sizes) + f"{'peak GiB':>10}{'exponent':>10}")
    for method in methods:
        mine = {p: r for m, p, r in rows if m == method}
        cells = []
        for p in sizes:
            r = mine[p]
            cells.append(f"{r['seconds']:11.2f}" if r["status"] == "ok" else f"{r['status']:>11}")
        ok = [(p, mine[p]) for p in sizes if mine[p]["status"] == "ok"]
        rss = f"{ok[-1][1]['rss'] / 2**30:10.2f}" if ok else f"{'':>10}"
        exp = growth_exponent([p for p, _ in ok], [r["seconds"] for _, r in ok])
        print(f"{method:<28}" + "".join(cells) + rss + (f"{exp:10.2f}" if exp == exp else f"{'':>10}"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"method": m, "p": p, **r} for m, p, r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
