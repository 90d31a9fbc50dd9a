"""Time synthbench's vectorised ReliefF against skrebate's ReliefF.

Data: ``n`` samples of ``p`` features drawn U(-1, 1) as float32 (the benchmark's decoys); the
label is an XOR of the signs of the first two columns. Both implementations score every
feature with ``n_neighbors`` neighbours (skrebate on ``X.astype(float64)``, ``n_jobs=1``); the
script checks that the scores agree to ``1e-9`` (relative and absolute) and prints the seconds
taken by each and their ratio.

Usage::

    python benchmarks/bench_relief.py --n 1000 --p 100 1000 --k 100 --seed 0

skrebate's run time grows roughly as ``n * p`` Python-level calls (about 15 s at ``p = 1000``
and three minutes at ``p = 2048``, n = 833); synthbench's is dominated by the ``n^2 p / 2``
distance sums and the ``2 k n p`` neighbour differences, both in compiled code.
"""

from __future__ import annotations

import argparse
import importlib

import numpy as np
from timing import timed

relief_module = importlib.import_module("synthbench.selection.relief")


def make_data(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """U(-1, 1) float32 features and an XOR label on the first two columns (``p >= 2``).

    Returns
    -------
    X : ndarray of float32, shape (n, p)
    y : ndarray of int64, shape (n,)
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, p)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    return X, y


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 when every score vector matches skrebate's, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--p", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--k", type=int, default=100, help="n_neighbors")
    parser.add_argument("--repeats", type=int, default=3, help="runs of synthbench's relieff (best is reported)")
    args = parser.parse_args(argv)

    rows = []
    all_same = True
    for p in args.p:
        X, y = make_data(args.n, p, args.seed)
        ours, t_ours = timed(relief_module.relieff, X, y, n_neighbors=args.k)  # warm-up included
        for _ in range(max(0, args.repeats - 1)):
            again, t = timed(relief_module.relieff, X, y, n_neighbors=args.k)
            assert np.array_equal(again, ours)
            t_ours = min(t_ours, t)
        ref, t_ref = timed(relief_module.skrebate_relieff, X, y, n_neighbors=args.k)
        err = float(np.max(np.abs(ours - ref)))
        same = bool(np.allclose(ours, ref, rtol=1e-9, atol=1e-9))
        all_same &= same
        rows.append((args.n, p, args.k, t_ours, t_ref, t_ref / t_ours, err, same))
        top = np.argsort(ours)[::-1][:3].tolist()
        print(f"n={args.n} p={p}: top features {top}, max |ours - skrebate| = {err:.1e}", flush=True)

    print()
    print(f"{'n':>6} {'p':>7} {'k':>4} {'synthbench s':>13} {'skrebate s':>11} {'ratio':>8}  equal")
    for n, p, k, t_ours, t_ref, ratio, err, same in rows:
        print(f"{n:>6} {p:>7} {k:>4} {t_ours:>13.3f} {t_ref:>11.2f} {ratio:>7.0f}x  {same}")
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
