"""The hinge basis as :class:`~synthbench.models.basis.BasisLinear` beside the same layer as a plain ``nn.Linear``.

A screened MLP whose chosen round kept every column (a setting it cannot learn) carries a basis
layer ``Linear(p, p * G)`` with one non-zero per row. :class:`~synthbench.models.basis.BasisLinear`
evaluates it by gather (the same bits), and the perturbation methods walk the path of a Shapley
permutation on the ``width`` outputs of the first trained layer
(:class:`~synthbench.attribution.core.AdditiveHead`) instead of the ``p * G`` basis units, as they
must with a plain ``nn.Linear`` basis (the reference: how every basis MLP ran before).
Printed: seconds of one forward pass and of a Shapley-sampling cell (``--permutations``; a default
cell runs 25, over ``--n`` rows) each way, their ratio, and how far apart the results are. Usage::

    python benchmarks/bench_basis_layer.py [--p 1002] [--n 167] [--permutations 3]
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
import torch
from torch import nn

from synthbench.attribution.perturbation import shapley_sampling
from synthbench.models.basis import hinge_knots
from synthbench.models.mlp import BASIS_LAYER, MLPConfig, build_mlp


def _dense_twin(module: nn.Sequential) -> nn.Sequential:
    """``module`` with its basis layer replaced by a plain ``nn.Linear`` of the same weights."""
    twin = copy.deepcopy(module)
    basis = getattr(twin, BASIS_LAYER)
    dense = nn.Linear(basis.in_features, basis.out_features)
    dense.load_state_dict(basis.state_dict())
    dense.requires_grad_(False)
    setattr(twin, BASIS_LAYER, dense)
    return twin


def _apart(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / a.abs().max())


def _seconds(fn) -> tuple[float, torch.Tensor]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, default=1002)
    parser.add_argument("--n", type=int, default=167, help="rows explained (a default cell's held-out fold)")
    parser.add_argument(
        "--permutations", type=int, default=3, help="a default cell runs 25; the reference takes ~25 s each"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    X = np.random.default_rng(0).normal(size=(args.n, args.p)).astype(np.float32)
    config = MLPConfig(width=64, depth=2, activation="relu", noise_sigma=0.0, basis_knots=6)
    gather = build_mlp(args.p, config, generator=torch.Generator().manual_seed(0), knots=hinge_knots(X, 6)).eval()
    dense = _dense_twin(gather).eval()
    x = torch.from_numpy(X)
    print(
        f"MLP reading all {args.p} inputs, basis Linear({args.p}, {getattr(gather, BASIS_LAYER).out_features}), "
        f"{args.n} rows, 1 thread"
    )
    print(f"{'':<28}{'plain Linear (reference)':>25}{'BasisLinear':>13}{'ratio':>8}  max |difference| / max |value|")
    with torch.no_grad():
        (td, fd), (tg, fg) = _seconds(lambda: dense(x)), _seconds(lambda: gather(x))
    print(f"{'forward pass':<28}{td:>24.3f}s{tg:>12.3f}s{td / tg:>7.1f}x  {_apart(fd, fg):.1e}")
    cell = {"n_samples": args.permutations, "seed": 0}
    (td, ad), (tg, ag) = (_seconds(lambda m=m: shapley_sampling(m, x, 0, **cell)) for m in (dense, gather))
    print(
        f"{f'Shapley sampling, {args.permutations} perm.':<28}{td:>24.1f}s{tg:>12.1f}s{td / tg:>7.1f}x  "
        f"{_apart(ad, ag):.1e}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
