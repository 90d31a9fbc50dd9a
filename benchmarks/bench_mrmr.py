"""Time synthbench's vectorised mRMR against the reference implementation (pymrmr).

Data: ``n`` samples of ``p`` features drawn U(0, 1), centred to ``[-1, 1]`` (``2u - 1``) and
discretised with :func:`synthbench.selection.mrmr.discretise` (``round(20 x)``); the label is a
ring on the first two columns, ``0.25 < x0^2 + x1^2 < 0.64``. Both implementations select
``k`` features with the MIQ scheme; the script checks that the selections are identical and
prints the seconds taken by each and their ratio.

Usage::

    python benchmarks/bench_mrmr.py --n 1000 --p 1000 10000 --k 10 --seed 0

pymrmr's run time grows roughly as ``p**2`` (about half a minute at ``p = 1000`` and tens of
minutes at ``p = 10000``, n = 1000).
"""

from __future__ import annotations

import argparse
import importlib

import numpy as np
from timing import timed

mrmr_module = importlib.import_module("synthbench.selection.mrmr")


def make_data(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Discretised centred U(0, 1) features and a ring label on the first two columns.

    Parameters
    ----------
    n, p : int
        Samples and features (``p >= 2``).
    seed : int

    Returns
    -------
    X_discrete : ndarray of int64, shape (n, p)
    y : ndarray of int64, shape (n,)
    """
    rng = np.random.default_rng(seed)
    X = 2.0 * rng.uniform(0.0, 1.0, size=(n, p)) - 1.0
    r2 = X[:, 0] ** 2 + X[:, 1] ** 2
    y = ((r2 > 0.25) & (r2 < 0.64)).astype(np.int64)
    return mrmr_module.discretise(X, scale=20.0), y


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 when every selection matches, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--p", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--scheme", choices=mrmr_module.SCHEMES, default="MIQ")
    parser.add_argument("--repeats", type=int, default=3, help="runs of synthbench's mrmr (best is reported)")
    args = parser.parse_args(argv)

    rows = []
    all_same = True
    for p in args.p:
        X, y = make_data(args.n, p, args.seed)
        ours, t_ours = timed(mrmr_module.mrmr, X, y, args.k, scheme=args.scheme)  # warm-up included
        for _ in range(max(0, args.repeats - 1)):
            again, t = timed(mrmr_module.mrmr, X, y, args.k, scheme=args.scheme)
            assert again == ours
            t_ours = min(t_ours, t)
        ref, t_ref = timed(mrmr_module.pymrmr_select, X, y, args.k, scheme=args.scheme)
        same = ours == ref
        all_same &= same
        rows.append((args.n, p, args.k, t_ours, t_ref, t_ref / t_ours, same))
        print(f"n={args.n} p={p}: synthbench {ours}  pymrmr {ref}", flush=True)

    print()
    print(f"{'n':>6} {'p':>7} {'k':>4} {'synthbench s':>13} {'pymrmr s':>10} {'ratio':>9}  identical")
    for n, p, k, t_ours, t_ref, ratio, same in rows:
        print(f"{n:>6} {p:>7} {k:>4} {t_ours:>13.3f} {t_ref:>10.2f} {ratio:>8.0f}x  {same}")
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
