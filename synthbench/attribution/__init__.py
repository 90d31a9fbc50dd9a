"""Feature attributions of a torch model: one entry point over a registry of methods.

``attribute(name, model, inputs, target=None, **params)`` returns a tensor of the inputs' shape
``(n, *input_shape)``, like captum's ``attribute``; ``target`` is one output column for all
examples or one per example. This package is a library of its own: it knows tensors and modules,
not data sets or benchmarks (:mod:`synthbench.methods.neural` adapts it). The methods live in one
module per idea:

* :mod:`~synthbench.attribution.gradient`: ``gradient``, ``saliency``, ``input_x_gradient``,
  ``integrated_gradients``;
* :mod:`~synthbench.attribution.rules`: ``deeplift``, ``guided_backprop``, ``deconvolution``,
  ``lrp_epsilon``, ``lrp_zplus`` (layer-walking rules for Sequential MLPs and CNNs);
* :mod:`~synthbench.attribution.noise`: ``smoothgrad``, ``smoothgrad_sq``, ``vargrad``,
  ``gradient_shap``;
* :mod:`~synthbench.attribution.perturbation`: ``feature_ablation``, ``feature_permutation``,
  ``shapley_sampling``, each over single elements or the groups of a ``feature_mask``.

Speed: perturbations, integration steps and noise samples are stacked along the batch dimension
(chunks capped by ``max_batch_elements``). When the inputs are 2-D and the model starts with a
``Linear`` layer (the benchmark MLP), IG, the gradient noise ensembles and the perturbation
methods work in that layer's output space (``fast=True``, default): exact up to rounding, with
drawn noise in the ensembles differing from ``fast=False`` only in the random stream, not in
distribution.

Sign convention: positive attribution = evidence for a higher target output (the logit of
``P(y = 1)`` for the binary benchmark networks); ``saliency``, ``smoothgrad_sq`` and ``vargrad``
are >= 0.

Differentiable explanations: ``create_graph=True`` keeps the autograd graph for the methods in
:data:`ATTRIBUTION_METHODS` that declare it (``AttributionFunction.create_graph``), so that a fragility attack can
differentiate an explanation with respect
to the inputs (pass inputs that require grad) or the weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from synthbench.attribution.core import IMAGE_CPU_MAX_BATCH_ELEMENTS, eval_mode, resolve_target
from synthbench.attribution.gradient import (
    gradient,
    input_x_gradient,
    integrated_gradients,
    saliency,
)
from synthbench.attribution.noise import gradient_shap, smoothgrad, smoothgrad_sq, vargrad
from synthbench.attribution.perturbation import (
    feature_ablation,
    feature_permutation,
    shapley_sampling,
)
from synthbench.attribution.rules import (
    deconvolution,
    deeplift,
    guided_backprop,
    lrp_epsilon,
    lrp_zplus,
)
from synthbench.registry import Registry

__all__ = ["ATTRIBUTION_METHODS", "AttributionFunction", "register_attribution", "attribute", "names", "feature_scores"]

AttributionFn = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class AttributionFunction:
    """A registered attribution function and what it can take.

    Attributes
    ----------
    name : the name :func:`attribute` takes
    fn : ``fn(model, inputs, target, **params) -> Tensor`` of the inputs' shape, ``target``
        already resolved (see :func:`~synthbench.attribution.core.resolve_target`)
    create_graph : it accepts ``create_graph=True`` (the result stays differentiable)
    feature_mask : it accepts a ``feature_mask`` grouping input elements (perturbation methods)
    stochastic : it draws random numbers (noise, permutations, baselines) from a ``generator``
        it takes (or ``seed``)
    """

    name: str
    fn: AttributionFn
    create_graph: bool = False
    feature_mask: bool = False
    stochastic: bool = False


#: Every attribution function :func:`attribute` runs, by name, in registration order.
ATTRIBUTION_METHODS: Registry[AttributionFunction] = Registry("attribution method")


def register_attribution(
    name: str, fn: AttributionFn, *, create_graph: bool = False, feature_mask: bool = False, stochastic: bool = False
) -> AttributionFunction:
    """Add ``fn`` to :data:`ATTRIBUTION_METHODS` under ``name`` (ValueError when the name is taken)."""
    return ATTRIBUTION_METHODS.add(name, AttributionFunction(name, fn, create_graph, feature_mask, stochastic))


_fn: AttributionFn
for _name, _fn in (
    ("gradient", gradient),
    ("saliency", saliency),
    ("input_x_gradient", input_x_gradient),
    ("integrated_gradients", integrated_gradients),
):
    register_attribution(_name, _fn, create_graph=True)
for _name, _fn in (
    ("deeplift", deeplift),
    ("guided_backprop", guided_backprop),
    ("deconvolution", deconvolution),
    ("lrp_epsilon", lrp_epsilon),
    ("lrp_zplus", lrp_zplus),
):
    register_attribution(_name, _fn)
for _name, _fn in (
    ("smoothgrad", smoothgrad),
    ("smoothgrad_sq", smoothgrad_sq),
    ("vargrad", vargrad),
    ("gradient_shap", gradient_shap),
):
    register_attribution(_name, _fn, create_graph=True, stochastic=True)
register_attribution("feature_ablation", feature_ablation, feature_mask=True)
for _name, _fn in (("feature_permutation", feature_permutation), ("shapley_sampling", shapley_sampling)):
    register_attribution(_name, _fn, feature_mask=True, stochastic=True)


def names() -> list[str]:
    """Names accepted by :func:`attribute`, in registry order."""
    return ATTRIBUTION_METHODS.names()


def attribute(
    name: str,
    model: nn.Module,
    inputs: torch.Tensor,
    target: int | Sequence[int] | torch.Tensor | None = None,
    *,
    create_graph: bool = False,
    **params: object,
) -> torch.Tensor:
    """Attributions of ``model``'s output column ``target`` to each input element.

    Parameters
    ----------
    name
        A method of :func:`names`.
    model
        Maps ``(m, *input_shape)`` to ``(m, k)`` (or ``(m,)``). It is run in eval mode; every
        submodule's training flag is restored afterwards and no hooks or weights are changed.
    inputs
        ``(n, *input_shape)``: ``(n, p)`` rows of a table, ``(n, C, H, W)`` images; not modified.
    target
        Output column to explain: an int for every example, or one per example (a sequence or
        tensor of ``n`` ints, as captum takes it). ``None`` means column 0, the single logit of
        the binary benchmark networks (output shape ``(n, 1)``).
    create_graph
        Keep the autograd graph (functions declaring ``create_graph``): the result is not detached
        and, when ``inputs`` requires grad, depends differentiably on it.
    **params
        Method parameters (see each method's docstring), e.g. ``baselines``, ``n_steps``,
        ``n_samples``, ``generator``/``seed``, ``feature_mask`` (perturbation methods),
        ``max_batch_elements`` (cap on input elements per forward call, default ``2**24``; for
        inputs of more than two dimensions on the CPU ``2**18``, see
        :data:`~synthbench.attribution.core.IMAGE_CPU_MAX_BATCH_ELEMENTS`).

    Returns
    -------
    torch.Tensor
        The inputs' shape, dtype and device, contiguous; detached unless ``create_graph``.

    Raises
    ------
    ValueError
        For an unknown method, inputs without a batch dimension, a malformed target, or an option
        the method does not take (``create_graph``, ``feature_mask``).
    """
    method = ATTRIBUTION_METHODS[name]
    x = torch.as_tensor(inputs)
    if x.dim() < 2:
        raise ValueError(f"inputs must have shape (n, *input_shape) with at least 2 dimensions, got {tuple(x.shape)}")
    if create_graph and not method.create_graph:
        raise ValueError(f"create_graph is supported by {', '.join(_taking('create_graph'))}; not by {name!r}")
    if "feature_mask" in params and not method.feature_mask:
        raise ValueError(f"feature_mask is taken by {', '.join(_taking('feature_mask'))}; not by {name!r}")
    if not create_graph:
        x = x.detach()
    t = resolve_target(target, x.shape[0], x.device)
    if create_graph:
        params["create_graph"] = True
    if x.dim() > 2 and x.device.type == "cpu":
        params.setdefault("max_batch_elements", IMAGE_CPU_MAX_BATCH_ELEMENTS)
    with eval_mode(model):
        result = method.fn(model, x, t, **params).contiguous()
    return result if create_graph else result.detach()


def _taking(option: str) -> list[str]:
    """The registered functions that accept ``option`` (a boolean field of :class:`AttributionFunction`)."""
    return sorted(n for n, f in ATTRIBUTION_METHODS.items() if getattr(f, option))


def feature_scores(attributions: torch.Tensor) -> np.ndarray:
    """Global scores: mean absolute attribution over the examples, shape ``input_shape`` (float64)."""
    a = torch.as_tensor(attributions).detach()
    if a.dim() < 2:
        raise ValueError(f"attributions must have shape (n, *input_shape), got {tuple(a.shape)}")
    return a.abs().mean(dim=0).cpu().to(torch.float64).numpy()
