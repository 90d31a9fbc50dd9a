"""A fixed per-feature hinge basis: each input column expanded into piecewise-linear units.

Column ``x_j`` becomes ``G = K + 2`` units: ``relu(x_j)``, ``relu(-x_j)`` and ``relu(x_j - q_jk)`` for
the ``K`` knots ``q_j1 < ... < q_jK``, the quantiles ``k / (K + 1)`` of ``x_j`` on the training rows. A
layer that reads these units can make any continuous piecewise-linear function of each feature
with breaks at those knots, so a feature whose effect is even (``x**2``, a band, a ring) reaches the
next layer as a *first-order* signal. Trees see tables this way (axis-aligned thresholds);
Gorishniy et al. (NeurIPS 2022, "On embeddings for numerical features in tabular deep learning")
show piecewise-linear encodings close most of the gap between MLPs and boosted trees.

Layout: unit ``g`` of feature ``j`` is column ``j * G + g`` of the expansion, so feature ``j``'s
units are one contiguous *group* (:func:`group_columns`). As a network layer the basis of the
``m`` columns a network reads is an ``nn.Linear(p, m * G)`` followed by ``nn.ReLU``
(:func:`basis_layer`), its weights fixed (``±1`` on the feature's column, zero on every column it
does not read, bias ``0`` or ``-q``), so every attribution rule that walks ``Linear`` and ``ReLU``
layers walks it too. It evaluates by gathering each unit's column (:class:`BasisLinear`: ``m * G``
multiplies where the dense product takes ``p * m * G``, the same bits), and :func:`expand` computes
the same units from numpy.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils import skip_init

__all__ = ["BasisLinear", "basis_layer", "basis_units", "expand", "group_columns", "group_norms", "hinge_knots"]


def basis_units(n_knots: int) -> int:
    """Units per feature, ``G = n_knots + 2``."""
    return int(n_knots) + 2


def hinge_knots(X: np.ndarray, n_knots: int) -> np.ndarray:
    """The knots ``(p, K)`` float32: per column of ``X`` ``(n, p)``, its quantiles ``k / (K + 1)``, ``k = 1..K``."""
    if n_knots < 1:
        raise ValueError(f"a hinge basis needs at least 1 knot, got {n_knots}")
    levels = np.arange(1, n_knots + 1) / (n_knots + 1)
    return np.ascontiguousarray(np.quantile(np.asarray(X, dtype=np.float64), levels, axis=0).T, dtype=np.float32)


def _slopes_and_shifts(knots: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Per feature and unit, the slope (``+1, -1, +1, ...``) and shift (``0, 0, -q_1, ...``): ``(p, G)`` each."""
    knots_t = torch.as_tensor(np.asarray(knots, dtype=np.float32))
    p, k = knots_t.shape
    slopes = torch.ones(p, k + 2)
    slopes[:, 1] = -1.0
    shifts = torch.cat([torch.zeros(p, 2), -knots_t], dim=1)
    return slopes, shifts


class _Gathered(torch.autograd.Function):
    """``bias + x[:, columns] * weight[u, columns[u]]`` forward; the dense layer's ``grad @ weight`` backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(weight)
        return torch.addcmul(bias, x[:, columns], weight.gather(1, columns[:, None])[:, 0])

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None, None]:
        (weight,) = ctx.saved_tensors
        return (grad.mm(weight) if ctx.needs_input_grad[0] else None), None, None, None


class BasisLinear(nn.Linear):
    """An ``nn.Linear`` whose weight has one non-zero per row, at ``columns[row]`` (a fixed basis).

    On a 2-D input ``(b, p)`` its output ``(b, out)`` is ``bias + x[:, columns] * slope`` by gather:
    the same bits as the dense product (every other term of each row's sum is an exact zero, so
    either way the one rounding is that of ``bias + slope * x``; inputs are finite), at ``out``
    multiplies per row instead of ``p * out``. Its input gradient is the dense layer's,
    ``grad @ weight``, by the same matrix product, so gradients match ``nn.Linear`` bit for bit;
    weight and bias take no gradient. ``columns`` is a non-persistent buffer (not in the state dict).
    """

    def __init__(self, in_features: int, out_features: int, device=None, dtype=None) -> None:
        super().__init__(in_features, out_features, device=device, dtype=dtype)
        self.register_buffer("columns", torch.zeros(out_features, dtype=torch.int64, device=device), persistent=False)

    @property
    def read(self) -> torch.Tensor:
        """The input columns the basis reads, ascending: int64 ``(m,)``; each has ``out_features // m`` units."""
        return torch.unique_consecutive(self.columns)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            return super().forward(x)
        return _Gathered.apply(x, self.weight, self.bias, self.columns)


def basis_layer(knots: np.ndarray, features: np.ndarray, n_features: int) -> nn.Linear:
    """The basis of the input columns ``features`` (``m``, knots ``(m, K)``) as a fixed :class:`BasisLinear`
    ``(n_features, m * G)``, to be followed by ``nn.ReLU``; the other columns get zero weight; its parameters
    need no grad."""
    slopes, shifts = _slopes_and_shifts(knots)
    m, g = slopes.shape
    columns = torch.as_tensor(np.asarray(features, dtype=np.int64))
    if columns.shape != (m,):
        raise ValueError(f"knots of {m} columns for {tuple(columns.shape)} features")
    layer = skip_init(BasisLinear, n_features, m * g)
    with torch.no_grad():
        weight = torch.zeros(m, g, n_features)
        weight[torch.arange(m), :, columns] = slopes
        layer.weight.copy_(weight.reshape(m * g, n_features))
        layer.bias.copy_(shifts.reshape(-1))
        layer.columns.copy_(columns.repeat_interleave(g))
    layer.requires_grad_(False)
    return layer


def expand(X: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """The units ``relu(basis_layer(knots)(X))`` of ``X`` ``(n, p)``: float32 ``(n, p * G)``, computed per feature."""
    slopes, shifts = _slopes_and_shifts(knots)
    Xt = torch.as_tensor(np.ascontiguousarray(X, dtype=np.float32))
    units = torch.relu(Xt[:, :, None] * slopes[None] + shifts[None])
    return units.reshape(Xt.shape[0], -1).numpy()


def group_columns(features: np.ndarray, units: int) -> np.ndarray:
    """Columns of the expansion that hold ``features``' units, feature by feature: ``(len(features) * units,)``."""
    features = np.asarray(features, dtype=np.int64)
    return (features[:, None] * units + np.arange(units)[None]).reshape(-1)


def group_norms(weight: torch.Tensor, units: int, eps: float = 0.0) -> torch.Tensor:
    """Per input group, the Euclidean norm of its ``units`` columns of ``weight`` ``(out, m * units)``: ``(m,)``.

    ``eps`` is added under the square root (a penalty's gradient stays finite at a zero group).
    """
    out, width = weight.shape
    return weight.reshape(out, width // units, units).pow(2).sum(dim=(0, 2)).add(eps).sqrt()
