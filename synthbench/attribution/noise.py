"""Noise ensembles: SmoothGrad, SmoothGrad-squared, VarGrad (NoiseTunnel-style) and GradientSHAP.

All noisy copies of the inputs ``(n, *input_shape)`` are stacked along the batch dimension
(sample-major, ``(n_samples * n, *input_shape)``) and evaluated in chunks of at most
``max_batch_elements`` elements.
Random draws come from an explicit ``torch.Generator`` (``generator=``, or one seeded from
``seed``); torch's global RNG is never used.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from synthbench.attribution.core import (
    DEFAULT_MAX_BATCH_ELEMENTS,
    Target,
    gradient_target,
    make_generator,
    repeat_target,
    rows_per_chunk,
    split_linear_head,
)
from synthbench.attribution.gradient import (
    gradient,
    input_x_gradient,
    integrated_gradients,
    saliency,
)
from synthbench.attribution.rules import deconvolution, deeplift, guided_backprop

__all__ = ["NOISE_BASES", "GRAPH_BASES", "noise_sigma", "smoothgrad", "smoothgrad_sq", "vargrad", "gradient_shap"]

NOISE_BASES: dict[str, Callable[..., torch.Tensor]] = {
    "gradient": gradient,
    "saliency": saliency,
    "input_x_gradient": input_x_gradient,
    "integrated_gradients": integrated_gradients,
    "guided_backprop": guided_backprop,
    "deconvolution": deconvolution,
    "deeplift": deeplift,
}
"""Base methods the noise ensembles accept (``base=`` name)."""

GRAPH_BASES = frozenset({"gradient", "saliency", "input_x_gradient", "integrated_gradients"})
"""Bases that can keep the autograd graph (``create_graph=True``)."""


def noise_sigma(inputs: torch.Tensor, noise_level: float, per_feature: bool = True) -> torch.Tensor:
    """Noise standard deviation ``noise_level * (max - min)`` of ``inputs``.

    Parameters
    ----------
    inputs
        ``(n, *input_shape)``.
    per_feature
        True: the range of each input element over the ``n`` examples, shape ``input_shape``
        (columns of a tabular data set have different scales); False: the global range, a 0-d
        tensor (images, whose pixels share one scale). A constant element (or ``n == 1`` with
        ``per_feature``) gets ``sigma = 0``.
    """
    if per_feature:
        return noise_level * (inputs.amax(dim=0) - inputs.amin(dim=0))
    return noise_level * (inputs.max() - inputs.min())


def _sigma(inputs: torch.Tensor, noise_level: float, stdevs: float | None, per_feature: bool) -> torch.Tensor:
    """Noise sd: absolute ``stdevs`` (0-d) if given, else :func:`noise_sigma`."""
    if stdevs is not None:
        return torch.as_tensor(float(stdevs), dtype=inputs.dtype, device=inputs.device)
    return noise_sigma(inputs, noise_level, per_feature)


def _input_noise(
    inputs: torch.Tensor, n_samples: int, sigma: torch.Tensor, generator: torch.Generator | None, seed: int
) -> torch.Tensor:
    """The noise of ``n_samples`` copies of ``inputs`` drawn in input space, ``(n_samples, *inputs.shape)``:
    ``sigma`` times standard normals from the method's generator (the one stream both paths draw)."""
    g = make_generator(generator, seed, inputs.device)
    return sigma * torch.randn((int(n_samples), *inputs.shape), generator=g, dtype=inputs.dtype, device=inputs.device)


def _projected_noise_factor(weight: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """``L`` with ``L L^T = W diag(sigma^2) W^T``: the law of ``W eps`` for ``eps ~ N(0, diag sigma^2)``.

    ``weight`` is ``(h, p)``; returns ``(h, h)`` (symmetric square root, eigenvalues clamped at 0).
    """
    w = weight.to(torch.float64)
    s2 = sigma.to(torch.float64) ** 2
    cov = (w * s2) @ w.t()
    evals, evecs = torch.linalg.eigh(cov)
    return (evecs * evals.clamp(min=0).sqrt()).to(weight.dtype)


def _gradient_moments_fast(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    noise: torch.Tensor | None,
    n_samples: int,
    sigma: torch.Tensor,
    generator: torch.Generator | None,
    seed: int,
    max_batch_elements: int,
    second: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """Moments of the gradient under input noise, computed after the first Linear layer (the second
    moment None when ``second`` is False).

    With ``z = W x + c`` first, ``grad_x f(x + eps) = W^T u`` where ``u = grad_z tail(z + W eps)``.
    Only the ``h``-dimensional ``W eps`` is needed: from explicit noise it is ``noise @ W^T``;
    otherwise it is drawn directly from its Gaussian law (``h`` normals per sample and row instead
    of ``p``; a different random stream from the generic path, same distribution) when factorising
    that ``h x h`` law costs less than drawing ``p`` normals (``h^2 < n_samples * n * p``), else
    in input space exactly as the generic path draws it (same stream, same values; a first layer
    of 7,000 basis units on 1,000 inputs spent 69 s factorising its law). Then
    ``E[grad] = W^T E[u]`` and ``E[grad_j^2]``: the mean square of ``W^T u`` when the ``(S, n, p)``
    per-sample gradients fit in ``max_batch_elements``, else ``sum_ab W_aj W_bj E[u_a u_b]`` from the
    ``(n, h, h)`` second moments of ``u``.
    Returns None when the model does not start with a Linear layer.
    """
    split = split_linear_head(model)
    if split is None:
        return None
    head, tail = split
    n, p = inputs.shape
    w = head.weight.detach()
    h = w.shape[0]
    with torch.no_grad():
        z = head(inputs)
        if noise is None and h * h >= int(n_samples) * n * p:  # the h x h law costs more than p normals
            noise = _input_noise(inputs, n_samples, sigma, generator, seed)
        if noise is not None:
            z_noise = noise @ w.t()  # (S, n, h)
        else:
            g = make_generator(generator, seed, inputs.device)
            xi = torch.randn((int(n_samples), n, h), generator=g, dtype=inputs.dtype, device=inputs.device)
            z_noise = xi @ _projected_noise_factor(w, sigma).t()
    s_total = z_noise.shape[0]
    u = gradient_target(
        tail, (z.unsqueeze(0) + z_noise).reshape(-1, h), repeat_target(target, s_total), max_batch_elements
    )
    u = u.view(s_total, n, h)
    mean = u.mean(dim=0) @ w
    if not second:
        return mean, None
    if s_total * n * p <= max_batch_elements:  # the per-sample gradients fit: square them directly
        return mean, (u @ w).square().mean(dim=0)
    moments = torch.einsum("sna,snb->nab", u, u) / s_total  # (n, h, h)
    mean_sq = torch.empty_like(inputs)
    step = rows_per_chunk(h * p, max_batch_elements)
    for i in range(0, n, step):
        mean_sq[i : i + step] = ((moments[i : i + step] @ w) * w).sum(dim=1)
    return mean, mean_sq


def _noise_moments(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    base: str,
    base_params: dict | None,
    n_samples: int,
    noise_level: float,
    stdevs: float | None,
    per_feature: bool,
    noise: torch.Tensor | None,
    generator: torch.Generator | None,
    seed: int,
    fast: bool,
    max_batch_elements: int,
    create_graph: bool = False,
    second: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Mean and mean square over noise samples of ``base`` attributions, each of the inputs' shape (the
    mean square None when ``second`` is False: SmoothGrad needs the mean only)."""
    if base not in NOISE_BASES:
        raise ValueError(f"unknown base method {base!r}; valid: {', '.join(NOISE_BASES)}")
    if create_graph and base not in GRAPH_BASES:
        raise ValueError(f"create_graph needs a gradient base ({', '.join(sorted(GRAPH_BASES))}), got {base!r}")
    method = NOISE_BASES[base]
    params = dict(base_params or {})
    n = inputs.shape[0]
    shape = tuple(inputs.shape[1:])
    if noise is not None:
        noise = torch.as_tensor(noise, dtype=inputs.dtype, device=inputs.device)
        if noise.dim() != inputs.dim() + 1 or tuple(noise.shape[1:]) != tuple(inputs.shape) or noise.shape[0] < 1:
            raise ValueError(
                f"noise must have shape (n_samples >= 1, {', '.join(map(str, inputs.shape))}), got {tuple(noise.shape)}"
            )
    elif int(n_samples) < 1:
        raise ValueError("need at least one noise sample")
    sigma = _sigma(inputs, noise_level, stdevs, per_feature)
    if fast and base == "gradient" and not params and inputs.dim() == 2 and not create_graph:
        moments = _gradient_moments_fast(
            model, inputs, target, noise, n_samples, sigma, generator, seed, max_batch_elements, second
        )
        if moments is not None:
            return moments
    if noise is None:
        noise = _input_noise(inputs, n_samples, sigma, generator, seed)
    s_total = noise.shape[0]
    cost = int(params.get("n_steps", 50)) if base == "integrated_gradients" else 1  # rows per row
    # Samples per chunk: the base method chunks further if one sample alone is too large.
    s_step = rows_per_chunk(inputs.numel() * cost, max_batch_elements)
    per_row = {
        k: v
        for k, v in params.items()
        if isinstance(v, torch.Tensor) and v.dim() == inputs.dim() and v.shape[0] == n and n > 1
    }
    if create_graph:
        params["create_graph"] = True
    total = torch.zeros_like(inputs)
    total_sq = torch.zeros_like(inputs)
    for s0 in range(0, s_total, s_step):
        chunk = noise[s0 : s0 + s_step]
        s = chunk.shape[0]
        noisy = (inputs.unsqueeze(0) + chunk).reshape(s * n, *shape)
        call = dict(params)
        for k, v in per_row.items():
            call[k] = v.repeat(s, *([1] * (v.dim() - 1)))
        attr = method(model, noisy, repeat_target(target, s), max_batch_elements=max_batch_elements, **call)
        attr = attr.view(s, n, *shape)
        total = total + attr.sum(dim=0)
        if second:
            total_sq = total_sq + attr.pow(2).sum(dim=0)
    return total / s_total, (total_sq / s_total if second else None)


def smoothgrad(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    base: str = "gradient",
    base_params: dict | None = None,
    n_samples: int = 50,
    noise_level: float = 0.15,
    stdevs: float | None = None,
    per_feature: bool = True,
    noise: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """SmoothGrad: mean of ``base`` attributions at ``x + noise`` over ``n_samples`` draws.

    Parameters
    ----------
    base, base_params
        Base method name (:data:`NOISE_BASES`) and its keyword parameters. A 2-D tensor parameter
        with ``n`` rows (e.g. per-row ``baselines``) is repeated for every noise sample.
    noise_level, per_feature
        Noise sd ``sigma = noise_level * (max - min)`` of the inputs, per column by default
        (see :func:`noise_sigma`).
    stdevs
        Absolute noise sd; overrides ``noise_level`` (captum ``NoiseTunnel(stdevs=...)``).
    noise
        Explicit noise ``(n_samples, n, *input_shape)``; overrides the draw (sample ``s`` of
        example ``i`` is ``x_i + noise[s, i]``).
    generator, seed
        Source of the noise draw (``randn`` of shape ``(n_samples, n, *input_shape)``; on the fast path
        ``(n_samples, n, h)``, see ``fast``).
    fast
        For ``base="gradient"`` without ``base_params`` on a model starting with a Linear layer
        (``h`` units): compute everything after that layer (see ``_gradient_moments_fast``). With
        explicit ``noise`` the result equals the generic path up to rounding; with drawn noise the
        draws differ from ``fast=False`` but have the same distribution.

    Returns
    -------
    torch.Tensor
        The inputs' shape, same sign convention as the base method.
    """
    mean, _ = _noise_moments(
        model,
        inputs,
        target,
        base=base,
        base_params=base_params,
        n_samples=n_samples,
        noise_level=noise_level,
        stdevs=stdevs,
        per_feature=per_feature,
        noise=noise,
        generator=generator,
        seed=seed,
        fast=fast,
        max_batch_elements=max_batch_elements,
        create_graph=create_graph,
        second=False,
    )
    return mean


def smoothgrad_sq(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    base: str = "gradient",
    base_params: dict | None = None,
    n_samples: int = 50,
    noise_level: float = 0.15,
    stdevs: float | None = None,
    per_feature: bool = True,
    noise: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """SmoothGrad-squared: mean of squared ``base`` attributions; the inputs' shape, >= 0.

    Parameters as :func:`smoothgrad`.
    """
    _, mean_sq = _noise_moments(
        model,
        inputs,
        target,
        base=base,
        base_params=base_params,
        n_samples=n_samples,
        noise_level=noise_level,
        stdevs=stdevs,
        per_feature=per_feature,
        noise=noise,
        generator=generator,
        seed=seed,
        fast=fast,
        max_batch_elements=max_batch_elements,
        create_graph=create_graph,
    )
    assert mean_sq is not None  # second moments are computed unless second=False
    return mean_sq


def vargrad(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    base: str = "gradient",
    base_params: dict | None = None,
    n_samples: int = 50,
    noise_level: float = 0.15,
    stdevs: float | None = None,
    per_feature: bool = True,
    noise: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """VarGrad: population variance ``E[a^2] - E[a]^2`` of ``base`` attributions; the inputs' shape, >= 0.

    Parameters as :func:`smoothgrad` (same formula as captum's ``nt_type="vargrad"``).
    """
    mean, mean_sq = _noise_moments(
        model,
        inputs,
        target,
        base=base,
        base_params=base_params,
        n_samples=n_samples,
        noise_level=noise_level,
        stdevs=stdevs,
        per_feature=per_feature,
        noise=noise,
        generator=generator,
        seed=seed,
        fast=fast,
        max_batch_elements=max_batch_elements,
        create_graph=create_graph,
    )
    assert mean_sq is not None  # second moments are computed unless second=False
    return mean_sq - mean * mean


def gradient_shap(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    baselines: torch.Tensor | None = None,
    n_samples: int = 50,
    stdevs: float = 0.0,
    generator: torch.Generator | None = None,
    seed: int = 0,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """GradientSHAP / expected gradients: ``E[(x~ - b) * grad f(b + alpha (x~ - b))]``.

    For every example and each of ``n_samples`` draws: a baseline ``b`` drawn uniformly from the
    examples of ``baselines``, ``x~ = x + N(0, stdevs^2)`` and ``alpha ~ U(0, 1)`` (as captum's
    ``GradientShap``).

    Parameters
    ----------
    baselines
        Background distribution, ``(m, *input_shape)`` (or ``input_shape``); None uses the inputs
        themselves.

    Returns
    -------
    torch.Tensor
        The inputs' shape; in expectation an example's attributions sum to ``f(x) - E_b f(b)``
        (for ``stdevs = 0``).
    """
    n = inputs.shape[0]
    shape = tuple(inputs.shape[1:])
    background = inputs if baselines is None else torch.as_tensor(baselines, dtype=inputs.dtype, device=inputs.device)
    background = background.reshape(-1, *shape)
    g = make_generator(generator, seed, inputs.device)
    s_total = int(n_samples)
    idx = torch.randint(0, background.shape[0], (s_total, n), generator=g, device=inputs.device)
    alphas = torch.rand((s_total, n) + (1,) * len(shape), generator=g, dtype=inputs.dtype, device=inputs.device)
    noise = None
    if stdevs:
        noise = float(stdevs) * torch.randn(
            (s_total, *inputs.shape), generator=g, dtype=inputs.dtype, device=inputs.device
        )
    s_step = rows_per_chunk(inputs.numel(), max_batch_elements)
    total = torch.zeros_like(inputs)
    for s0 in range(0, s_total, s_step):
        s1 = min(s_total, s0 + s_step)
        x = inputs.unsqueeze(0).expand(s1 - s0, *inputs.shape)
        if noise is not None:
            x = x + noise[s0:s1]
        b = background[idx[s0:s1]]
        diff = x - b
        points = (b + alphas[s0:s1] * diff).reshape(-1, *shape)
        grads = gradient_target(model, points, repeat_target(target, s1 - s0), max_batch_elements, create_graph)
        total = total + (grads.view(s1 - s0, n, *shape) * diff).sum(dim=0)
    return total / s_total
