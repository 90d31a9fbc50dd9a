"""Time a full top-down MPRT check with synthbench's scorer and with Quantus' ``MPRT`` on the same model.

One cell: ``--dataset`` (default ``xor`` with 100 decoys and 1000 samples; ``shapes`` runs the image
CNN), fold ``--fold`` of ``--folds``, the default preset of the method's model kind, one method
(``--method``, default ``gradient``). The fold's model is trained first and not timed. Then, on that
model and the fold's explained rows:

* synthbench: the registered ``randomisation`` scorer (top-down cascading, every declared layer)
  computing what Quantus computes, the ``|a|`` Spearman correlation per state (``measures=spearman_abs``;
  the ratio is of this run), and again with every measure of its default (signed Spearman and top-k
  intersection too; SSIM and HOG on images);
* Quantus 0.6: ``MPRT(layer_order="top_down", similarity_func=correlation_spearman, abs=True,
  normalise=True)`` with an ``explain_func`` that runs the method's attribution recipe on the
  (randomised) torch module Quantus passes in, ``batch_size`` ``--batch-size``.

Both explain the trained model twice (Quantus: the reference and its "original" step; synthbench:
the reference and x = 0) and then every model state once. Their states are not the same models:
synthbench re-draws the layers its model kind declares from their own initialisers, Quantus
calls ``reset_parameters()`` on every module that has one (normalisation layers included), so the
number of states can differ; the printed similarities at the fully randomised model are from
different re-draws. Times are the best of ``--repeats`` runs, in this process, on ``--device``.

Usage::

    python benchmarks/randomisation_vs_quantus.py
    python benchmarks/randomisation_vs_quantus.py --method integrated_gradients --repeats 3
    python benchmarks/randomisation_vs_quantus.py --dataset shapes
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from timing import best_of, timed

from synthbench import datasets
from synthbench.datasets.base import default_decoys
from synthbench.methods import get_method, run_method
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels, TrainSettings
from synthbench.protocol import FoldData, cell_fold
from synthbench.scoring import configure_scorer, get_scorer
from synthbench.scoring.base import explained_model


def quantus_explain_func(spec: MethodSpec, data: FoldData, trained: Any) -> Callable[..., np.ndarray]:
    """Quantus' ``explain_func``: the method's recipe on the module Quantus passes, for Quantus' targets."""
    params = spec.params_for(data.kind)
    one_logit = len(trained.classes_) == 2 and data.kind == "tabular"

    def explain_func(model: torch.nn.Module, inputs: np.ndarray, targets: np.ndarray, **kwargs: Any) -> np.ndarray:
        network = copy.copy(trained)
        network.module = model
        maps = spec.recipe.explain(
            network,
            data,
            data.rng("method", spec.name),
            params,
            inputs=np.asarray(inputs, dtype=np.float32),
            targets=None if one_logit else np.asarray(targets),
        )
        return maps.detach().cpu().numpy().astype(np.float64)

    return explain_func


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="xor", help="a tabular generator, or shapes for the image CNN")
    p.add_argument(
        "--decoys", type=int, default=None, help="decoys (default: 100 on tables, the generator's on images)"
    )
    p.add_argument("--n-samples", type=int, default=1000)
    p.add_argument("--folds", type=int, default=6)
    p.add_argument("--fold", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--method", default="gradient", help="a method with an attribution recipe")
    p.add_argument("--batch-size", type=int, default=256, help="Quantus' batch_size")
    p.add_argument("--repeats", type=int, default=1, help="time the best of this many runs of each")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    args = p.parse_args()
    import quantus
    from quantus.functions.similarity_func import correlation_spearman

    torch.set_num_threads(args.threads)
    spec = get_method(args.method)
    if spec.recipe is None:
        p.error(f"{args.method} has no attribution recipe, so Quantus cannot be given its explain function")
    decoys = args.decoys
    if decoys is None and datasets.spec(args.dataset).decoys:
        decoys = 100 if datasets.spec(args.dataset).kind == "tabular" else default_decoys(args.dataset)
    data, _ = cell_fold(
        args.dataset, n_samples=args.n_samples, seed=args.seed, n_decoys=decoys, n_folds=args.folds, fold=args.fold
    )
    models = SharedModels(data, TrainSettings(device=args.device))
    (kind, model), train_seconds = timed(explained_model, spec, data, models)
    output = run_method(spec, data, models)
    n, shape = len(data.X_explain), "x".join(map(str, data.input_shape))
    print(
        f"{args.dataset} n_samples={args.n_samples} decoys={decoys} fold {args.fold} of {args.folds}: "
        f"{n} explained rows of {shape}; {kind} (default preset) trained in {train_seconds:.1f} s; "
        f"method {args.method}; {args.device}, {args.threads} torch thread(s)"
    )

    scorer = configure_scorer("randomisation", {"measures": "spearman_abs"})
    scores, ours = best_of(args.repeats, lambda: scorer.score(output, data, spec, models))
    our_states = len(next(iter(scores.curves.values())).x) - 1
    every, ours_every = best_of(args.repeats, lambda: get_scorer("randomisation").score(output, data, spec, models))

    metric = quantus.MPRT(
        layer_order="top_down", similarity_func=correlation_spearman, abs=True, normalise=True, disable_warnings=True
    )
    explain = quantus_explain_func(spec, data, model)

    def run_quantus() -> dict[str, list[float]]:
        with torch.random.fork_rng(devices=[] if args.device == "cpu" else None):
            return metric(
                model=model.module,
                x_batch=data.X_explain,
                y_batch=np.asarray(data.y_explain),
                explain_func=explain,
                batch_size=args.batch_size,
                device=args.device,
            )

    theirs_scores, theirs = best_of(args.repeats, run_quantus)
    their_states = len(theirs_scores) - 1

    rows = [
        ("model states", our_states, their_states),
        ("explain passes (2 of the trained model + states)", our_states + 2, their_states + 2),
        ("rows explained", n * (our_states + 2), n * (their_states + 2)),
        ("measures per state", 1, 1),
        (
            "|a| Spearman at the fully randomised model",
            f"{scores['randomisation_spearman_abs_final']:.3f}",
            f"{np.mean(list(theirs_scores.values())[-1]):.3f}",
        ),
        ("seconds (best of {})".format(args.repeats), f"{ours:.3f}", f"{theirs:.3f}"),
        (
            f"seconds, every default measure ({len(every.curves) - ('activation_scale' in every.curves)})",
            f"{ours_every:.3f}",
            "",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}s}  {'synthbench':>12s}  {'Quantus 0.6':>12s}")
    for label, a, b in rows:
        print(f"{label:{width}s}  {a!s:>12s}  {b!s:>12s}")
    print(f"{'ratio Quantus / synthbench':{width}s}  {theirs / ours:>12.2f}  (> 1: synthbench is faster)")


if __name__ == "__main__":
    main()
