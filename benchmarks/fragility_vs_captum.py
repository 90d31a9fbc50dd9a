"""Time the fragility scorer's sensitivities path against captum's ``sensitivity_max`` on the same model.

One fold and its trained model: ``--dataset xor`` (100 decoys, the ``sparse_mlp`` preset, 200
explained rows) or ``shapes`` (3 x 32 x 32 images, the ``cnn`` preset, 100 explained images); the
first ``--rows`` explained rows are used. The model is trained first and not timed. The method
(``--method``: ``saliency`` or ``integrated_gradients``) explains the one logit (xor's binary MLP)
or each image's label (the CNN), with the method's parameters on that input kind. Then, at radius
``--eps`` (tables: feature standard deviations; images: pixel units) and ``--samples`` draws:

* synthbench: the scorer's path (``_Cell.measure``): the maps of the rows, ``samples`` uniform draws
  of the L-infinity budget (:meth:`~synthbench.scoring.fragility.budget.Budget.uniform`), the maps of each
  drawn batch with :func:`synthbench.attribution.attribute`, and
  :func:`~synthbench.scoring.fragility.sensitivity.sensitivities` (max- and average-sensitivity and the local
  Lipschitz estimate at once);
* captum 0.9: ``sensitivity_max(explanation_func, inputs, perturb_radius=eps,
  n_perturb_samples=samples, max_examples_per_batch=--max-examples-per-batch)``, with captum's
  own explainer (``Saliency``, ``IntegratedGradients``) and with synthbench's ``attribute`` as the
  explanation function. Its perturbation: on images captum's ``default_perturb_func`` (the same
  cube; the budget also clips to the training images' range), on tables the same cube scaled by
  each feature's standard deviation (captum's default radius is one number for every feature).

Times are the best of ``--repeats`` runs after an untimed warm-up call of each explainer, in this
process, on the CPU. The last column feeds captum synthbench's own draws (a ``perturb_func``
returning them in captum's row layout) and prints the largest absolute difference of the two
per-example max-sensitivity vectors.

Usage::

    python benchmarks/fragility_vs_captum.py
    python benchmarks/fragility_vs_captum.py --dataset shapes
    python benchmarks/fragility_vs_captum.py --method integrated_gradients --samples 20
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import torch
from timing import best_of, timed

from synthbench.attribution import attribute
from synthbench.methods import get_method
from synthbench.models import SharedModels
from synthbench.protocol import cell_fold
from synthbench.scoring.fragility.budget import Budget
from synthbench.scoring.fragility.sensitivity import sensitivities

#: Per dataset: the fold (n_samples, folds: one fold's test part is the explained rows), decoys, model kind, preset.
SETUPS = {
    "xor": dict(n_samples=1000, folds=5, decoys=100, kind="mlp", preset="sparse_mlp", eps=0.1, rows=200),
    "shapes": dict(n_samples=500, folds=5, decoys=None, kind="cnn", preset="cnn", eps=8 / 255, rows=100),
}


def as_captum(fn: Callable[..., torch.Tensor]) -> Callable[..., Any]:
    """``fn(inputs, **kwargs)`` of one tensor as captum's ``explanation_func``: captum passes the original
    inputs as a one-tensor tuple and iterates over the answer as a tuple, the perturbed ones as a tensor."""

    def explain(inputs: torch.Tensor | tuple[torch.Tensor, ...], **kwargs: Any) -> Any:
        if isinstance(inputs, tuple):
            return tuple(fn(x, **kwargs) for x in inputs)
        return fn(inputs, **kwargs)

    return explain


def replaying(x: np.ndarray, draws: list[np.ndarray]) -> Callable[[torch.Tensor], torch.Tensor]:
    """captum's ``perturb_func`` returning ``draws`` (copy ``j`` of every row in ``draws[j]``) in captum's
    layout: it expands the rows with ``repeat_interleave`` (row ``i * c + s``: copy ``s`` of row ``i``)
    and asks for ``c`` samples per call."""
    n, used = len(x), [0]

    def perturb_func(inputs: torch.Tensor) -> torch.Tensor:
        c = inputs.shape[0] // n
        chunk = np.stack(draws[used[0] : used[0] + c], axis=1).reshape(n * c, *x.shape[1:])
        used[0] += c
        return torch.as_tensor(chunk, dtype=inputs.dtype, device=inputs.device)

    return perturb_func


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="xor", choices=tuple(SETUPS))
    p.add_argument("--samples", type=int, default=10, help="perturbed copies per row (captum's n_perturb_samples)")
    p.add_argument("--rows", type=int, default=None, help="explained rows (default: 200 on xor, 100 on shapes)")
    p.add_argument("--method", default="saliency", choices=("saliency", "integrated_gradients"))
    p.add_argument("--eps", default=None, help="the radius (default: 0.1 sd on xor, 8/255 on shapes)")
    p.add_argument("--max-examples-per-batch", type=int, default=None, help="captum's (default: all at once)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3, help="time the best of this many runs of each (after a warm-up)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    args = p.parse_args()
    from captum.attr import IntegratedGradients, Saliency
    from captum.metrics import sensitivity_max
    from captum.metrics._core.sensitivity import default_perturb_func

    if args.threads:
        torch.set_num_threads(args.threads)
    setup = SETUPS[args.dataset]
    eps = float(Fraction(args.eps)) if args.eps is not None else setup["eps"]
    data, _ = cell_fold(
        args.dataset,
        n_samples=setup["n_samples"],
        seed=args.seed,
        n_decoys=setup["decoys"],
        n_folds=setup["folds"],
        fold=0,
    )
    data = data.first(args.rows or setup["rows"])
    models = SharedModels(data, preset=setup["preset"])
    model, train_seconds = timed(models.get, setup["kind"])
    module = model.module.eval()
    spec = get_method(args.method)
    params = dict(spec.params_for(data.kind))
    one_logit = len(model.classes_) == 2 and data.kind == "tabular"
    target = None if one_logit else torch.as_tensor(np.asarray(data.y_explain))
    captum_target = 0 if one_logit else target
    x = data.X_explain
    n, shape = len(x), "x".join(map(str, data.input_shape))
    print(
        f"{args.dataset}: {n} explained rows of {shape}; {setup['kind']} ({setup['preset']}) trained in "
        f"{train_seconds:.1f} s; method {args.method}{' ' + str(params) if params else ''}; "
        f"eps {eps:.4g}, {args.samples} samples; "
        f"{torch.get_num_threads()} torch thread(s)"
    )

    budget = Budget.for_fold(data, eps, "linf")

    def explain(xs: np.ndarray) -> np.ndarray:
        return attribute(args.method, module, torch.as_tensor(xs), target, **params).numpy()

    def ours() -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
        rng = np.random.default_rng(args.seed)
        start = torch.as_tensor(x)
        draws = [budget.uniform(start, rng).numpy() for _ in range(args.samples)]
        return sensitivities(x, explain(x), draws, [explain(d) for d in draws]), draws

    captum_cls = {"saliency": Saliency, "integrated_gradients": IntegratedGradients}[args.method](module)
    explainers = {
        f"captum {type(captum_cls).__name__}": as_captum(lambda t, **kw: captum_cls.attribute(t, **kw, **params)),
        "synthbench attribute": as_captum(lambda t, target=None: attribute(args.method, module, t, target, **params)),
    }
    if np.all(budget.scale == 1):
        perturb, perturb_words = default_perturb_func, "captum's default_perturb_func (no clipping)"
    else:
        scale = torch.as_tensor(budget.scale)

        def perturb(inputs: torch.Tensor, radius: float) -> torch.Tensor:
            return inputs + scale * torch.empty_like(inputs).uniform_(-radius, radius)

        perturb_words = "the cube scaled by each feature's sd"

    def captum(explanation: Callable[..., Any], perturb_func: Callable[..., Any]) -> np.ndarray:
        values = sensitivity_max(
            explanation,
            torch.as_tensor(x),
            perturb_func=perturb_func,
            perturb_radius=eps,
            n_perturb_samples=args.samples,
            max_examples_per_batch=args.max_examples_per_batch,
            target=captum_target,
        )
        return values.detach().numpy().astype(np.float64)

    for explanation in explainers.values():  # warm-up, not timed (first calls allocate and pick kernels)
        explanation(torch.as_tensor(x[:8]), target=captum_target if one_logit else captum_target[:8])
    (found, draws), our_seconds = best_of(args.repeats, ours)
    rows = [
        (
            "synthbench: Budget.uniform + attribute + sensitivities",
            our_seconds,
            float(np.nanmean(found["max_sensitivity"])),
            "",
        )
    ]
    for label, explanation in explainers.items():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(args.seed)
            values, seconds = best_of(args.repeats, lambda: captum(explanation, perturb))
            same_draws = captum(explanation, replaying(x, draws))
        diff = np.nanmax(np.abs(same_draws - found["max_sensitivity"]))
        rows.append((f"captum sensitivity_max, {label}", seconds, float(np.mean(values)), f"{diff:.2e}"))

    print(f"captum's perturbation: {perturb_words}; max_examples_per_batch {args.max_examples_per_batch}")
    width = max(len(r[0]) for r in rows)
    print(
        f"{'':{width}s}  {'seconds':>9s}  {'/ synthbench':>12s}  {'mean max-sens':>13s}  "
        f"{'max |diff|, same draws':>22s}"
    )
    for label, seconds, mean, diff in rows:
        print(f"{label:{width}s}  {seconds:9.3f}  {seconds / our_seconds:12.2f}  {mean:13.4f}  {diff:>22s}")
    print(
        f"(> 1 in '/ synthbench': synthbench is faster; best of {args.repeats}; synthbench also returns "
        "average-sensitivity and the local Lipschitz estimate in that time)"
    )


if __name__ == "__main__":
    main()
