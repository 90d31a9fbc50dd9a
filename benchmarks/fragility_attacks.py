"""Time fragility's attacks per method on one cell: one attack at one eps, and the whole scorer.

One fold (``--dataset``, default ``xor`` with 100 decoys; ``shapes`` with 4 distractors and the
CNN), its model trained first and not timed. For every method whose maps are differentiable
(``attack_access == "gradient"``; ``--methods`` to choose), on the first ``--rows`` explained
examples:

* ``attack``: the top-k gradient attack at ``--eps`` with ``--iterations`` steps (one forward and
  backward through the smooth surrogate, one explanation and one prediction on the network per
  step, all examples in one batch);
* ``cell`` (with ``--full``): the registered ``fragility`` scorer with its defaults for the input
  kind (every attack at every eps, the random baseline and the sensitivities).

Usage::

    python benchmarks/fragility_attacks.py
    python benchmarks/fragility_attacks.py --full
    python benchmarks/fragility_attacks.py --dataset shapes --rows 100 --iterations 20
"""

from __future__ import annotations

import argparse
import time

import torch

from synthbench.methods import get_method, method_names, run_method
from synthbench.models import SharedModels
from synthbench.protocol import cell_fold
from synthbench.scoring import configure_scorer
from synthbench.scoring.fragility.budget import Budget
from synthbench.scoring.fragility.scorer import _Cell, attack_access


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", choices=("xor", "shapes"), default="xor")
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--eps", type=float, default=None, help="default: 0.1 (tables), 8/255 (images)")
    p.add_argument("--iterations", type=int, default=None, help="default: the scorer's for the input kind")
    p.add_argument("--methods", default=None, help="comma-separated (default: every gradient-attacked method)")
    p.add_argument("--full", action="store_true", help="also time the whole scorer per method")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    tabular = args.dataset == "xor"
    data, _ = cell_fold(
        args.dataset, n_samples=3 * args.rows + 3, seed=0, n_folds=3, fold=0, n_decoys=100 if tabular else 4
    )
    kind = data.kind
    models = SharedModels(data, preset="sparse_mlp" if tabular else None)
    model = models.get("mlp" if tabular else "cnn")
    names = (
        args.methods.split(",")
        if args.methods
        else [
            n
            for n in method_names()
            if kind in get_method(n).inputs and attack_access(get_method(n), kind) == "gradient"
        ]
    )
    eps = args.eps if args.eps is not None else (0.1 if tabular else 8 / 255)
    options = {"max_examples": args.rows, **({"iterations": args.iterations} if args.iterations else {})}
    scorer = configure_scorer("fragility", options)
    sub = data.first(args.rows)
    print(
        f"{args.dataset}: {len(sub.X_explain)} rows of shape {data.input_shape}, eps {eps:.4g}, "
        f"{scorer.iterations_for(kind)} iterations, torch threads {torch.get_num_threads()}"
    )
    print(f"{'method':<24} {'top-k attack s':>15} {'cell s':>8} {'topk_intersection':>18}")
    total = 0.0
    for name in names:
        spec = get_method(name)
        cell = _Cell(scorer, spec, sub, models, model)
        t = time.perf_counter()
        cell.attack("topk", Budget.for_fold(data, eps, scorer.norm))
        attack = time.perf_counter() - t
        total += attack
        full, value = "", ""
        if args.full:
            t = time.perf_counter()
            values = scorer.score(run_method(spec, data, models), data, spec, models)
            full, value = f"{time.perf_counter() - t:8.1f}", f"{values['fragility_topk_intersection']:18.3f}"
        print(f"{name:<24} {attack:15.2f} {full:>8} {value:>18}")
    print(f"{'every method':<24} {total:15.2f}")


if __name__ == "__main__":
    main()
