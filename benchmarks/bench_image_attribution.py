"""Time synthbench's attributions on the image CNN against captum on the same model, images and targets.

Model: the ``cnn`` preset's architecture (:func:`synthbench.models.cnn.build_cnn`) trained a few
epochs on ``shapes`` (so the maps are not those of random weights), float32, eval mode. Inputs:
``--n`` explained images of 3 x 32 x 32, each explained for its own label (a per-example target
tensor). For every method the script prints captum's seconds, ours, the ratio (captum / ours,
> 1 means ours is faster) and the largest absolute difference of the two results where they are
comparable (the noise ensembles draw different noise, so there the column is empty).

Settings follow the benchmark's image defaults: integrated gradients 25 steps from the black
image; SmoothGrad, SmoothGrad² and VarGrad 15 samples at 0.15 x the images' range, of the
gradient, of IG and of guided backprop (captum: ``NoiseTunnel`` over ``Saliency(abs=False)``,
``IntegratedGradients``, ``GuidedBackprop``); feature ablation over 4 x 4 patches.

Usage::

    python benchmarks/bench_image_attribution.py --n 128 --repeats 3
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch

from synthbench import datasets
from synthbench.attribution import attribute
from synthbench.methods.neural import patch_mask
from synthbench.models.cnn import CNNConfig, train_cnn

NOISE = ("smoothgrad", "smoothgrad_sq", "vargrad")


def _best(fn: Callable[[], torch.Tensor], repeats: int) -> tuple[float, torch.Tensor]:
    """Fastest of ``repeats`` runs (seconds) and the last result."""
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def cases(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, samples: int, steps: int):
    """``(name, captum_fn, ours_fn, comparable)`` for every benchmarked method."""
    from captum.attr import (
        LRP,
        Deconvolution,
        FeatureAblation,
        GuidedBackprop,
        InputXGradient,
        IntegratedGradients,
        NoiseTunnel,
        Saliency,
    )

    sigma = 0.15 * float(x.max() - x.min())
    mask = torch.as_tensor(patch_mask(tuple(x.shape[1:]), 4))
    yield "saliency", lambda: Saliency(model).attribute(x, target=y), lambda: attribute("saliency", model, x, y), True
    yield (
        "input_x_gradient",
        lambda: InputXGradient(model).attribute(x, target=y),
        lambda: attribute("input_x_gradient", model, x, y),
        True,
    )
    yield (
        "integrated_gradients",
        lambda: IntegratedGradients(model).attribute(x, target=y, n_steps=steps),
        lambda: attribute("integrated_gradients", model, x, y, n_steps=steps),
        True,
    )
    yield (
        "guided_backprop",
        lambda: GuidedBackprop(model).attribute(x, target=y),
        lambda: attribute("guided_backprop", model, x, y),
        True,
    )
    yield (
        "deconvolution",
        lambda: Deconvolution(model).attribute(x, target=y),
        lambda: attribute("deconvolution", model, x, y),
        True,
    )
    yield (
        "feature_ablation",
        lambda: FeatureAblation(model).attribute(x, target=y, feature_mask=mask),
        lambda: attribute("feature_ablation", model, x, y, feature_mask=mask),
        True,
    )
    bases = {
        "gradient": (lambda: Saliency(model), {"abs": False}, {}),
        "integrated_gradients": (lambda: IntegratedGradients(model), {"n_steps": steps}, {"n_steps": steps}),
        "guided_backprop": (lambda: GuidedBackprop(model), {}, {}),
    }
    for base, (make, captum_kw, ours_kw) in bases.items():
        for nt in NOISE:
            yield (
                f"{nt} of {base}",
                lambda make=make, nt=nt, kw=captum_kw: NoiseTunnel(make()).attribute(
                    x, nt_type=nt, nt_samples=samples, stdevs=sigma, target=y, **kw
                ),
                lambda nt=nt, base=base, kw=ours_kw: attribute(
                    nt, model, x, y, base=base, base_params=kw or None, n_samples=samples, stdevs=sigma, seed=0
                ),
                False,
            )
    flatten = next(m for m in model if isinstance(m, torch.nn.Flatten))

    def lrp():
        from captum.attr._utils.lrp_rules import EpsilonRule

        flatten.rule = EpsilonRule()  # captum has no default rule for Flatten; epsilon there is the identity
        return LRP(model).attribute(x, target=y)

    yield "lrp_epsilon", lrp, lambda: attribute("lrp_epsilon", model, x, y), True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=128, help="explained images")
    p.add_argument("--samples", type=int, default=15, help="noise samples")
    p.add_argument("--steps", type=int, default=25, help="integration steps")
    p.add_argument("--repeats", type=int, default=3, help="runs per method; the fastest counts")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    ds = datasets.make("shapes", n_samples=400 + args.n, seed=0)
    trained = train_cnn(ds.X[:400], ds.y[:400], config=CNNConfig.from_dict(dict(max_epochs=5)), seed=0)
    model = trained.module.float().eval()
    x, y = torch.as_tensor(ds.X[400:]), torch.as_tensor(ds.y[400:])
    print(
        f"CNN on {args.n} images of {tuple(x.shape[1:])}, torch {torch.__version__}, {torch.get_num_threads()} "
        f"threads, best of {args.repeats}"
    )
    print(f"{'method':38s} {'captum s':>9s} {'ours s':>9s} {'captum/ours':>12s} {'max |diff|':>11s}")
    for name, captum_fn, ours_fn, comparable in cases(model, x, y, args.samples, args.steps):
        t_captum, ref = _best(captum_fn, args.repeats)
        t_ours, ours = _best(ours_fn, args.repeats)
        diff = f"{float((ref.detach() - ours).abs().max()):.1e}" if comparable else ""
        print(f"{name:38s} {t_captum:9.3f} {t_ours:9.3f} {t_captum / t_ours:12.2f} {diff:>11s}", flush=True)


if __name__ == "__main__":
    main()
