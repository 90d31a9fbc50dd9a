"""Feature attributions of a torch model: one entry point over a registry of methods.

``attribute(name, model, inputs, target=None, **params)`` returns a tensor of the inputs' shape
``(n, p)``, like captum's ``attribute``. The methods live in one module per idea:

* :mod:`~synthbench.methods.attribution_gradient`: ``gradient``, ``saliency``,
  ``input_x_gradient``, ``integrated_gradients``;
* :mod:`~synthbench.methods.attribution_rules`: ``deeplift``, ``guided_backprop``,
  ``deconvolution``, ``lrp_epsilon``, ``lrp_zplus`` (layer-walking rules for Sequential MLPs);
* :mod:`~synthbench.methods.attribution_noise`: ``smoothgrad``, ``smoothgrad_sq``, ``vargrad``,
  ``gradient_shap``;
* :mod:`~synthbench.methods.attribution_perturbation`: ``feature_ablation``,
  ``feature_permutation``, ``shapley_sampling``.

Speed: perturbations, integration steps and noise samples are stacked along the batch dimension
(chunks capped by ``max_batch_elements``). When the model starts with a ``Linear`` layer (the
benchmark MLP), IG, the gradient noise ensembles and the perturbation methods work in that layer's
output space (``fast=True``, default): exact up to rounding, with drawn noise in the ensembles
differing from ``fast=False`` only in the random stream, not in distribution.

Sign convention: positive attribution = evidence for a higher target output (the logit of
``P(y = 1)`` for the benchmark MLP); ``saliency``, ``smoothgrad_sq`` and ``vargrad`` are >= 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from synthbench.methods.attribution_core import eval_mode, resolve_target
from synthbench.methods.attribution_gradient import (
    gradient,
    input_x_gradient,
    integrated_gradients,
    saliency,
)
from synthbench.methods.attribution_noise import gradient_shap, smoothgrad, smoothgrad_sq, vargrad
from synthbench.methods.attribution_perturbation import (
    feature_ablation,
    feature_permutation,
    shapley_sampling,
)
from synthbench.methods.attribution_rules import (
    deconvolution,
    deeplift,
    guided_backprop,
    lrp_epsilon,
    lrp_zplus,
)

__all__ = ["ATTRIBUTION_METHODS", "attribute", "names", "feature_scores"]

AttributionFn = Callable[..., torch.Tensor]

ATTRIBUTION_METHODS: dict[str, AttributionFn] = {
    "gradient": gradient,
    "saliency": saliency,
    "input_x_gradient": input_x_gradient,
    "integrated_gradients": integrated_gradients,
    "deeplift": deeplift,
    "guided_backprop": guided_backprop,
    "deconvolution": deconvolution,
    "lrp_epsilon": lrp_epsilon,
    "lrp_zplus": lrp_zplus,
    "smoothgrad": smoothgrad,
    "smoothgrad_sq": smoothgrad_sq,
    "vargrad": vargrad,
    "gradient_shap": gradient_shap,
    "feature_ablation": feature_ablation,
    "feature_permutation": feature_permutation,
    "shapley_sampling": shapley_sampling,
}
"""Name -> ``fn(model, inputs, target, **params)`` (``target`` already resolved to an int)."""


def names() -> list[str]:
    """Names accepted by :func:`attribute`, in registry order."""
    return list(ATTRIBUTION_METHODS)


def attribute(
    name: str,
    model: nn.Module,
    inputs: torch.Tensor,
    target: int | None = None,
    **params: object,
) -> torch.Tensor:
    """Attributions of ``model``'s output column ``target`` to each input feature.

    Parameters
    ----------
    name
        A method of :func:`names`.
    model
        Maps ``(m, p)`` to ``(m, k)`` (or ``(m,)``). It is run in eval mode; every submodule's
        training flag is restored afterwards and no hooks or weights are changed.
    inputs
        ``(n, p)``; not modified, gradients are not tracked on it.
    target
        Output column to explain. ``None`` means column 0, the single logit of the benchmark MLP
        (output shape ``(n, 1)``).
    **params
        Method parameters (see each method's docstring), e.g. ``baselines``, ``n_steps``,
        ``n_samples``, ``generator``/``seed``, ``max_batch_elements`` (cap on input elements per
        forward call, default ``2**24``).

    Returns
    -------
    torch.Tensor
        ``(n, p)``, dtype and device of ``inputs``, detached.
    """
    if name not in ATTRIBUTION_METHODS:
        raise ValueError(f"unknown attribution method {name!r}; valid: {', '.join(ATTRIBUTION_METHODS)}")
    x = torch.as_tensor(inputs).detach()
    if x.dim() != 2:
        raise ValueError(f"inputs must have shape (n, p), got {tuple(x.shape)}")
    t = resolve_target(target)
    with eval_mode(model):
        result = ATTRIBUTION_METHODS[name](model, x, t, **params)
    return result.detach()


def feature_scores(attributions: torch.Tensor) -> np.ndarray:
    """Global feature scores: mean absolute attribution over rows, shape ``(p,)`` (float64)."""
    a = torch.as_tensor(attributions).detach()
    if a.dim() != 2:
        raise ValueError(f"attributions must have shape (n, p), got {tuple(a.shape)}")
    return a.abs().mean(dim=0).cpu().to(torch.float64).numpy()
