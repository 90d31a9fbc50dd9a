"""Shared machinery of the attribution methods: eval mode, targets, chunked passes, layer walking.

Conventions used by every attribution module
--------------------------------------------
* ``inputs`` is a 2-D tensor of shape ``(n, p)``; every row is explained independently (the
  model must treat rows independently, which holds for the benchmark MLP in eval mode).
* ``target`` is an output column index. ``None`` is resolved to ``0`` by :func:`resolve_target`:
  the benchmark MLP has a single logit, output shape ``(n, 1)``. A 1-D model output ``(n,)`` is
  accepted with target ``0``.
* "Large batch" evaluation: many perturbed copies of the inputs are stacked along the batch
  dimension and sent through the model in chunks holding at most ``max_batch_elements`` input
  elements per forward call (one chunk is never smaller than one row).
* The method functions assume the model is in eval mode (``GaussianNoise`` and dropout are then
  identities, which the layer-walking rules and the first-layer fast paths rely on);
  :func:`synthbench.methods.attribution.attribute` sets it and restores the flags afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from synthbench.models.mlp import GaussianNoise

__all__ = [
    "DEFAULT_MAX_BATCH_ELEMENTS",
    "ELEMENTWISE_ACTIVATIONS",
    "eval_mode",
    "resolve_target",
    "select_target",
    "forward_target",
    "gradient_target",
    "as_baseline",
    "make_generator",
    "rows_per_chunk",
    "flatten_layers",
    "sequential_ops",
    "activation_derivative",
    "split_linear_head",
]

DEFAULT_MAX_BATCH_ELEMENTS = 2**24
"""Default cap on the number of input elements in one forward call."""

ELEMENTWISE_ACTIVATIONS: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    nn.LeakyReLU,
    nn.Softplus,
    nn.ELU,
    nn.Tanh,
    nn.Sigmoid,
)
"""Elementwise nonlinearities the layer-walking rules (DeepLIFT, LRP, guided backprop) accept."""


def _is_eval_identity(module: nn.Module) -> bool:
    """Whether ``module`` is the identity map in eval mode (noise, dropout, identity)."""
    return isinstance(module, (GaussianNoise, nn.Identity, nn.modules.dropout._DropoutNd))


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Put every submodule of ``model`` in eval mode; restore each one's flag on exit."""
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for module, flag in flags:
            module.train(flag)


def resolve_target(target: int | None) -> int:
    """``None`` -> ``0`` (the single logit of the benchmark MLP); else a non-negative int."""
    if target is None:
        return 0
    if isinstance(target, bool) or int(target) != target or target < 0:
        raise ValueError(f"target must be a non-negative int or None, got {target!r}")
    return int(target)


def select_target(output: torch.Tensor, target: int) -> torch.Tensor:
    """Column ``target`` of a ``(m, k)`` model output as a ``(m,)`` tensor ((m,) outputs: target 0)."""
    if output.dim() == 1:
        if target != 0:
            raise ValueError(f"the model has a 1-D output; target must be 0 or None, got {target}")
        return output
    if output.dim() == 2:
        if target >= output.shape[1]:
            raise ValueError(f"target {target} out of range for {output.shape[1]} output columns")
        return output[:, target]
    raise ValueError(f"model output must be 1-D or 2-D, got shape {tuple(output.shape)}")


def rows_per_chunk(elements_per_row: int, max_batch_elements: int) -> int:
    """How many rows of ``elements_per_row`` elements fit in one call (at least one)."""
    return max(1, int(max_batch_elements) // max(1, int(elements_per_row)))


def forward_target(
    model: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    target: int,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Target output for every row of ``x`` (shape ``(m, d)``) -> ``(m,)``, without gradients."""
    m = x.shape[0]
    step = rows_per_chunk(x[0].numel() if m else 1, max_batch_elements)
    out = x.new_empty(m)
    with torch.no_grad():
        for i in range(0, m, step):
            out[i : i + step] = select_target(model(x[i : i + step]), target)
    return out


def gradient_target(
    model: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    target: int,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Signed gradient ``d output[:, target] / d x`` of every row, shape ``(m, p)`` like ``x``."""
    m = x.shape[0]
    step = rows_per_chunk(x[0].numel() if m else 1, max_batch_elements)
    grads = torch.empty_like(x)
    with torch.enable_grad():
        for i in range(0, m, step):
            xc = x[i : i + step].detach().requires_grad_(True)
            out = select_target(model(xc), target)
            (grads[i : i + step],) = torch.autograd.grad(out.sum(), xc)
    return grads


def as_baseline(baselines: torch.Tensor | float | None, x: torch.Tensor) -> torch.Tensor:
    """Broadcast ``baselines`` (None -> 0, scalar, ``(p,)``, ``(1, p)`` or ``(n, p)``) to ``x``'s shape."""
    if baselines is None:
        return torch.zeros_like(x)
    b = torch.as_tensor(baselines, dtype=x.dtype, device=x.device)
    try:
        return torch.broadcast_to(b, x.shape)
    except RuntimeError as err:
        raise ValueError(f"baselines of shape {tuple(b.shape)} do not broadcast to inputs {tuple(x.shape)}") from err


def make_generator(generator: torch.Generator | None, seed: int, device: torch.device) -> torch.Generator:
    """``generator`` itself, or a fresh generator on ``device`` seeded with ``seed``."""
    if generator is not None:
        return generator
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def flatten_layers(model: nn.Module) -> list[nn.Module]:
    """Leaf modules of a (possibly nested) ``nn.Sequential`` in call order; other modules are leaves."""
    if isinstance(model, nn.Sequential):
        return [leaf for child in model for leaf in flatten_layers(child)]
    return [model]


def sequential_ops(model: nn.Module) -> list[nn.Module]:
    """The ``Linear`` and elementwise-activation layers of a flat MLP, eval-identities removed.

    Raises
    ------
    TypeError
        If the model contains any other kind of layer (the layer-walking rules would be wrong).
    """
    ops: list[nn.Module] = []
    for layer in flatten_layers(model):
        if _is_eval_identity(layer):
            continue
        if isinstance(layer, nn.Linear) or isinstance(layer, ELEMENTWISE_ACTIVATIONS):
            ops.append(layer)
        else:
            raise TypeError(
                f"layer {type(layer).__name__} is not supported by this rule; the model must be a "
                "Sequential of Linear layers and elementwise activations"
            )
    if not ops or not isinstance(ops[-1], nn.Linear):
        raise TypeError("the model must end with a Linear layer")
    return ops


def activation_derivative(activation: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Elementwise derivative ``f'(x)`` exactly as autograd computes it (shape of ``x``)."""
    with torch.enable_grad():
        xr = x.detach().requires_grad_(True)
        (d,) = torch.autograd.grad(activation(xr).sum(), xr)
    return d


def split_linear_head(model: nn.Module) -> tuple[nn.Linear, Callable[[torch.Tensor], torch.Tensor]] | None:
    """Split ``model`` into its first ``Linear`` layer and the rest, if it starts with one.

    Returns ``(head, tail)`` with ``model(x) == tail(head(x))`` in eval mode, or ``None`` when the
    model is not a Sequential whose first non-identity layer is ``nn.Linear``. The split lets the
    perturbation methods change one input feature by updating the first layer's pre-activations
    (``z + delta * W[:, j]``, cost ``O(width)``) instead of re-running the ``O(p * width)`` product.
    """
    if not isinstance(model, nn.Sequential):
        return None
    layers = flatten_layers(model)
    k = 0
    while k < len(layers) and _is_eval_identity(layers[k]):
        k += 1
    if k == len(layers) or not isinstance(layers[k], nn.Linear):
        return None
    head = layers[k]
    rest = layers[k + 1 :]

    def tail(z: torch.Tensor) -> torch.Tensor:
        for layer in rest:
            z = layer(z)
        return z

    return head, tail
