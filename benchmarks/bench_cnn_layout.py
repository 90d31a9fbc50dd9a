"""The CNN's training in its channels-last layout against the same training in the contiguous layout.

The CNN (:func:`~synthbench.models.cnn.build_cnn`) is built with its convolution weights channels-last, the layout
torch's CPU convolution and pooling kernels run fastest in. For each seed this script trains the default CNN on one
fold's worth of ``shapes`` images (4 classes, 4 distractor glyphs) by the one loop, once as shipped and once with
the same initial weights moved to the contiguous layout (the reference), on one torch thread (the runner's setting),
and prints seconds, epochs, milliseconds per epoch, the ratio, and the test accuracy of each (the two layouts round
differently, so the weights differ in their last bits and the epochs may differ). Usage::

    python benchmarks/bench_cnn_layout.py [--n-samples 300] [--seeds 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from synthbench import datasets
from synthbench.models.cnn import CNNConfig, build_cnn
from synthbench.models.loop import MemberData, fit_classifiers


def _train(X: np.ndarray, y: np.ndarray, seed: int, layout: torch.memory_format) -> tuple[float, object]:
    config = CNNConfig()
    t0 = time.perf_counter()
    (result,), _, _ = fit_classifiers(
        lambda gen, k: build_cnn(X.shape[1:], k, config, generator=gen).to(memory_format=layout),
        [MemberData(X, y, seed)],
        config=config.train,
        device="cpu",
        n_classes=4,
        num_threads=1,
        input_ndim=4,
    )
    return time.perf_counter() - t0, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-samples", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    ds = datasets.make("shapes", n_samples=args.n_samples, n_classes=4, n_decoys=4, seed=0)
    cut = len(ds.y) * 2 // 3
    X, y, X_test, y_test = ds.X[:cut], ds.y[:cut], ds.X[cut:], ds.y[cut:]
    _train(X[:64], y[:64], 0, torch.channels_last)  # warm-up: one-off torch initialisation
    print(f"shapes n={args.n_samples} ({cut} training images {X.shape[1:]}), default CNN, torch threads 1")
    totals = {}
    for name, layout in (
        ("channels-last (shipped)", torch.channels_last),
        ("contiguous (reference)", torch.contiguous_format),
    ):
        seconds, epochs = [], []
        for seed in range(args.seeds):
            s, result = _train(X, y, seed, layout)
            module = result.module.eval()
            with torch.no_grad():
                accuracy = float((module(torch.from_numpy(X_test)).argmax(1).numpy() == y_test).mean())
            seconds.append(s)
            epochs.append(result.epochs_run)
            print(f"  {name:24} seed {seed}: {s:6.2f} s, {result.epochs_run:3d} epochs, test accuracy {accuracy:.3f}")
        totals[name] = 1000 * sum(seconds) / sum(epochs)
        print(f"{name:26} {np.mean(seconds):6.2f} s/model, {totals[name]:.1f} ms/epoch")
    shipped, reference = totals.values()
    print(f"per epoch, the contiguous layout takes {reference / shipped:.2f} times as long as channels-last")


if __name__ == "__main__":
    main()
