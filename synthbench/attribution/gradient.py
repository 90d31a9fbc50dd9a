"""Gradient-based attributions: gradient, saliency, input x gradient, integrated gradients.

All functions take ``inputs`` of shape ``(n, *input_shape)`` and an already resolved ``target``
(:data:`~synthbench.attribution.core.Target`) and return attributions of the inputs' shape. Signs:
a positive attribution means increasing (gradient) or having (input x gradient, IG) the input
element's value raises the target output. ``create_graph=True`` keeps the autograd graph so the
attribution can be differentiated again (with respect to the inputs, when they require grad).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

from synthbench.attribution.core import (
    DEFAULT_MAX_BATCH_ELEMENTS,
    Target,
    as_baseline,
    gradient_target,
    repeat_target,
    rows_per_chunk,
    slice_target,
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
    target: Target,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """Signed gradient ``d f_target / d x``, shape of ``inputs``."""
    return gradient_target(model, inputs, target, max_batch_elements, create_graph)


def saliency(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """Absolute gradient ``|d f_target / d x|`` (captum ``Saliency(abs=True)``), shape of ``inputs``, >= 0."""
    return gradient_target(model, inputs, target, max_batch_elements, create_graph).abs()


def input_x_gradient(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """``x * d f_target / d x`` (captum ``InputXGradient``), shape of ``inputs``."""
    return inputs * gradient_target(model, inputs, target, max_batch_elements, create_graph)


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
        Both of shape ``(n_steps,)``, float64; copies of a rule computed once per method and count
        (an attack explains a batch hundreds of times with the same rule).
    """
    alphas, weights = _rule(int(n_steps), method)
    return alphas.copy(), weights.copy()


@functools.lru_cache(maxsize=64)
def _rule(n: int, method: str) -> tuple[np.ndarray, np.ndarray]:
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
    target: Target,
    *,
    baselines: torch.Tensor | float | None = None,
    n_steps: int = 50,
    method: str = "gausslegendre",
    multiply_by_inputs: bool = True,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    create_graph: bool = False,
) -> torch.Tensor:
    """Integrated gradients ``(x - x0) * sum_k w_k grad f(x0 + alpha_k (x - x0))``.

    Parameters
    ----------
    baselines
        ``x0``: None (zeros, the black image), a scalar, ``input_shape``, ``(1, *)`` or ``(n, *)``.
    n_steps, method
        Quadrature (see :func:`ig_quadrature`); captum's defaults (50, Gauss-Legendre).
    multiply_by_inputs
        If False, return the path-averaged gradient without the ``(x - x0)`` factor (captum's
        "local" IG).
    fast
        For 2-D inputs and a model starting with a Linear layer ``z = W x + c`` (after eval
        identities), integrate in its output space: the path ``x0 + alpha (x - x0)`` maps to
        ``z0 + alpha (z - z0)``, so ``sum_k w_k grad_x f = W^T sum_k w_k grad_z tail(z_k)``; only
        the rest of the network runs on the ``n_steps * n`` points. Same result up to rounding;
        otherwise (and with ``create_graph``) the generic path.

    Returns
    -------
    torch.Tensor
        Shape of ``inputs``. With ``multiply_by_inputs`` each example's attributions sum to about
        ``f(x) - f(x0)`` (completeness), up to quadrature error.

    Notes
    -----
    All ``n_steps`` interpolation points of a chunk of examples are stacked into one batch of
    ``n_steps * rows`` examples; chunks hold at most ``max_batch_elements`` elements.
    """
    n = inputs.shape[0]
    shape = tuple(inputs.shape[1:])
    alphas_np, weights_np = ig_quadrature(n_steps, method)
    alphas = torch.as_tensor(alphas_np, dtype=inputs.dtype, device=inputs.device)
    weights = torch.as_tensor(weights_np, dtype=inputs.dtype, device=inputs.device)
    base = as_baseline(baselines, inputs)
    diff = inputs - base
    k = len(alphas_np)
    split = split_linear_head(model) if fast and inputs.dim() == 2 and not create_graph else None
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
            t = repeat_target(slice_target(target, i, i + step), k)
            grads = gradient_target(tail, points, t, max_batch_elements).view(k, -1, h)
            u[i : i + step] = torch.einsum("k,knh->nh", weights, grads)
        total = u @ head.weight.detach()
        return total * diff if multiply_by_inputs else total
    per_example = max(1, diff[0].numel() if n else 1)
    step = rows_per_chunk(k * per_example, max_batch_elements)
    view = (k, 1) + (1,) * len(shape)
    parts = []
    for i in range(0, n, step):
        b, d = base[i : i + step], diff[i : i + step]
        points = (b.unsqueeze(0) + alphas.view(view) * d.unsqueeze(0)).reshape(-1, *shape)
        t = repeat_target(slice_target(target, i, i + step), k)
        grads = gradient_target(model, points, t, max_batch_elements, create_graph).view(k, -1, *shape)
        parts.append(torch.tensordot(weights, grads, dims=1))
    total = torch.cat(parts) if parts else torch.empty_like(inputs)
    return total * diff if multiply_by_inputs else total
