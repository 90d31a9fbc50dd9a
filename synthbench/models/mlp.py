"""The benchmark's multilayer perceptron (architecture of the 2023 quantitative benchmark).

Default: ``GaussianNoise(0.1) -> Linear(p, 16) -> LeakyReLU(0.2) -> Linear(16, 16) ->
LeakyReLU(0.2) -> Linear(16, 1)``; the output is a single logit of ``P(y = 1)``, shape ``(n, 1)``.
The network is a flat ``nn.Sequential`` so attribution rules (DeepLIFT, LRP, guided
backpropagation) can walk its layers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import torch
from torch import nn
from torch.nn.utils import skip_init

__all__ = ["GaussianNoise", "SeededDropout", "seed_noise_layers", "MLPConfig", "build_mlp", "ACTIVATIONS"]

ACTIVATIONS = ("leaky_relu", "relu", "softplus")


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


@dataclass(frozen=True)
class MLPConfig:
    """Architecture and training settings of the MLP (defaults: the 2023 benchmark's)."""

    width: int = 16
    depth: int = 2  # hidden layers
    activation: Literal["leaky_relu", "relu", "softplus"] = "leaky_relu"
    negative_slope: float = 0.2
    noise_sigma: float = 0.1
    lr: float = 5e-4
    weight_decay: float = 1e-5
    batch_size: int = 64
    max_epochs: int = 1000
    patience: int = 5
    stopping: Literal["previous", "best"] = "previous"  # what an epoch must beat to reset patience
    validation_fraction: float = 0.2
    #: what early stopping watches: the validation loss (lower is better) or AUROC (higher is better)
    monitor: Literal["loss", "auroc"] = "loss"
    #: how the validation loss is measured: ``"clean"`` (eval mode, one pass, mean loss) or
    #: ``"noisy_batches"`` (the 2023 code: training mode, input noise on, shuffled batches of
    #: ``batch_size``, the sum of the per-batch mean losses)
    validation: Literal["clean", "noisy_batches"] = "clean"
    #: weights kept at the end: those of the best epoch, or the last epoch's (what the 2023 code's
    #: ``state_dict()`` history without copies restored)
    restore: Literal["best", "last"] = "best"
    #: ``"plateau2023"``: ReduceLROnPlateau(factor 0.9, patience 10, threshold 1e-4 relative,
    #: cooldown 5, min_lr 1e-5) stepped once per epoch on the sum of the batch losses
    lr_schedule: Literal["constant", "plateau2023"] = "constant"
    #: weight of an L1 penalty ``sum |W_1|`` on the first linear layer, added to each batch loss
    l1_first_layer: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _activation(config: MLPConfig) -> nn.Module:
    if config.activation == "leaky_relu":
        return nn.LeakyReLU(config.negative_slope)
    if config.activation == "relu":
        return nn.ReLU()
    if config.activation == "softplus":
        return nn.Softplus()
    raise ValueError(f"unknown activation {config.activation!r}; valid: {', '.join(ACTIVATIONS)}")


BIAS_INIT = 1e-3


def build_mlp(n_features: int, config: MLPConfig = MLPConfig(), *, generator: torch.Generator | None = None,
              n_outputs: int = 1) -> nn.Sequential:
    """A fresh MLP for ``n_features`` inputs, initialised from ``generator`` as the 2023 benchmark does.

    Returns an ``nn.Sequential``: ``GaussianNoise``, then ``depth`` blocks of ``Linear`` +
    activation, then ``Linear(width, n_outputs)`` (one logit for binary labels, one per class). Weights: Kaiming uniform for a leaky ReLU with
    ``a = 0`` (bound ``sqrt(6 / fan_in)``), Xavier uniform where ``fan_in == 1``; every bias 1e-3.
    Torch's global generator is never drawn from (layers are created uninitialised).
    """
    if n_features < 1 or config.width < 1 or config.depth < 1 or n_outputs < 1:
        raise ValueError("n_features, width, depth and n_outputs must be positive")
    layers: list[nn.Module] = [GaussianNoise(config.noise_sigma)]
    fan_in = n_features
    for _ in range(config.depth):
        layers += [skip_init(nn.Linear, fan_in, config.width), _activation(config)]
        fan_in = config.width
    layers.append(skip_init(nn.Linear, fan_in, n_outputs))
    net = nn.Sequential(*layers)
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, nn.Linear):
                if layer.in_features == 1:
                    nn.init.xavier_uniform_(layer.weight, generator=generator)
                else:
                    nn.init.kaiming_uniform_(layer.weight, nonlinearity="leaky_relu", generator=generator)
                nn.init.constant_(layer.bias, BIAS_INIT)
    return net
