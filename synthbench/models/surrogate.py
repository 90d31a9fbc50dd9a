"""Smooth surrogates of trained networks: the same weights with every kinked activation smoothed.

A ReLU network's gradient map is piecewise constant in its input, so the gradient of a map with
respect to the input (what a fragility attack follows, Ghorbani et al. 2019; Dombrowski et al.
2019) is zero almost everywhere. :func:`smooth_surrogate` copies a trained network and replaces

* ``nn.ReLU`` by ``nn.Softplus(beta)``: ``log(1 + exp(beta x)) / beta``;
* ``nn.LeakyReLU(s)`` by :class:`SmoothLeakyReLU`: ``s x + (1 - s) softplus_beta(x)``,

both of which tend to the original as ``beta`` grows. Every other module (linear, convolution,
max pooling, the MLP's noise layers, which are the identity in evaluation mode) is kept with its
weights. The surrogate only gives directions: an attack evaluates and explains every perturbed
input on the original network.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["SmoothLeakyReLU", "smooth_surrogate", "smooth_module"]


class SmoothLeakyReLU(nn.Module):
    """``slope * x + (1 - slope) * softplus(beta * x) / beta``: a leaky ReLU with its kink smoothed.

    Equal to ``LeakyReLU(slope)`` in the limit ``beta -> inf``; differentiable any number of times.
    """

    def __init__(self, negative_slope: float, beta: float) -> None:
        super().__init__()
        self.negative_slope = float(negative_slope)
        self.beta = float(beta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.negative_slope
        return s * x + (1.0 - s) * F.softplus(x, beta=self.beta)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}, beta={self.beta}"


def smooth_module(module: nn.Module, beta: float) -> nn.Module:
    """A deep copy of ``module`` with its ReLUs and leaky ReLUs smoothed (see the module docstring).

    ``module`` is not changed; the copy keeps its training flag and device.
    """
    if not beta > 0:
        raise ValueError(f"beta must be positive, got {beta}")
    out = copy.deepcopy(module)
    _replace(out, float(beta))
    return out


def _replace(module: nn.Module, beta: float) -> None:
    for name, child in module.named_children():
        if isinstance(child, nn.ReLU):
            setattr(module, name, nn.Softplus(beta=beta))
        elif isinstance(child, nn.LeakyReLU):
            setattr(module, name, SmoothLeakyReLU(child.negative_slope, beta))
        else:
            _replace(child, beta)


def smooth_surrogate(model: Any, beta: float) -> Any:
    """A copy of the trained network ``model`` (``module``, ``classes_``, ``predict``) whose
    ``module`` is :func:`smooth_module` of the original; ``model`` is not changed."""
    out = object.__new__(type(model))  # a shallow copy that does not pickle the weights (TrainedNetwork's getstate)
    out.__dict__.update(model.__dict__)
    out.module = smooth_module(model.module, beta).eval()
    return out
