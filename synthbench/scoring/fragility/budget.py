"""The perturbation budget of a fragility test: which changes of a batch of inputs are allowed.

A perturbation of an example ``x`` is ``delta = scale * z`` with ``||z|| <= eps`` in the chosen
norm (:data:`NORMS`: ``"linf"``, every element moves by at most ``eps`` units; ``"l2"``), and
``x + delta`` clipped to the data's range when it has one. ``scale`` gives the units per input
element: on tables each feature's standard deviation on the training rows (so ``eps = 0.1``
moves a feature by at most a tenth of its spread; a constant feature never moves), on images 1
(``eps`` in pixel units: ``8 / 255`` for images in ``[0, 1]``), clipped to the training images'
range. Every function works on a batch ``(n, *input_shape)`` and on each example alone (one
norm per example), with random draws from the caller's numpy generator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from synthbench.protocol import FoldData

__all__ = ["NORMS", "Budget"]

#: The norms a budget measures ``z`` in.
NORMS = ("linf", "l2")


@dataclass(frozen=True, eq=False)
class Budget:
    """Allowed perturbations: ``x + scale * z``, ``||z||_norm <= eps`` per example, clipped to ``[low, high]``.

    Attributes
    ----------
    eps : the radius, > 0
    norm : one of :data:`NORMS`
    scale : float32 ``input_shape``, the units of ``z`` per input element (0: the element never moves)
    low, high : the data's range (None: unbounded)
    """

    eps: float
    norm: str
    scale: np.ndarray
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if not self.eps > 0:
            raise ValueError(f"eps must be positive, got {self.eps}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {self.norm!r}")

    @classmethod
    def for_fold(cls, data: FoldData, eps: float, norm: str) -> Budget:
        """The budget of radius ``eps`` on ``data``'s kind (see the module docstring)."""
        if data.kind == "tabular":
            return cls(eps, norm, data.X_train.std(axis=0).astype(np.float32))
        return cls(
            eps, norm, np.ones(data.input_shape, dtype=np.float32), float(data.X_train.min()), float(data.X_train.max())
        )

    def _scale(self, like: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.scale, dtype=like.dtype, device=like.device)

    def project(self, x0: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(n, *shape)`` moved into the budget around ``x0``: ``z`` clamped (linf) or shrunk
        to the ball (l2) per example, then clipped to the range. Detached."""
        scale = self._scale(x0)
        moving = scale > 0
        z = torch.where(moving, (x.detach() - x0) / torch.where(moving, scale, 1.0), 0.0)
        if self.norm == "linf":
            z = z.clamp(-self.eps, self.eps)
        else:
            norms = z.flatten(1).norm(dim=1).clamp_min(1e-12)
            z = z * (self.eps / norms).clamp(max=1.0).view(-1, *[1] * (z.dim() - 1))
        out = x0 + z * scale
        if self.low is not None:
            out = out.clamp(self.low, self.high)
        return out

    def step(self, grad: torch.Tensor, size: float) -> torch.Tensor:
        """The ascent step of length ``size`` (in ``z`` units) along ``grad`` ``(n, *shape)``: its sign
        (linf) or its direction per example (l2), in input units."""
        scale = self._scale(grad)
        g = grad * scale  # the gradient with respect to z
        if self.norm == "linf":
            z = torch.sign(g)
        else:
            z = g / g.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (g.dim() - 1))
        return size * z * scale

    def corner(self, x0: torch.Tensor, rng: np.random.Generator, radius: float | None = None) -> torch.Tensor:
        """``x0`` plus a random perturbation on the budget's boundary (random signs for linf, a uniform
        direction for l2) of radius ``radius`` (default ``eps``), projected."""
        shape = tuple(x0.shape)
        if self.norm == "linf":
            z = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        else:
            z = rng.standard_normal(shape)
            z /= np.maximum(np.linalg.norm(z.reshape(len(z), -1), axis=1), 1e-12).reshape(-1, *[1] * (len(shape) - 1))
        return self._moved(x0, z * (self.eps if radius is None else radius))

    def uniform(self, x0: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        """``x0`` plus a perturbation drawn uniformly from the budget (the cube for linf, as captum's
        ``sensitivity_max`` and Quantus' ``MaxSensitivity`` draw it; the ball for l2), projected."""
        shape = tuple(x0.shape)
        if self.norm == "linf":
            z = rng.uniform(-self.eps, self.eps, shape)
        else:
            d = int(np.prod(shape[1:]))
            z = rng.standard_normal(shape)
            flat = z.reshape(len(z), -1)
            radius = self.eps * rng.random(len(z)) ** (1.0 / d)
            z = (flat * (radius / np.maximum(np.linalg.norm(flat, axis=1), 1e-12))[:, None]).reshape(shape)
        return self._moved(x0, z)

    def _moved(self, x0: torch.Tensor, z: np.ndarray) -> torch.Tensor:
        """``x0`` moved by ``z`` (``z`` units, numpy), projected."""
        step = torch.as_tensor(z, dtype=x0.dtype, device=x0.device)
        return self.project(x0, x0 + step * self._scale(x0))
