"""The 2023 selectors that train networks, a setting's folds as one batch against each fold alone.

Issue 46: after LassoNet, the faithful suite's costliest methods are the paper's FSNet (2000 epochs), DeepPINK, the
concrete autoencoder and the CancelOuts, each a small network trained fold by fold. Each is now a
:class:`~synthbench.models.stacked.StackedNetwork`: the loop computes a step of every fold of the setting as one
forward and backward pass. For the folds of one setting of the ``passemiers2023`` suite this script runs each method
as a run does (every fold's task asks; the first computes the setting's folds as one batch, the others read their
part), then each fold alone (one member, the same code), on one torch thread, checks that every fold's output is
the same to the bit, and prints the seconds per fold of each and their ratio. Usage::

    python benchmarks/bench_selectors_2023.py --dataset ring --features 2 [--folds 6]
        [--methods fsnet_2023 deeppink_2023 concrete_autoencoder_2023]
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
import torch
from timing import timed

from synthbench import datasets
from synthbench.methods import get_method
from synthbench.methods.registry import method_rng
from synthbench.models import SharedModels, Siblings, TrainSettings
from synthbench.protocol import setting_folds

METHODS = [
    "fsnet_2023",
    "deeppink_2023",
    "concrete_autoencoder_2023",
    "cancelout_sigmoid_2023",
    "cancelout_softmax_2023",
]


def _arrays(out: object) -> list[np.ndarray]:
    scores = getattr(out, "scores", None)
    return [np.asarray(out)] if scores is None else [scores, out.scores_2k]  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ring")
    parser.add_argument("--features", type=int, default=2, help="m, the total number of features")
    parser.add_argument("--folds", type=int, default=6)
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    k = datasets.make(args.dataset, n_samples=60, n_decoys=0, seed=0).k

    def folds():
        return setting_folds(args.dataset, n_samples=1000, seed=0, n_folds=args.folds, n_decoys=args.features - k)

    print(f"{args.dataset}, m = {args.features}, {args.folds} folds, one torch thread")
    print(f"{'method':28s} {'batched s/fold':>15s} {'alone s/fold':>13s} {'ratio':>6s}")
    for name in args.methods:
        spec = get_method(name)
        with tempfile.TemporaryDirectory() as cache:
            settings = TrainSettings(cache_dir=cache)
            siblings = Siblings(f"{args.dataset}/{args.features}", folds)
            sharing = [SharedModels(f, settings, siblings=siblings) for f in folds()]

            def batched(sharing=sharing, spec=spec):
                return [spec.fn(m._data, m, method_rng(spec, m._data), **spec.params) for m in sharing]

            together, t_batched = timed(batched)

        def alone(spec=spec):
            return [spec.fn(f, SharedModels(f), method_rng(spec, f), **spec.params) for f in folds()]

        single, t_alone = timed(alone)
        for a, b in zip(together, single, strict=True):
            for x, y in zip(_arrays(a), _arrays(b), strict=True):
                np.testing.assert_array_equal(x, y)
        n = args.folds
        print(f"{name:28s} {t_batched / n:15.2f} {t_alone / n:13.2f} {t_alone / t_batched:5.1f}x")
    print("every fold's output the same batched and alone, to the bit")


if __name__ == "__main__":
    main()
