"""A remove-and-retrain cell against one training of its model: the retrainings as one batch, and one by one.

Goal 1 of issue 45: a ROAR or KAR cell at 5 fractions x 5 repeats costs at most 2.5 times one training
of its model (the screened network on xor with 100 decoys; the CNN on shapes, n = 300). For one fold
this script times, in one process on one torch thread (the runner's setting for networks):

- one training of the fold's shared model (replicate 0): the reference;
- the cell: :class:`~synthbench.scoring.removal.retrain.RetrainScorer` scoring the ``saliency`` method's
  ranking, its clean replicates and its fractions x repeats retrained as one batch (the way a run scores it);
- with ``--one-by-one``, the same retrainings trained one after the other (each its own batch of one),
  checked to give the same test accuracies (on the CPU, the same networks to the bit for the MLP).

Beside each time it prints the arithmetic it stands for: the sum, over every network the one loop trained, of
its epochs x training rows x trainable weights (a CNN's operations per row are a fixed multiple of that for one
architecture). On a device that runs the members' arithmetic one after another, as one CPU thread does, the cell
cannot cost less than its arithmetic's ratio times the compute of one training; batching saves the per-step
overhead the members share, not their products.

Prints each time and the ratios. Usage::

    python benchmarks/bench_batched_retrain.py --model screened_mlp --dataset xor --decoys 100
    python benchmarks/bench_batched_retrain.py --model cnn --dataset shapes --n-samples 300 --one-by-one
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from synthbench import datasets
from synthbench.datasets.base import default_decoys
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels, TrainSettings, loop
from synthbench.models.presets import get_preset
from synthbench.protocol import FoldData, dataset_folds
from synthbench.scoring.removal.retrain import RetrainScorer


class Arithmetic:
    """Counts the arithmetic of every network :func:`~synthbench.models.loop.fit_networks` trains while it is
    installed (the one loop's entry; the trainers call it through the module): epochs x training rows x weights."""

    def __init__(self) -> None:
        self.total = 0.0
        self._real = loop.fit_networks

    def __enter__(self) -> Arithmetic:
        def counted(members, **kwargs):
            results = self._real(members, **kwargs)
            for member, result in zip(members, results, strict=True):
                if result.failure is None:
                    weights = sum(p.numel() for p in result.module.parameters() if p.requires_grad)
                    rows = len(member.y) - len(result.validation_indices)
                    self.total += result.epochs_run * rows * weights
            return results

        loop.fit_networks = counted
        return self

    def __exit__(self, *exc: object) -> None:
        loop.fit_networks = self._real


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="screened_mlp", help="the preset explained (an MLP preset or cnn)")
    p.add_argument("--dataset", default="xor")
    p.add_argument("--decoys", type=int, default=None)
    p.add_argument("--n-samples", type=int, default=1000)
    p.add_argument("--fold", type=int, default=0)
    p.add_argument("--scorer", default="roar", choices=("roar", "kar"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--fractions", default="0.1,0.3,0.5,0.7,0.9")
    p.add_argument("--method", default="saliency")
    p.add_argument("--one-by-one", action="store_true", help="also train the same retrainings one after the other")
    args = p.parse_args()
    torch.set_num_threads(1)
    spec_ds = datasets.spec(args.dataset)
    params = {}
    if spec_ds.decoys:
        params["n_decoys"] = default_decoys(args.dataset) if args.decoys is None else args.decoys
    ds = datasets.make(args.dataset, n_samples=args.n_samples, seed=0, **params)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=6, seed=0)[args.fold])
    kind = get_preset(args.model).kind
    scorer = RetrainScorer(
        name=args.scorer,
        keep=args.scorer == "kar",
        fractions=tuple(float(t) for t in args.fractions.split(",")),
        repeats=args.repeats,
    )
    print(
        f"{args.dataset} {params} n={args.n_samples} fold {args.fold}, {args.model} ({kind}), {args.scorer} "
        f"{scorer.fractions} x {scorer.repeats} repeats, method {args.method}, torch threads 1"
    )
    models = SharedModels(data, TrainSettings(), preset=args.model)
    with Arithmetic() as reference:
        t0 = time.perf_counter()
        models.get(kind)
        one = time.perf_counter() - t0
    print(
        f"one training of the model: {one:.1f} s (competence {models.info[kind].get('competence')}), "
        f"arithmetic {reference.total:.3g}"
    )
    spec = get_method(args.method)
    output = run_method(spec, data, models)
    with Arithmetic() as arithmetic:
        t0 = time.perf_counter()
        scores = scorer.score(output, data, spec, models)
        cell = time.perf_counter() - t0
    print(f"the cell, retrainings as one batch: {cell:.1f} s = {cell / one:.2f} x one training (goal <= 2.5)")
    print(
        f"the cell's arithmetic: {arithmetic.total:.3g} = {arithmetic.total / reference.total:.1f} x one training's "
        "(the floor of the time ratio where the members' products run one after another)"
    )
    if not args.one_by_one:
        return
    fresh = SharedModels(data, TrainSettings(), preset=args.model)
    fresh.get(kind)
    batch_get, batch_train = fresh.get_many, fresh.train_many_on

    def get_one_at_a_time(name, replicates):
        return [model for r in replicates for model in batch_get(name, [r])]

    def train_one_at_a_time(name, requests, training=None):
        return [model for r in requests for model in batch_train(name, [r], training)]

    fresh.get_many = get_one_at_a_time  # type: ignore[method-assign]
    fresh.train_many_on = train_one_at_a_time  # type: ignore[method-assign]
    t0 = time.perf_counter()
    alone = scorer.score(output, data, spec, fresh)
    sequential = time.perf_counter() - t0
    same = all(
        np.array_equal(a.values, b.values) for a, b in zip(scores.curves.values(), alone.curves.values(), strict=True)
    )
    print(
        f"the cell, retrainings one by one: {sequential:.1f} s = {sequential / one:.2f} x one training; "
        f"batched / one by one = {cell / sequential:.2f}; same accuracies: {same}"
    )
    print(f"accuracy per fraction (rows) and repeat: {scores.curves[args.scorer].values.round(3).tolist()}")


if __name__ == "__main__":
    main()
