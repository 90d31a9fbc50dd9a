"""Layer-walking rules for Sequential MLPs: DeepLIFT (rescale), guided backprop, deconvnet, LRP.

The model must be a (possibly nested) ``nn.Sequential`` of ``nn.Linear`` layers and elementwise
activations (see :data:`~synthbench.methods.attribution_core.ELEMENTWISE_ACTIVATIONS`), ending in a
``Linear``; eval-mode identities (``GaussianNoise``, ``Dropout``, ``Identity``) are skipped. The
rules are applied by an explicit backward pass over the layers: no hooks are registered and the
model is never modified.

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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from synthbench.methods.attribution_core import (
    DEFAULT_MAX_BATCH_ELEMENTS,
    activation_derivative,
    as_baseline,
    rows_per_chunk,
    sequential_ops,
)

__all__ = ["guided_backprop", "deconvolution", "deeplift", "lrp_epsilon", "lrp_zplus"]

_ActRule = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]


def _trace(ops: list[nn.Module], x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Inputs of each op and the final output of the network on ``x``."""
    seen = []
    with torch.no_grad():
        for op in ops:
            seen.append(x)
            x = op(x)
    return seen, x


def _seed_signal(output: torch.Tensor, target: int) -> torch.Tensor:
    """One-hot backward signal on output column ``target``, shape of ``output`` (m, k)."""
    if target >= output.shape[1]:
        raise ValueError(f"target {target} out of range for {output.shape[1]} output columns")
    g = torch.zeros_like(output)
    g[:, target] = 1.0
    return g


def _modified_backward(
    model: nn.Module, inputs: torch.Tensor, target: int, act_rule: _ActRule, max_batch_elements: int
) -> torch.Tensor:
    """Backward pass with Linear layers as usual (``g @ W``) and ``act_rule`` at activations."""
    ops = sequential_ops(model)
    n, p = inputs.shape
    step = rows_per_chunk(p, max_batch_elements)
    result = torch.empty_like(inputs)
    for i in range(0, n, step):
        seen, out = _trace(ops, inputs[i : i + step])
        g = _seed_signal(out, target)
        for op, x_in in zip(reversed(ops), reversed(seen)):
            g = g @ op.weight.detach() if isinstance(op, nn.Linear) else act_rule(op, x_in, g)
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
    target: int,
    *,
    rules_on: RulesOn = "all",
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Guided backpropagation: backward signal ``max(g, 0) * f'(x)`` at each activation.

    Returns shape ``(n, p)``; equals captum's ``GuidedBackprop`` on ReLU networks. See the module
    docstring for the LeakyReLU / Softplus rules; ``rules_on="relu_only"`` is captum's
    behaviour on any network (the plain gradient where no activation is an ``nn.ReLU``).
    """
    return _modified_backward(model, inputs, target, _rule(_guided_rule, rules_on), max_batch_elements)


def deconvolution(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    rules_on: RulesOn = "all",
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Deconvnet: the activation's rectifier applied to the backward signal, ignoring ``x``.

    ReLU/Softplus: ``relu(g)``; LeakyReLU(a): ``leaky_relu(g, a)``. Returns shape ``(n, p)``;
    equals captum's ``Deconvolution`` on ReLU networks; ``rules_on="relu_only"`` is captum's
    behaviour on any network.
    """
    return _modified_backward(model, inputs, target, _rule(_deconv_rule, rules_on), max_batch_elements)


def deeplift(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    baselines: torch.Tensor | float | None = None,
    eps: float = 1e-10,
    multiply_by_inputs: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """DeepLIFT with the rescale rule, computed layer by layer.

    At each activation the multiplier is ``(f(x) - f(x0)) / (x - x0)`` for the unit's input on the
    row and on the baseline; where ``|x - x0| < eps`` it is the gradient ``f'(x)`` at the input
    (captum's rule, same default ``eps = 1e-10``). Linear layers pass ``g @ W``.

    Parameters
    ----------
    baselines
        ``x0``: None (zeros), scalar, ``(p,)``, ``(1, p)`` or ``(n, p)``.
    multiply_by_inputs
        True: ``(x - x0) * multipliers`` (captum default); False: the multipliers alone.

    Returns
    -------
    torch.Tensor
        Shape ``(n, p)``; with ``multiply_by_inputs`` each row sums to ``f(x) - f(x0)`` exactly
        (up to rounding and the ``eps`` fallback) for these networks.
    """
    ops = sequential_ops(model)
    n, p = inputs.shape
    base = as_baseline(baselines, inputs)
    step = rows_per_chunk(2 * p, max_batch_elements)
    mult = torch.empty_like(inputs)
    for i in range(0, n, step):
        seen_x, out = _trace(ops, inputs[i : i + step])
        seen_b, _ = _trace(ops, base[i : i + step])
        g = _seed_signal(out, target)
        for k in range(len(ops) - 1, -1, -1):
            op = ops[k]
            if isinstance(op, nn.Linear):
                g = g @ op.weight.detach()
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
    target: int,
    *,
    positive_weights: bool,
    use_bias: bool,
    epsilon: float,
    max_batch_elements: int,
) -> torch.Tensor:
    """Relevance propagation; see :func:`lrp_epsilon` and :func:`lrp_zplus`."""
    ops = sequential_ops(model)
    n, p = inputs.shape
    step = rows_per_chunk(p, max_batch_elements)
    result = torch.empty_like(inputs)
    for i in range(0, n, step):
        seen, out = _trace(ops, inputs[i : i + step])
        relevance = _seed_signal(out, target) * out
        for k in range(len(ops) - 1, -1, -1):
            op = ops[k]
            if not isinstance(op, nn.Linear):
                continue  # relevance passes activations unchanged
            a = seen[k]
            w = op.weight.detach()
            if positive_weights:
                w = w.clamp(min=0)
            bias = op.bias.detach() if (use_bias and op.bias is not None) else None
            z = F.linear(a, w, bias)
            sign = torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))
            relevance = a * ((relevance / (z + epsilon * sign)) @ w)
        result[i : i + step] = relevance
    return result


def lrp_epsilon(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    epsilon: float = 1e-9,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """LRP-epsilon on every Linear layer (captum ``LRP`` with its default ``EpsilonRule``).

    Starting from ``R = f_target(x)`` on the target output, each Linear layer ``z = W a + b``
    redistributes ``R_j = a_j * sum_i W_ij R_i / (z_i + epsilon * sign(z_i))`` with
    ``sign(0) = +1``; activations pass relevance unchanged. Default ``epsilon = 1e-9`` as captum.

    Returns
    -------
    torch.Tensor
        Shape ``(n, p)``; positive relevance supports the target output. Biases absorb part of the
        relevance, so rows sum to ``f(x)`` only for bias-free networks.
    """
    return _lrp(
        model, inputs, target, positive_weights=False, use_bias=True, epsilon=epsilon,
        max_batch_elements=max_batch_elements,
    )


def lrp_zplus(
    model: nn.Module,
    inputs: torch.Tensor,
    target: int,
    *,
    epsilon: float = 1e-9,
    use_bias: bool = False,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """LRP z+ rule on every Linear layer: ``R_j = a_j sum_i W+_ij R_i / (z+_i + eps sign(z+_i))``.

    ``W+ = max(W, 0)`` and ``z+ = W+ a`` (plus ``b`` only if ``use_bias``). This is captum's
    ``Alpha1_Beta0_Rule(set_bias_to_zero=not use_bias)`` on every Linear layer. Starting relevance
    is ``f_target(x)``; activations pass relevance unchanged. With the default ``use_bias=False``
    relevance is conserved layer to layer: rows sum to ``f_target(x)`` (up to ``eps``) unless a
    unit with nonzero relevance has ``z+ = 0``. On the first layer ``a = x`` may be negative.

    Returns
    -------
    torch.Tensor
        Shape ``(n, p)``.
    """
    return _lrp(
        model, inputs, target, positive_weights=True, use_bias=use_bias, epsilon=epsilon,
        max_batch_elements=max_batch_elements,
    )
