"""Time synthbench's batched attributions against captum on the same model and inputs.

Model: the default benchmark MLP (``build_mlp(p)``: LeakyReLU(0.2), width 16, depth 2), float32,
eval mode. Inputs: ``n x p`` standard normal. For each method the script prints the seconds taken
by captum and by synthbench, their ratio (captum / ours, > 1 means ours is faster) and the largest
absolute difference between the two results where they are comparable:

* ``smoothgrad_sq``: captum ``NoiseTunnel(Saliency)`` with ``abs=False`` vs ours (gradient base),
  same absolute ``stdevs``; the noise draws differ (different RNGs), so the difference column is
  the size of the Monte-Carlo disagreement, not an error (two captum runs with different seeds
  differ by as much: about 5e-3 max, 18% mean relative at 50 samples on the default problem).
* ``integrated_gradients``: captum ``IntegratedGradients`` (Gauss-Legendre) vs ours; exact match
  expected up to float32 rounding.
* ``shapley_sampling``: captum ``ShapleyValueSampling`` vs ours, both with ``--shapley-samples``
  permutations; ours is given captum's permutations (same global-RNG draws), so the results match.
* ``feature_permutation``: captum ``FeaturePermutation`` vs ours (different random permutations;
  no difference column).

Usage::

    python benchmarks/bench_attribution.py --n 1000 --p 1000 --samples 50 --steps 50 \
        --shapley-samples 5 --methods smoothgrad_sq integrated_gradients shapley_sampling feature_permutation
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from synthbench.attribution import attribute
from synthbench.models.mlp import build_mlp

METHODS = ("smoothgrad_sq", "integrated_gradients", "shapley_sampling", "feature_permutation")


def _timed(fn: Callable[[], torch.Tensor]) -> tuple[float, torch.Tensor]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run(args: argparse.Namespace) -> list[tuple[str, float, float, float | None]]:
    """Rows ``(method, captum_seconds, ours_seconds, max_abs_diff or None)``."""
    from captum.attr import (
        FeaturePermutation,
        IntegratedGradients,
        NoiseTunnel,
        Saliency,
        ShapleyValueSampling,
    )

    g = torch.Generator().manual_seed(args.seed)
    model = build_mlp(args.p, generator=g).eval()
    x = torch.randn(args.n, args.p, generator=g)
    stdev = 0.15 * float(x.max() - x.min())
    rows = []
    for name in args.methods:
        if name == "smoothgrad_sq":
            nt = NoiseTunnel(Saliency(model))
            t_ref, ref = _timed(
                lambda: nt.attribute(
                    x, nt_type="smoothgrad_sq", nt_samples=args.samples, stdevs=stdev, target=0, abs=False
                )
            )
            t_ours, ours = _timed(
                lambda: attribute("smoothgrad_sq", model, x, n_samples=args.samples, stdevs=stdev, seed=args.seed)
            )
        elif name == "integrated_gradients":
            ig = IntegratedGradients(model)
            t_ref, ref = _timed(lambda: ig.attribute(x, target=0, n_steps=args.steps))
            t_ours, ours = _timed(lambda: attribute("integrated_gradients", model, x, n_steps=args.steps))
        elif name == "shapley_sampling":
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(args.seed)
                svs = ShapleyValueSampling(model)
                t_ref, ref = _timed(lambda: svs.attribute(x, target=0, n_samples=args.shapley_samples))
                torch.manual_seed(args.seed)
                perms = torch.stack([torch.randperm(args.p) for _ in range(args.shapley_samples)])
            t_ours, ours = _timed(lambda: attribute("shapley_sampling", model, x, permutations=perms))
        elif name == "feature_permutation":
            fp = FeaturePermutation(model)
            t_ref, ref = _timed(lambda: fp.attribute(x, target=0))
            t_ours, ours = _timed(lambda: attribute("feature_permutation", model, x, seed=args.seed))
            ref = None
        else:
            raise ValueError(f"unknown method {name!r}; valid: {', '.join(METHODS)}")
        diff = None if ref is None else float((ours - ref.to(ours.dtype)).abs().max())
        rows.append((name, t_ref, t_ours, diff))
        print(
            f"{name:22s} captum {t_ref:8.2f} s   ours {t_ours:8.2f} s   ratio {t_ref / t_ours:7.1f}x"
            + ("" if diff is None else f"   max|diff| {diff:.2e}"),
            flush=True,
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--p", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=50, help="noise samples (smoothgrad_sq)")
    parser.add_argument("--steps", type=int, default=50, help="integration steps (IG)")
    parser.add_argument("--shapley-samples", type=int, default=5, help="permutations (Shapley sampling)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"n={args.n} p={args.p} threads={torch.get_num_threads()}")
    run(args)


if __name__ == "__main__":
    main()
