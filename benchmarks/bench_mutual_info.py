"""Time synthbench's vectorised mutual information against scikit-learn's ``mutual_info_classif``.

Data: the default run's tables (``ring_xor`` with each decoy count, ``n`` rows, data seed 0), the
training part of fold 0 of 6. Both compute the k-NN estimate (3 neighbours) of every column with the
same noise seed; the script checks that the results are equal bit for bit and prints the best of
``--repeats`` runs of each and their ratio.

Usage::

    python benchmarks/bench_mutual_info.py [--decoys 100 1000] [--n 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.feature_selection import mutual_info_classif
from timing import best_of

from synthbench import datasets
from synthbench.selection.mutual_info import mutual_info_classif_1d


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every result equals scikit-learn's, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decoys", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'p':>6} {'synthbench s':>13} {'scikit-learn s':>15} {'ratio':>7}  equal")
    all_equal = True
    for decoys in args.decoys:
        ds = datasets.make("ring_xor", n_samples=args.n, seed=0, n_decoys=decoys)
        rows = np.arange(args.n) >= args.n // 6  # the training part of fold 0 of 6 (unshuffled folds)
        X, y = ds.X[rows], ds.y[rows]
        ours, t_ours = best_of(args.repeats, lambda: mutual_info_classif_1d(X, y, random_state=0))
        ref, t_ref = best_of(args.repeats, lambda: mutual_info_classif(X, y, random_state=0))
        equal = bool(np.array_equal(ours, ref))
        all_equal &= equal
        print(f"{X.shape[1]:>6} {t_ours:>13.3f} {t_ref:>15.3f} {t_ref / t_ours:>6.1f}x  {equal}", flush=True)
    return 0 if all_equal else 1


if __name__ == "__main__":
    raise SystemExit(main())
