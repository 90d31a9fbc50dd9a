"""Seconds to train the benchmark MLP on CPU for several feature counts.

Usage: ``python benchmarks/bench_training.py [--n 833] [--p 100 1000 2048] [--seeds 3] [--threads 1] [--epochs E]``

Data: the ``xor`` generator with decoys up to ``p`` columns, ``n`` training rows (833 = 5/6 of
1000, one fold of the benchmark's 6-fold protocol). Prints seconds per model, epochs run and
milliseconds per epoch; the default :class:`~synthbench.models.mlp.MLPConfig` is used, or with
``--epochs E`` exactly ``E`` epochs (no early stopping) to time a long training run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from synthbench import datasets
from synthbench.models.mlp import MLPConfig, train_mlp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=833)
    parser.add_argument("--p", type=int, nargs="+", default=[100, 1000, 2048])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="num_threads for train_mlp (0: leave torch's)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=0, help="train exactly this many epochs (0: early stopping)")
    args = parser.parse_args()
    threads = args.threads or None
    config = MLPConfig.from_dict(dict(max_epochs=args.epochs, patience=args.epochs + 1)) if args.epochs else MLPConfig()
    print(f"torch {torch.__version__}, torch threads {torch.get_num_threads()}, train num_threads={threads}")
    # Warm-up: the first training in a process pays ~1 s of one-off torch initialisation.
    warm = datasets.make("xor", n_samples=64, n_decoys=0, seed=0)
    train_mlp(
        warm.X, warm.y, config=MLPConfig.from_dict(dict(max_epochs=2)), seed=0, device=args.device, num_threads=threads
    )
    for p in args.p:
        ds = datasets.make("xor", n_samples=args.n, n_decoys=p - 2, seed=0)
        times, epochs = [], []
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            model = train_mlp(ds.X, ds.y, config=config, seed=seed, device=args.device, num_threads=threads)
            times.append(time.perf_counter() - t0)
            epochs.append(model.epochs_run)
        ms_epoch = 1000 * sum(times) / sum(epochs)
        print(
            f"p={p:5d} n={args.n}: {np.mean(times):6.2f} s/model (min {min(times):.2f}, max {max(times):.2f}), "
            f"epochs {epochs}, {ms_epoch:.1f} ms/epoch"
        )


if __name__ == "__main__":
    main()
