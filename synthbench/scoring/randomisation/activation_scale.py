"""Why top-down randomisation cannot rank methods: Binder et al. (2023)'s claim (ii), measured.

After the layers above a layer are re-drawn, the randomised upper part is a random function of
that layer's input, and Binder et al. argue that the scale of the (still trained) forward
activations then decides, with high probability, which units contribute most to the output:
explanations after top-down randomisation keep the imprint of the activation scale, so they can
differ from the trained model's only to a certain extent.

For each state ``s`` of top-down cascading randomisation (the ``s`` layers closest to the output
re-drawn, as :mod:`~synthbench.scoring.randomisation.model` draws them), let ``h`` be the input of the
lowest randomised layer (the output of the trained part below it; for ``s = L`` the model's
input). Over its units (tables: neurons or input features; images: channels, positions summed),
this module measures the Spearman correlation between each unit's mean ``|h_j|`` over the
explained examples and its mean contribution to the randomised model's explained logit,
``|h_j * d logit / d h_j|`` (the label's logit; a binary MLP's one logit). A value near 1 says
the randomised output is carried by the units with large activations, whatever the weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from synthbench.models.randomise import Layer, randomised
from synthbench.protocol import FoldData
from synthbench.scoring.base import Curve
from synthbench.scoring.randomisation.similarity import spearman_rows

__all__ = ["activation_scale_curve", "scale_and_contribution"]


def scale_and_contribution(model: Any, layer: str, data: FoldData) -> tuple[np.ndarray, np.ndarray]:
    """Per unit of the input of ``layer``: mean ``|h|`` and mean ``|h * d logit / d h|`` over the explained rows.

    Returns two float64 arrays ``(units,)``: channels for a 4-d input ``(n, C, H, W)`` (positions
    summed before the mean over rows), features or neurons for a 2-d one.
    """
    module = model.module
    device = next(module.parameters()).device
    seen: list[torch.Tensor] = []

    def keep(_module: torch.nn.Module, args: tuple) -> None:
        args[0].retain_grad()
        seen.append(args[0])

    x = torch.as_tensor(data.X_explain, device=device).requires_grad_(True)
    handle = module.get_submodule(layer).register_forward_pre_hook(keep)
    try:
        out = module(x)
    finally:
        handle.remove()
    if out.shape[1] == 1:
        logit = out[:, 0]
    else:
        logit = out.gather(1, torch.as_tensor(data.y_explain, device=device).reshape(-1, 1))[:, 0]
    logit.sum().backward()
    h = seen[0]
    if h.grad is None:
        raise RuntimeError("the layer's input received no gradient")
    scale, contribution = h.detach().abs(), (h.detach() * h.grad).abs()
    if h.dim() == 4:
        scale, contribution = scale.sum(dim=(2, 3)), contribution.sum(dim=(2, 3))
    return (
        scale.reshape(len(h), -1).mean(dim=0).double().cpu().numpy(),
        contribution.reshape(len(h), -1).mean(dim=0).double().cpu().numpy(),
    )


def activation_scale_curve(model: Any, layers: Sequence[Layer], seeds: Mapping[str, int], data: FoldData) -> Curve:
    """Spearman of activation scale and contribution per top-down state, x = 1 .. L (see the module docstring).

    ``layers`` in forward order; ``seeds`` per layer name, as the randomisation scorer draws them.
    NaN where every unit contributes alike (a rank correlation with a constant).
    """
    names = [layer.name for layer in layers]
    values = []
    for s in range(1, len(names) + 1):
        state = names[len(names) - s :]
        scale, contribution = scale_and_contribution(randomised(model, layers, state, seeds), state[0], data)
        values.append(float(spearman_rows(scale[None], contribution[None])[0]))
    return Curve(np.arange(1, len(names) + 1, dtype=np.float64), np.array(values))
