"""Gradient-based attributions: gradient, saliency, input x gradient, integrated gradients.

All functions take ``inputs`` of shape ``(n, p)`` and an already resolved int ``target`` and return
attributions of shape ``(n, p)``. Signs: a positive attribution means increasing (gradient) or
having (input x gradient, IG) the feature value raises the target output.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from synthbench.methods.attribution_core import (
    DEFAULT_MAX_BATCH_ELEMENTS,
    as_baseline,
    gradient_target,
    rows_per_chunk,
    split_linear_head,
)

__all__ = [
    "IG_METHODS",
    "ig_quadrature",
    "gradient",
    "saliency",
    "input_x_gradient",
    "integrated_gradients",
]

IG_METHODS = ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid")


def gradient(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Signed gradient ``d f_target / d x``, shape ``(n, p)``."""
    return gradient_target(model, inputs, target, max_batch_elements)


def saliency(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Absolute gradient ``|d f_target / d x|`` (captum ``Saliency(abs=True)``), shape ``(n, p)``, >= 0."""
    return gradient_target(model, inputs, target, max_batch_elements).abs()


def input_x_gradient(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """``x * d f_target / d x`` (captum ``InputXGradient``), shape ``(n, p)``."""
    return inputs * gradient_target(model, inputs, target, max_batch_elements)


def ig_quadrature(n_steps: int, method: str = "gausslegendre") -> tuple[np.ndarray, np.ndarray]:
    """Integration points ``alpha`` in ``[0, 1]`` and weights for integrated gradients.

    Same rules as captum's ``approximation_methods``:

    * ``gausslegendre``: Gauss-Legendre nodes ``t_k`` and weights ``w_k`` on ``[-1, 1]`` mapped to
      ``alpha_k = (1 + t_k) / 2`` and weights ``w_k / 2`` (they sum to 1).
    * ``riemann_left``/``right``/``middle``: weights ``1 / n``; points ``k / n`` (k = 0..n-1),
      ``k / n`` (k = 1..n) and ``(k + 1/2) / n``.
    * ``riemann_trapezoid``: points ``linspace(0, 1, n)``, weights ``1 / n`` with the two end
      weights halved (captum's convention; the weights sum to ``1 - 1/n``).

    Returns
    -------
    alphas, weights : np.ndarray
        Both of shape ``(n_steps,)``, float64.
    """
    n = int(n_steps)
    if n < 2:
        raise ValueError("n_steps must be at least 2")
    if method == "gausslegendre":
        t, w = np.polynomial.legendre.leggauss(n)
        return 0.5 * (1.0 + t), 0.5 * w
    weights = np.full(n, 1.0 / n)
    if method == "riemann_trapezoid":
        weights[0] /= 2
        weights[-1] /= 2
        return np.linspace(0.0, 1.0, n), weights
    if method == "riemann_left":
        return np.linspace(0.0, 1.0 - 1.0 / n, n), weights
    if method == "riemann_right":
        return np.linspace(1.0 / n, 1.0, n), weights
    if method == "riemann_middle":
        return np.linspace(0.5 / n, 1.0 - 0.5 / n, n), weights
    raise ValueError(f"unknown integration method {method!r}; valid: {', '.join(IG_METHODS)}")


def integrated_gradients(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    baselines: torch.Tensor | float | None = None,
    n_steps: int = 50,
    method: str = "gausslegendre",
    multiply_by_inputs: bool = True,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Integrated gradients ``(x - x0) * sum_k w_k grad f(x0 + alpha_k (x - x0))``.

    Parameters
    ----------
    baselines
        ``x0``: None (zeros), a scalar, ``(p,)``, ``(1, p)`` or ``(n, p)``.
    n_steps, method
        Quadrature (see :func:`ig_quadrature`); captum's defaults (50, Gauss-Legendre).
    multiply_by_inputs
        If False, return the path-averaged gradient without the ``(x - x0)`` factor (captum's
        "local" IG).
    fast
        If the model starts with a Linear layer ``z = W x + c`` (after eval identities), integrate
        in its output space: the path ``x0 + alpha (x - x0)`` maps to ``z0 + alpha (z - z0)``, so
        ``sum_k w_k grad_x f = W^T sum_k w_k grad_z tail(z_k)``; only the rest of the network runs
        on the ``n_steps * n`` points. Same result up to rounding; otherwise the generic path.

    Returns
    -------
    torch.Tensor
        Shape ``(n, p)``. With ``multiply_by_inputs`` the rows sum to about
        ``f(x) - f(x0)`` (completeness), up to quadrature error.

    Notes
    -----
    All ``n_steps`` interpolation points of a chunk of rows are stacked into one batch of
    ``n_steps * rows`` rows; chunks hold at most ``max_batch_elements`` elements.
    """
    n, p = inputs.shape
    alphas_np, weights_np = ig_quadrature(n_steps, method)
    alphas = torch.as_tensor(alphas_np, dtype=inputs.dtype, device=inputs.device)
    weights = torch.as_tensor(weights_np, dtype=inputs.dtype, device=inputs.device)
    base = as_baseline(baselines, inputs)
    diff = inputs - base
    k = len(alphas_np)
    split = split_linear_head(model) if fast else None
    if split is not None:
        head, tail = split
        with torch.no_grad():
            z_x, z_b = head(inputs), head(base)
        h = z_x.shape[1]
        step = rows_per_chunk(k * h, max_batch_elements)
        u = torch.empty_like(z_x)
        for i in range(0, n, step):
            b, d = z_b[i : i + step], z_x[i : i + step] - z_b[i : i + step]
            points = (b.unsqueeze(0) + alphas.view(k, 1, 1) * d.unsqueeze(0)).reshape(-1, h)
            grads = gradient_target(tail, points, target, max_batch_elements).view(k, -1, h)
            u[i : i + step] = torch.einsum("k,knh->nh", weights, grads)
        total = u @ head.weight.detach()
        return total * diff if multiply_by_inputs else total
    step = rows_per_chunk(k * p, max_batch_elements)
    total = torch.empty_like(inputs)
    for i in range(0, n, step):
        b, d = base[i : i + step], diff[i : i + step]
        points = (b.unsqueeze(0) + alphas.view(k, 1, 1) * d.unsqueeze(0)).reshape(-1, p)
        grads = gradient_target(model, points, target, max_batch_elements).view(k, -1, p)
        total[i : i + step] = torch.einsum("k,knp->np", weights, grads)
    return total * diff if multiply_by_inputs else total
