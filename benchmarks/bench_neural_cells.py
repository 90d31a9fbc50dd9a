"""Seconds per cell of every neural method (torch, ``accelerated``), at n = 1000 and p = 2048.

One fold of ``ring_xor`` (4 relevant features + 2044 decoys) under the benchmark protocol;
the shared MLP is trained once (its seconds are printed separately; a tiny warm-up fit first
pays torch's first-call costs) and each method is timed on the held-out rows. The embedded
selectors (LassoNet, CancelOut, concrete autoencoder, ...) train their own networks, included
in their seconds. Usage::

    python benchmarks/bench_neural_cells.py [--device cpu|cuda|auto] [--p 2048] [--n 1000]
"""

from __future__ import annotations

import argparse
import time

from synthbench import datasets
from synthbench.methods import get_method, method_names, run_method
from synthbench.models import SharedModels, TrainSettings
from synthbench.protocol import FoldData, make_folds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--p", type=int, default=2048)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ds = datasets.make("ring_xor", n_samples=args.n, n_decoys=args.p - 4, seed=args.seed)
    fold = make_folds(ds.n_samples, ds.n_features, n_folds=6, seed=args.seed)[0]
    data = FoldData.from_dataset(ds, fold)
    warm = datasets.make("ring_xor", n_samples=60, n_decoys=0, seed=args.seed)
    SharedModels(
        FoldData.from_dataset(warm, make_folds(60, 4, n_folds=2, seed=0)[0]), TrainSettings(device=args.device)
    ).get("mlp")
    models = SharedModels(data, TrainSettings(device=args.device))
    t0 = time.perf_counter()
    models.get("mlp")
    print(
        f"n={args.n} p={args.p} device={args.device}: MLP trained in {time.perf_counter() - t0:.2f}s "
        f"(held-out AUROC {models.info['mlp'].get('test_auroc', float('nan')):.3f})"
    )
    train = models.info["mlp"]["train_seconds"]
    print(f"{'method':<28}{'method s':>10}{'cell s':>10}   (cell: the method plus the MLP training it needs)")
    for name in method_names():
        spec = get_method(name)
        if not spec.accelerated:
            continue
        t0 = time.perf_counter()
        run_method(spec, data, models)
        seconds = time.perf_counter() - t0
        cell = seconds + (train if "mlp" in spec.needs_for("tabular") else 0.0)
        print(f"{name:<28}{seconds:>10.3f}{cell:>10.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
