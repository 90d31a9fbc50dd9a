"""Random layers of the benchmark networks whose draws a training run seeds.

:class:`GaussianNoise` (input noise of the 2023 MLP) and :class:`SeededDropout` draw from a
``torch.Generator`` that :func:`seed_noise_layers` points them at for one training run (the
loop's own generator), so training is reproducible without touching torch's global generator.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["GaussianNoise", "SeededDropout", "seed_noise_layers"]


class GaussianNoise(nn.Module):
    """Adds ``N(0, sigma^2)`` noise in training mode; the identity in evaluation mode.

    The noise is drawn from ``generator`` when one is set (for reproducible training), else
    from torch's default generator.
    """

    def __init__(self, sigma: float = 0.1) -> None:
        super().__init__()
        self.sigma = float(sigma)
        self.generator: torch.Generator | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.sigma == 0.0:
            return x
        noise = torch.randn(x.shape, generator=self.generator, device=x.device, dtype=x.dtype)
        return x + self.sigma * noise

    def extra_repr(self) -> str:
        return f"sigma={self.sigma}"


class SeededDropout(nn.Module):
    """Inverted dropout (zero with probability ``rate``, scale the rest by ``1 / (1 - rate)``) in
    training mode, drawing from ``generator`` like :class:`GaussianNoise`; the identity in evaluation mode."""

    def __init__(self, rate: float) -> None:
        super().__init__()
        self.rate = float(rate)
        self.generator: torch.Generator | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.rate == 0.0:
            return x
        keep = torch.rand(x.shape, generator=self.generator, device=x.device, dtype=x.dtype) >= self.rate
        return x * keep / (1.0 - self.rate)


def seed_noise_layers(module: nn.Module, generator: torch.Generator | None) -> None:
    """Point every random layer of ``module`` (:class:`GaussianNoise`, :class:`SeededDropout`) at
    ``generator`` for a training run; ``None`` detaches them afterwards."""
    for m in module.modules():
        if isinstance(m, (GaussianNoise, SeededDropout)):
            m.generator = generator
