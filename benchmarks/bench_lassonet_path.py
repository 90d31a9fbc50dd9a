"""LassoNet's path for a setting's folds as one computation, against the lassonet package fold by fold.

Issue 46's first lever: ``lassonet_2023`` (the 2023 benchmark's LassoNet: 2 x 32 units, batches of 64, lambda from
3.2768 times 1.02 until no feature is left) cost 48 s a fold at m = 2 and 229 s at m = 2048 of the faithful suite's
~100 to 360 s. For the folds of one setting of the ``passemiers2023`` suite this script times, in one process on
one torch thread (the method's setting):

- :func:`~synthbench.methods.lassonet_path.lassonet_paths` on every fold at once (the way a run computes them);
- the package's ``LassoNetClassifier.path`` on ``--reference`` of the folds, one after the other, each checked to
  give the same ``feature_importances_`` to the bit (the path's promise).

Prints the seconds per fold of each and their ratio. Usage::

    python benchmarks/bench_lassonet_path.py --dataset ring --features 2 [--folds 6] [--reference 2]
    python benchmarks/bench_lassonet_path.py --dataset xor --features 64 --lambda-start 20
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from timing import timed

from synthbench import datasets
from synthbench.methods import get_method
from synthbench.methods.embedded import lassonet_seed
from synthbench.methods.lassonet_path import LassoNetPath, lassonet_paths, package_importances
from synthbench.protocol import setting_folds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ring")
    parser.add_argument("--features", type=int, default=2, help="m, the total number of features")
    parser.add_argument("--folds", type=int, default=6)
    parser.add_argument("--reference", type=int, default=2, help="folds the package computes (0: none)")
    parser.add_argument("--lambda-start", type=float, help="a later start shortens both paths alike")
    args = parser.parse_args()
    torch.set_num_threads(1)
    k = datasets.make(args.dataset, n_samples=60, n_decoys=0, seed=0).k
    folds = setting_folds(args.dataset, n_samples=1000, seed=0, n_folds=args.folds, n_decoys=args.features - k)
    params = get_method("lassonet_2023").params
    cfg = LassoNetPath(
        hidden_dims=params["hidden_dims"],
        lambda_start=args.lambda_start or params["lambda_start"],
        batch_size=params["batch_size"],
        n_iters=params["n_iters"],
        patience=(params["patience"], params["patience"]),
        tol=params["tol"],
    )
    seeds = [lassonet_seed(f.rng("method", "lassonet_2023")) for f in folds]
    got, together = timed(lassonet_paths, [f.X_train for f in folds], [f.y_train for f in folds], seeds, cfg)
    print(f"{args.dataset}, m = {args.features}, lambda from {cfg.lambda_start}, one torch thread")
    print(f"batched: {args.folds} folds as one computation   {together:8.1f} s   {together / args.folds:7.1f} s a fold")
    if args.reference:
        alone = 0.0
        for i, f in enumerate(folds[: args.reference]):
            want, seconds = timed(package_importances, f.X_train, f.y_train, seeds[i], cfg)
            alone += seconds
            same = np.array_equal(want, got[i])
            print(f"package, fold {f.fold}: {seconds:7.1f} s   importances equal to the bit: {same}")
        per_fold = alone / args.reference
        print(f"package: {per_fold:7.1f} s a fold; batched {per_fold / (together / args.folds):.2f} times as fast")


if __name__ == "__main__":
    main()
