"""Perturbation attributions: feature ablation, feature permutation, Shapley value sampling.

Every perturbed copy of the inputs is stacked into large batches (chunks of at most
``max_batch_elements`` elements per forward call); there is no Python loop over features,
samples or permutations, only over chunks.

Fast path (``fast=True``, default): when the model is a Sequential whose first non-identity layer
is ``nn.Linear`` (the benchmark MLP), a perturbation that changes feature ``j`` of row ``i`` by
``d`` changes that layer's pre-activation by ``d * W[:, j]``. The perturbed pre-activations are
built directly (``O(width)`` per perturbation instead of ``O(p * width)``) and only the rest of
the network is run. The result equals the generic path up to floating-point rounding; any other
model uses the generic path, which perturbs the inputs themselves.

Random draws (permutations) come from an explicit ``torch.Generator`` (``generator=``, or one
seeded from ``seed``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from synthbench.methods.attribution_core import (
    DEFAULT_MAX_BATCH_ELEMENTS,
    as_baseline,
    forward_target,
    make_generator,
    rows_per_chunk,
    select_target,
    split_linear_head,
)

__all__ = ["feature_ablation", "feature_permutation", "shapley_sampling", "substitution_outputs"]


def _chunks(total: int, size: int) -> list[tuple[int, int]]:
    return [(i, min(total, i + size)) for i in range(0, total, size)]


def substitution_outputs(
    model: nn.Module,
    inputs: torch.Tensor,
    values: torch.Tensor,
    target: int,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    fast: bool = True,
) -> torch.Tensor:
    """Target output with one feature substituted: ``out[j, i] = f(x_i with x_ij := values[j, i])``.

    Parameters
    ----------
    inputs
        ``(n, p)``.
    values
        ``(p, n)`` replacement values, one row per feature.

    Returns
    -------
    torch.Tensor
        ``(p, n)``.
    """
    n, p = inputs.shape
    out = inputs.new_empty(p, n)
    split = split_linear_head(model) if fast else None
    with torch.no_grad():
        if split is not None:
            head, tail = split
            z = head(inputs)  # (n, h)
            h = z.shape[1]
            w_t = head.weight.detach().t()  # (p, h)
            r_step = min(n, rows_per_chunk(h, max_batch_elements))
            f_step = rows_per_chunk(r_step * h, max_batch_elements)
            for r0, r1 in _chunks(n, r_step):
                for j0, j1 in _chunks(p, f_step):
                    delta = values[j0:j1, r0:r1] - inputs[r0:r1, j0:j1].t()  # (f, r)
                    zp = z[r0:r1].unsqueeze(0) + delta.unsqueeze(-1) * w_t[j0:j1].unsqueeze(1)
                    res = select_target(tail(zp.reshape(-1, h)), target)
                    out[j0:j1, r0:r1] = res.view(j1 - j0, r1 - r0)
        else:
            r_step = min(n, rows_per_chunk(p, max_batch_elements))
            f_step = rows_per_chunk(r_step * p, max_batch_elements)
            for r0, r1 in _chunks(n, r_step):
                for j0, j1 in _chunks(p, f_step):
                    f = j1 - j0
                    xp = inputs[r0:r1].unsqueeze(0).repeat(f, 1, 1)  # (f, r, p)
                    feats = torch.arange(j0, j1, device=inputs.device)
                    xp[torch.arange(f, device=inputs.device), :, feats] = values[j0:j1, r0:r1]
                    res = select_target(model(xp.reshape(-1, p)), target)
                    out[j0:j1, r0:r1] = res.view(f, r1 - r0)
    return out


def feature_ablation(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    baselines: torch.Tensor | float | None = None,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Occlusion of one feature at a time: ``f(x) - f(x with x_j := baseline_j)``.

    Parameters
    ----------
    baselines
        Replacement values: None (zeros), scalar, ``(p,)``, ``(1, p)`` or ``(n, p)``.

    Returns
    -------
    torch.Tensor
        ``(n, p)``; positive when replacing the feature by its baseline lowers the target output
        (captum ``FeatureAblation`` with one feature per group).
    """
    base = as_baseline(baselines, inputs)
    f_x = forward_target(model, inputs, target, max_batch_elements)
    ablated = substitution_outputs(
        model, inputs, base.t(), target, max_batch_elements=max_batch_elements, fast=fast
    )
    return f_x.unsqueeze(1) - ablated.t()


def _random_permutations(count: int, size: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """``(count, size)`` independent uniform random permutations (argsort of uniforms)."""
    return torch.argsort(torch.rand((count, size), generator=generator, device=device), dim=1)


def feature_permutation(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    permutations: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Permutation importance per row: ``f(x_i) - f(x_i with x_ij := x_{pi_j(i), j})``.

    Each feature's column is shuffled across the batch by its own permutation ``pi_j``
    (captum ``FeaturePermutation`` with one feature per group).

    Parameters
    ----------
    permutations
        Explicit ``(p, n)`` long tensor, row ``j`` a permutation of ``0..n-1``. If None, drawn from
        ``generator``; a drawn identity permutation is replaced by its cyclic shift (captum re-draws
        identities) so every column really moves.

    Returns
    -------
    torch.Tensor
        ``(n, p)``; positive when shuffling the feature lowers the row's target output.
    """
    n, p = inputs.shape
    if n < 2:
        raise ValueError("feature_permutation needs at least 2 rows")
    if permutations is None:
        g = make_generator(generator, seed, inputs.device)
        perms = _random_permutations(p, n, g, inputs.device)
        identity = (perms == torch.arange(n, device=inputs.device)).all(dim=1)
        perms[identity] = torch.roll(perms[identity], 1, dims=1)
    else:
        perms = torch.as_tensor(permutations, dtype=torch.long, device=inputs.device)
        if tuple(perms.shape) != (p, n):
            raise ValueError(f"permutations must have shape ({p}, {n}), got {tuple(perms.shape)}")
    values = inputs.t().gather(1, perms)  # values[j, i] = x[perms[j, i], j]
    f_x = forward_target(model, inputs, target, max_batch_elements)
    permuted = substitution_outputs(
        model, inputs, values, target, max_batch_elements=max_batch_elements, fast=fast
    )
    return f_x.unsqueeze(1) - permuted.t()


def _path_outputs_fast(
    head: nn.Linear,
    tail: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    base: torch.Tensor,
    perms: torch.Tensor,
    target: int,
) -> torch.Tensor:
    """Outputs along each permutation path via cumulative first-layer updates; ``(s, p, r)``."""
    s, p = perms.shape
    r = x.shape[0]
    z_base = head(base)  # (r, h)
    h = z_base.shape[1]
    w_t = head.weight.detach().t()  # (p, h)
    diff = (x - base).t()[perms]  # (s, p, r): feature perms[s, k] of every row
    z = diff.unsqueeze(-1) * w_t[perms].unsqueeze(2)  # (s, p, r, h): each step's change of the pre-activation
    z.cumsum_(dim=1).add_(z_base)  # in place: these are the largest tensors of the method
    z[:, -1] = head(x)  # the full state exactly, so the telescoping sum ends at f(x)
    return select_target(tail(z.reshape(-1, h)), target).view(s, p, r)


def _path_outputs_generic(
    model: nn.Module, x: torch.Tensor, base: torch.Tensor, perms: torch.Tensor, target: int
) -> torch.Tensor:
    """Outputs along each permutation path by building the inputs; ``(s, p, r)``."""
    s, p = perms.shape
    r = x.shape[0]
    rank = torch.argsort(perms, dim=1)  # rank[s, j]: position of feature j
    steps = torch.arange(1, p + 1, device=x.device)
    mask = rank.unsqueeze(1) < steps.view(1, p, 1)  # (s, p, p): feature j present after step k
    states = torch.where(mask.unsqueeze(2), x.view(1, 1, r, p), base.view(1, 1, r, p))
    return select_target(model(states.reshape(-1, p)), target).view(s, p, r)


def shapley_sampling(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    baselines: torch.Tensor | float | None = None,
    n_samples: int = 25,
    permutations: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Shapley value sampling: mean marginal contribution over random feature orderings.

    For each permutation ``pi`` (shared by all rows, as in captum ``ShapleyValueSampling``) the
    features are switched from baseline to input value in the order ``pi``; feature ``pi_k`` is
    credited with ``f(state_k) - f(state_{k-1})``. The average over ``n_samples`` permutations is
    returned.

    Parameters
    ----------
    baselines
        None (zeros), scalar, ``(p,)``, ``(1, p)`` or ``(n, p)``.
    permutations
        Explicit ``(n_samples, p)`` long tensor of feature orderings; otherwise drawn from
        ``generator`` (or ``seed``).

    Returns
    -------
    torch.Tensor
        ``(n, p)``. Efficiency: every row sums to ``f(x) - f(baseline)`` (telescoping sum), for
        any number of permutations, up to rounding.
    """
    n, p = inputs.shape
    if permutations is None:
        g = make_generator(generator, seed, inputs.device)
        perms = _random_permutations(int(n_samples), p, g, inputs.device)
    else:
        perms = torch.as_tensor(permutations, dtype=torch.long, device=inputs.device)
        if perms.dim() != 2 or perms.shape[1] != p:
            raise ValueError(f"permutations must have shape (n_samples, {p}), got {tuple(perms.shape)}")
    s_total = perms.shape[0]
    base = as_baseline(baselines, inputs)
    split = split_linear_head(model) if fast else None
    width = split[0].out_features if split is not None else p
    per_row_path = p * width  # elements of one row's path through the (tail of the) model
    r_step = min(n, rows_per_chunk(per_row_path, max_batch_elements))
    s_step = min(s_total, rows_per_chunk(r_step * per_row_path, max_batch_elements))
    f_base = forward_target(model, base, target, max_batch_elements)
    attr = torch.zeros_like(inputs)
    with torch.no_grad():
        for r0, r1 in _chunks(n, r_step):
            x, b = inputs[r0:r1], base[r0:r1]
            for s0, s1 in _chunks(s_total, s_step):
                pc = perms[s0:s1]
                if split is not None:
                    outs = _path_outputs_fast(split[0], split[1], x, b, pc, target)
                else:
                    outs = _path_outputs_generic(model, x, b, pc, target)
                prev = torch.cat([f_base[r0:r1].expand(s1 - s0, 1, r1 - r0), outs[:, :-1]], dim=1)
                contrib = outs - prev  # (s, p, r), credited to feature pc[s, k]
                attr[r0:r1].index_add_(1, pc.reshape(-1), contrib.permute(2, 0, 1).reshape(r1 - r0, -1))
    return attr / s_total
