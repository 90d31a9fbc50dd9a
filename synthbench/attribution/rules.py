"""Layer-walking rules for Sequential networks: DeepLIFT (rescale), guided backprop, deconvnet, LRP.

The model must be a (possibly nested) ``nn.Sequential`` of elementwise activations (see
:data:`~synthbench.attribution.core.ELEMENTWISE_ACTIVATIONS`) and layers that are affine in eval
mode (``Linear``, ``Conv1d/2d/3d``, ``Flatten``, average pooling, batch norm: see
:data:`~synthbench.attribution.core.LINEAR_OPS`), plus max pooling for guided backprop,
deconvolution and LRP, ending in a ``Linear``; eval-mode identities (``GaussianNoise``,
``Dropout``, ``Identity``) are skipped. The rules are applied by an explicit backward pass over
the layers: no hooks are registered and the model is never modified. Affine layers pass the
backward signal through their transpose (``g @ W`` for ``Linear``, the autograd vector-Jacobian
product otherwise); max pooling routes it to each window's maximum, as the gradient does (captum
hooks only the nonlinearities, so its guided backprop and deconvolution do the same).

Backward rules through an activation ``y = f(x)`` with incoming signal ``g`` (d target / d y):

========================  ==========================  ==============================
method                    ReLU / LeakyReLU(a)         Softplus / other
========================  ==========================  ==============================
gradient (reference)      ``g * f'(x)``               ``g * f'(x)``
guided_backprop           ``max(g, 0) * f'(x)``       ``max(g, 0) * f'(x)`` (sigmoid)
deconvolution             ``f(g)`` = ``relu(g)`` /    ``relu(g)`` (Softplus only)
                          ``leaky_relu(g, a)``
deeplift (rescale)        ``g * dy / dx``             ``g * dy / dx``
LRP                       ``g`` (relevance passes)    ``g`` (relevance passes)
========================  ==========================  ==============================

* Guided backprop keeps the forward gating of the true derivative ``f'(x)`` (1 or the slope ``a``
  for LeakyReLU; ``sigmoid(beta x)`` for Softplus) and in addition lets only positive backward
  signal through. On ReLU this is captum's ``relu(g * 1[x > 0])``.
* Deconvolution ignores the forward input and applies the layer's own rectification to the
  backward signal: ReLU -> ``relu(g)`` (captum), LeakyReLU -> ``leaky_relu(g, a)`` (the
  activation applied to the signal). Softplus is a smooth ReLU; applying softplus itself would
  create signal from nothing (``softplus(0) = log 2`` and the output would not scale with ``g``),
  so its rectifier limit ``relu(g)`` is used.
* captum's GuidedBackprop/Deconvolution hook only ``nn.ReLU`` modules, so on LeakyReLU or
  Softplus networks they silently return the plain gradient; these versions act on the model's
  actual nonlinearity. ``rules_on="relu_only"`` reproduces captum's behaviour (the rule at
  ``nn.ReLU`` modules, the ordinary derivative everywhere else), as the 2023 benchmark ran it.
* DeepLIFT's rescale rule needs a reference-difference rule at max pooling that this walker
  does not implement; networks with max pooling are refused (use average pooling).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from synthbench.attribution.core import (
    DEFAULT_MAX_BATCH_ELEMENTS,
    ELEMENTWISE_ACTIVATIONS,
    LINEAR_OPS,
    Target,
    activation_derivative,
    as_baseline,
    fast_layout,
    rows_per_chunk,
    sequential_ops,
    slice_target,
    vjp,
)

__all__ = ["guided_backprop", "deconvolution", "deeplift", "lrp_epsilon", "lrp_zplus"]

_ActRule = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]


def _trace(ops: list[nn.Module], x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Inputs of each op and the final output of the network on ``x``."""
    seen = []
    x = fast_layout(x)
    with torch.no_grad():
        for op in ops:
            seen.append(x)
            x = op(x)
    return seen, x


_Link = tuple[torch.Tensor, torch.Tensor]


def _trace_links(ops: list[nn.Module], x: torch.Tensor) -> tuple[list[torch.Tensor], dict[int, _Link], torch.Tensor]:
    """:func:`_trace`, also keeping the autograd graph of each non-Linear affine or pooling op.

    ``links[k] = (input leaf, output)`` of op ``k``: its transpose is then one backward call on the
    recorded graph instead of a second forward pass (convolutions are the costly layers).
    """
    seen, links = [], {}
    x = fast_layout(x)
    for k, op in enumerate(ops):
        seen.append(x)
        if isinstance(op, (nn.Linear, *ELEMENTWISE_ACTIVATIONS)):
            with torch.no_grad():
                x = op(x)
        else:
            with torch.enable_grad():
                leaf = x.detach().requires_grad_(True)
                out = op(leaf)
            links[k] = (leaf, out)
            x = out.detach()
    return seen, links, x


def _seed_signal(output: torch.Tensor, target: Target) -> torch.Tensor:
    """One-hot backward signal on each row's target column, shape of ``output`` (m, k)."""
    g = torch.zeros_like(output)
    if isinstance(target, int):
        if target >= output.shape[1]:
            raise ValueError(f"target {target} out of range for {output.shape[1]} output columns")
        g[:, target] = 1.0
    else:
        g.scatter_(1, target.view(-1, 1), 1.0)
    return g


def _transpose(op: nn.Module, link: _Link | None, g: torch.Tensor) -> torch.Tensor:
    """The backward signal through a non-activation layer: ``g @ W`` for Linear, else the vector-Jacobian
    product on the graph :func:`_trace_links` recorded."""
    if isinstance(op, nn.Linear):
        return g @ op.weight.detach()
    if link is None:
        raise ValueError(f"no recorded graph to transpose {type(op).__name__} through")
    leaf, out = link
    (d,) = torch.autograd.grad(out, leaf, g, retain_graph=False)
    return d


def _modified_backward(
    model: nn.Module, inputs: torch.Tensor, target: Target, act_rule: _ActRule, max_batch_elements: int
) -> torch.Tensor:
    """Backward pass with affine and pooling layers as usual and ``act_rule`` at activations."""
    ops = sequential_ops(model)
    n = inputs.shape[0]
    step = rows_per_chunk(inputs[0].numel() if n else 1, max_batch_elements)
    result = torch.empty_like(inputs)
    for i in range(0, n, step):
        seen, links, out = _trace_links(ops, inputs[i : i + step])
        g = _seed_signal(out, slice_target(target, i, i + step))
        for k in range(len(ops) - 1, -1, -1):
            op = ops[k]
            g = act_rule(op, seen[k], g) if isinstance(op, ELEMENTWISE_ACTIVATIONS) else _transpose(op, links.get(k), g)
        result[i : i + step] = g
    return result


def _guided_rule(act: nn.Module, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    if not isinstance(act, (nn.ReLU, nn.LeakyReLU, nn.Softplus)):
        raise TypeError(f"guided backprop has no rule for {type(act).__name__}")
    return g.clamp(min=0) * activation_derivative(act, x)


def _deconv_rule(act: nn.Module, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    if isinstance(act, nn.LeakyReLU):
        return F.leaky_relu(g, act.negative_slope)
    if isinstance(act, (nn.ReLU, nn.Softplus)):
        return g.clamp(min=0)
    raise TypeError(f"deconvolution has no rule for {type(act).__name__}")


def _relu_only(rule: _ActRule) -> _ActRule:
    """``rule`` at ``nn.ReLU`` modules, the ordinary chain rule ``g * f'(x)`` at any other activation (captum)."""

    def applied(act: nn.Module, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return rule(act, x, g) if isinstance(act, nn.ReLU) else g * activation_derivative(act, x)

    return applied


RulesOn = Literal["all", "relu_only"]


def _rule(rule: _ActRule, rules_on: RulesOn) -> _ActRule:
    if rules_on not in ("all", "relu_only"):
        raise ValueError(f"rules_on must be 'all' or 'relu_only', got {rules_on!r}")
    return rule if rules_on == "all" else _relu_only(rule)


def guided_backprop(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    rules_on: RulesOn = "all",
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Guided backpropagation: backward signal ``max(g, 0) * f'(x)`` at each activation.

    Returns the inputs' shape; equals captum's ``GuidedBackprop`` on ReLU networks. See the module
    docstring for the LeakyReLU / Softplus rules; ``rules_on="relu_only"`` is captum's
    behaviour on any network (the plain gradient where no activation is an ``nn.ReLU``).
    """
    return _modified_backward(model, inputs, target, _rule(_guided_rule, rules_on), max_batch_elements)


def deconvolution(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    rules_on: RulesOn = "all",
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Deconvnet: the activation's rectifier applied to the backward signal, ignoring ``x``.

    ReLU/Softplus: ``relu(g)``; LeakyReLU(a): ``leaky_relu(g, a)``. Returns the inputs' shape;
    equals captum's ``Deconvolution`` on ReLU networks; ``rules_on="relu_only"`` is captum's
    behaviour on any network.
    """
    return _modified_backward(model, inputs, target, _rule(_deconv_rule, rules_on), max_batch_elements)


def deeplift(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    baselines: torch.Tensor | float | None = None,
    eps: float = 1e-10,
    multiply_by_inputs: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """DeepLIFT with the rescale rule, computed layer by layer.

    At each activation the multiplier is ``(f(x) - f(x0)) / (x - x0)`` for the unit's input on the
    row and on the baseline; where ``|x - x0| < eps`` it is the gradient ``f'(x)`` at the input
    (captum's rule, same default ``eps = 1e-10``). Affine layers pass the multipliers through their
    transpose; max pooling is refused (``TypeError``).

    Parameters
    ----------
    baselines
        ``x0``: None (zeros), a scalar, ``input_shape``, ``(1, *)`` or ``(n, *)``.
    multiply_by_inputs
        True: ``(x - x0) * multipliers`` (captum default); False: the multipliers alone.

    Returns
    -------
    torch.Tensor
        The inputs' shape; with ``multiply_by_inputs`` each example sums to ``f(x) - f(x0)`` exactly
        (up to rounding and the ``eps`` fallback) for these networks.
    """
    ops = sequential_ops(model, allow=LINEAR_OPS)
    n = inputs.shape[0]
    base = as_baseline(baselines, inputs)
    step = rows_per_chunk(2 * (inputs[0].numel() if n else 1), max_batch_elements)
    mult = torch.empty_like(inputs)
    for i in range(0, n, step):
        seen_x, links, out = _trace_links(ops, inputs[i : i + step])
        seen_b, _ = _trace(ops, base[i : i + step])
        g = _seed_signal(out, slice_target(target, i, i + step))
        for k in range(len(ops) - 1, -1, -1):
            op = ops[k]
            if not isinstance(op, ELEMENTWISE_ACTIVATIONS):
                g = _transpose(op, links.get(k), g)
                continue
            x_in, b_in = seen_x[k], seen_b[k]
            x_out, b_out = seen_x[k + 1], seen_b[k + 1]
            d_in = x_in - b_in
            ratio = (x_out - b_out) / torch.where(d_in == 0, torch.ones_like(d_in), d_in)
            g = g * torch.where(d_in.abs() < eps, activation_derivative(op, x_in), ratio)
        mult[i : i + step] = g
    return mult * (inputs - base) if multiply_by_inputs else mult


def _lrp(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    positive_weights: bool,
    use_bias: bool,
    epsilon: float,
    max_batch_elements: int,
) -> torch.Tensor:
    """Relevance propagation; see :func:`lrp_epsilon` and :func:`lrp_zplus`."""
    ops = sequential_ops(model)
    n = inputs.shape[0]
    step = rows_per_chunk(inputs[0].numel() if n else 1, max_batch_elements)
    result = torch.empty_like(inputs)
    for i in range(0, n, step):
        seen, links, out = _trace_links(ops, inputs[i : i + step])
        relevance = _seed_signal(out, slice_target(target, i, i + step)) * out
        for k in range(len(ops) - 1, -1, -1):
            op = ops[k]
            if isinstance(op, ELEMENTWISE_ACTIVATIONS):
                continue  # relevance passes activations unchanged
            same_map = not positive_weights and (use_bias or getattr(op, "bias", None) is None)
            relevance = _lrp_layer(
                op, seen[k], relevance, positive_weights, use_bias, epsilon, links.get(k) if same_map else None
            )
        result[i : i + step] = relevance
    return result


def _lrp_layer(
    op: nn.Module,
    a: torch.Tensor,
    relevance: torch.Tensor,
    positive_weights: bool,
    use_bias: bool,
    epsilon: float,
    link: _Link | None = None,
) -> torch.Tensor:
    """Relevance of a layer's input ``a`` from its output relevance: ``a * J^T (R / (z + eps sign z))``.

    ``z`` is the layer's output on ``a``, with the weights clamped at 0 for the z+ rule and the
    bias dropped unless ``use_bias``; ``J^T`` is the transpose of the (possibly clamped) affine map.
    Layers without weights (pooling, flatten) use their own output as ``z`` and their vector-
    Jacobian product, which is captum's epsilon rule at those layers. ``link``: the layer's recorded
    forward graph when ``z`` is its plain output (:func:`_trace_links`), so nothing is recomputed.
    """
    if link is not None and not isinstance(op, nn.Linear):
        leaf, z = link
        sign = torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))
        (back,) = torch.autograd.grad(z, leaf, (relevance / (z.detach() + epsilon * sign)).detach())
        return a * back
    weight = getattr(op, "weight", None)
    if isinstance(op, nn.Linear):
        w = op.weight.detach()
        if positive_weights:
            w = w.clamp(min=0)
        bias = op.bias.detach() if (use_bias and op.bias is not None) else None
        z = F.linear(a, w, bias)
        sign = torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))
        return a * ((relevance / (z + epsilon * sign)) @ w)
    if isinstance(op, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        w = op.weight.detach().clamp(min=0) if positive_weights else op.weight.detach()
        bias = op.bias.detach() if (use_bias and op.bias is not None) else None

        def layer(x: torch.Tensor) -> torch.Tensor:
            return op._conv_forward(x, w, bias)
    elif weight is not None and positive_weights:
        raise TypeError(f"the z+ rule has no definition for {type(op).__name__}")
    else:
        layer = op
    with torch.no_grad():
        z = layer(a)
    sign = torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))
    return a * vjp(layer, a, relevance / (z + epsilon * sign))


def lrp_epsilon(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    epsilon: float = 1e-9,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """LRP-epsilon on every Linear layer (captum ``LRP`` with its default ``EpsilonRule``).

    Starting from ``R = f_target(x)`` on the target output, each affine layer ``z = W a + b``
    (Linear, convolution; pooling and flatten layers likewise with their own output as ``z``)
    redistributes ``R_j = a_j * sum_i W_ij R_i / (z_i + epsilon * sign(z_i))`` with
    ``sign(0) = +1``; activations pass relevance unchanged. Default ``epsilon = 1e-9`` as captum.

    Returns
    -------
    torch.Tensor
        The inputs' shape; positive relevance supports the target output. Biases absorb part of
        the relevance, so an example's relevance sums to ``f(x)`` only for bias-free networks.
    """
    return _lrp(
        model,
        inputs,
        target,
        positive_weights=False,
        use_bias=True,
        epsilon=epsilon,
        max_batch_elements=max_batch_elements,
    )


def lrp_zplus(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    epsilon: float = 1e-9,
    use_bias: bool = False,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """LRP z+ rule on every Linear and convolution layer: ``R_j = a_j sum_i W+_ij R_i / (z+_i + eps sign(z+_i))``.

    ``W+ = max(W, 0)`` and ``z+ = W+ a`` (plus ``b`` only if ``use_bias``). This is captum's
    ``Alpha1_Beta0_Rule(set_bias_to_zero=not use_bias)`` on every such layer. Starting relevance
    is ``f_target(x)``; activations pass relevance unchanged. With the default ``use_bias=False``
    relevance is conserved layer to layer: rows sum to ``f_target(x)`` (up to ``eps``) unless a
    unit with nonzero relevance has ``z+ = 0``. On the first layer ``a = x`` may be negative.

    Returns
    -------
    torch.Tensor
        The inputs' shape.
    """
    return _lrp(
        model,
        inputs,
        target,
        positive_weights=True,
        use_bias=use_bias,
        epsilon=epsilon,
        max_batch_elements=max_batch_elements,
    )
