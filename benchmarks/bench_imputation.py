"""ROAD's noisy linear imputation of images: ours against Quantus 0.6's ``noisy_linear_imputation``.

ROAD (``synthbench.scoring.removal.road``) imputes the removed pixels of every explained image at each fraction,
most relevant first and least relevant first: on images, imputation is most of a ROAD cell's time. For
``--n`` images of ``shapes`` (3 x 32 x 32) and random masks at each fraction, of pixels and of elements, this
script times :func:`~synthbench.scoring.removal.imputation.impute_images` (every plane in one banded solve; a pixel
mask's three channels its right-hand sides) against Quantus' function (one sparse solve per image, or per plane
for element masks), both without noise, and prints the seconds, the ratio and the largest absolute difference. Usage::

    python benchmarks/bench_imputation.py [--n 100] [--fractions 0.2,0.5,0.8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from quantus.functions.perturb_func import noisy_linear_imputation

from synthbench import datasets
from synthbench.scoring.removal.imputation import impute_images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--fractions", default="0.2,0.5,0.8")
    args = parser.parse_args()
    images = datasets.make("shapes", n_samples=args.n, n_classes=4, n_decoys=4, seed=0).X.astype(np.float64)
    rng = np.random.default_rng(0)
    print(f"{args.n} images {images.shape[1:]}, no noise; pixel masks (the same pixels in every channel: ROAD's unit")
    print("'pixel') and element masks (each channel plane its own: ROAD's default, 'element'; Quantus per plane)")
    print(f"{'mask':>8}{'fraction':>9}{'ours s':>9}{'Quantus s':>11}{'ratio':>7}{'max |diff|':>12}")
    n, c = images.shape[:2]
    for unit, channels in (("pixel", 1), ("element", c)):
        for fraction in (float(t) for t in args.fractions.split(",")):
            removed = rng.random((n, channels, *images.shape[2:])) < fraction
            t0 = time.perf_counter()
            ours = impute_images(images, removed, noise=0.0, rng=rng)
            mine = time.perf_counter() - t0
            t0 = time.perf_counter()
            planes = removed if channels > 1 else np.broadcast_to(removed, images.shape)
            theirs = np.stack(
                [
                    noisy_linear_imputation(x, np.flatnonzero(m[0]), noise=0.0)
                    if channels == 1
                    else np.concatenate(
                        [noisy_linear_imputation(x[j : j + 1], np.flatnonzero(m[j]), noise=0.0) for j in range(c)]
                    )
                    for x, m in zip(images, planes, strict=True)
                ]
            )
            reference = time.perf_counter() - t0
            gap = float(np.abs(ours - theirs).max())
            print(f"{unit:>8}{fraction:9.1f}{mine:9.3f}{reference:11.3f}{reference / mine:7.1f}{gap:12.1e}")


if __name__ == "__main__":
    main()
