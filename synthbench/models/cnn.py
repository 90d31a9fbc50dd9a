"""A small CNN for ``(n, C, H, W)`` images, trained by the one loop (:func:`~synthbench.models.loop.fit_network`).

Architecture (:func:`build_cnn`): for each width in ``config.channels`` a ``Conv2d`` (``kernel``,
same padding) and a ``ReLU``, followed by ``MaxPool2d(2)`` after every block but the last while
the feature map is at least 2 pixels wide; then a global pooling over the remaining map (max by
default: a glyph anywhere in the image lights its detector), ``Flatten``, ``Linear(hidden)``,
``ReLU`` and ``Linear(K)``: one logit per class, softmax cross-entropy, also for two classes. Every
layer is one the attribution rules walk (convolution, ReLU, max pooling, flatten, linear), so
guided backprop, deconvolution and LRP run on it unchanged.

Weights are drawn from one ``torch.Generator`` seeded with the training seed (Kaiming uniform for
ReLU, zero biases), never from torch's global generator; on the CPU the same seed gives the same
weights. The convolutions' weights are laid out channels-last, the layout torch's CPU convolutions run
fastest in (an epoch on ``shapes`` 1.5 times as fast as in the contiguous layout on one thread:
``benchmarks/bench_cnn_layout.py``); the loop keeps that layout
(:attr:`~synthbench.models.stacked.ParameterLayout.orders`). :func:`train_cnn` trains it with early
stopping on a random validation part; the presets of :mod:`synthbench.models.presets` name configurations.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, cast

import numpy as np
import torch
from torch import nn
from torch.nn.utils import skip_init

from synthbench.models.loop import (
    BATCH_MEMORY,
    EpochInputs,
    MemberData,
    NetworkConfig,
    TrainConfig,
    TrainingFailed,
    fit_classifiers,
    memory_chunks,
    unwrap,
)
from synthbench.models.networks import TrainedNetwork
from synthbench.models.randomise import Layer, sequential_layers

__all__ = ["CNNConfig", "TrainedCNN", "build_cnn", "train_cnn", "train_cnns", "initialise_layer", "cnn_layers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CNNConfig(NetworkConfig):
    """Architecture of the CNN and how it trains (``train``: Adam 2e-3, no weight decay, at most 60
    epochs, patience 8 against the best epoch, the best weights restored)."""

    record_omits: ClassVar[tuple[str, ...]] = ("adam_eps", "l1_first_layer")

    channels: tuple[int, ...] = (16, 32, 32)
    kernel: int = 3
    hidden: int = 64
    global_pool: str = "max"
    train: TrainConfig = TrainConfig(lr=2e-3, weight_decay=0.0, max_epochs=60, patience=8, stopping="best")

    @property
    def n_layers(self) -> int:
        """Parametrised layers, as :func:`cnn_layers` declares them: the convolutions and two ``Linear``."""
        return len(self.channels) + 2


def initialise_layer(layer: nn.Module, generator: torch.Generator) -> None:
    """The CNN's initialisation of a convolution or ``Linear`` layer, in place: Kaiming uniform for a
    ReLU (bound ``sqrt(6 / fan_in)``), zero bias."""
    with torch.no_grad():
        nn.init.kaiming_uniform_(cast(torch.Tensor, layer.weight), nonlinearity="relu", generator=generator)
        nn.init.zeros_(cast(torch.Tensor, layer.bias))


def _init(layer: nn.Module, generator: torch.Generator) -> nn.Module:
    initialise_layer(layer, generator)
    return layer


def cnn_layers(model: TrainedCNN) -> tuple[Layer, ...]:
    """The CNN's convolutions and ``Linear`` layers in forward order, each with :func:`initialise_layer`."""
    return sequential_layers(model.module, initialise_layer)


def build_cnn(
    input_shape: tuple[int, int, int], n_classes: int, config: CNNConfig = CNNConfig(), *, generator: torch.Generator
) -> nn.Sequential:
    """A fresh CNN for ``(C, H, W)`` inputs and ``n_classes >= 2`` logits, initialised from ``generator``, its
    convolution weights channels-last."""
    c, h, w = (int(d) for d in input_shape)
    if n_classes < 2 or not config.channels or config.kernel < 1 or config.hidden < 1:
        raise ValueError("need n_classes >= 2, at least one convolution, and positive kernel and hidden sizes")
    if config.global_pool not in ("max", "avg"):
        raise ValueError(f"global_pool must be 'max' or 'avg', got {config.global_pool!r}")
    layers: list[nn.Module] = []
    for i, width in enumerate(config.channels):
        layers += [
            _init(skip_init(nn.Conv2d, c, width, config.kernel, padding=config.kernel // 2), generator),
            nn.ReLU(),
        ]
        c = width
        if i < len(config.channels) - 1 and min(h, w) >= 2:
            layers.append(nn.MaxPool2d(2))
            h, w = h // 2, w // 2
    layers.append(nn.MaxPool2d((h, w)) if config.global_pool == "max" else nn.AvgPool2d((h, w)))
    layers += [
        nn.Flatten(),
        _init(skip_init(nn.Linear, c, config.hidden), generator),
        nn.ReLU(),
        _init(skip_init(nn.Linear, config.hidden, n_classes), generator),
    ]
    return nn.Sequential(*layers).to(memory_format=torch.channels_last)  # type: ignore[call-overload]


@dataclass(eq=False)
class TrainedCNN(TrainedNetwork):
    """A trained CNN with a scikit-learn-style probability interface.

    Attributes
    ----------
    module : nn.Sequential in eval mode, on ``device``; ``(n, C, H, W)`` -> ``(n, K)`` logits
    config : CNNConfig
    input_shape : ``(C, H, W)``
    epochs_run, best_epoch, history, validation_indices : as for
        :class:`~synthbench.models.mlp.TrainedMLP`
    device : torch.device
    classes_ : ``[0, 1, ..., K - 1]``
    train_seconds : its share of its batch's training time
    """

    module: nn.Sequential = field(repr=False)
    config: CNNConfig
    input_shape: tuple[int, int, int]
    epochs_run: int
    best_epoch: int
    history: dict[str, list[float]] = field(repr=False)
    validation_indices: np.ndarray = field(repr=False)
    device: torch.device
    classes_: np.ndarray = field(repr=False)
    train_seconds: float = field(default=0.0, repr=False)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Softmax probabilities ``(n, K)``, float64, for images ``(n, *input_shape)``."""
        X = np.asarray(X, dtype=np.float32)
        if X.shape[1:] != tuple(self.input_shape):
            raise ValueError(f"X must have shape (n, {', '.join(map(str, self.input_shape))}), got {X.shape}")
        return super().predict_proba(X)

    def _architecture(self) -> nn.Module:
        return build_cnn(self.input_shape, len(self.classes_), self.config, generator=torch.Generator().manual_seed(0))


def train_cnn(
    X_train: np.ndarray,
    y_train: np.ndarray,
    *,
    config: CNNConfig = CNNConfig(),
    seed: int,
    device: str | torch.device = "cpu",
    n_classes: int | None = None,
    num_threads: int | None = None,
    epoch_inputs: EpochInputs | None = None,
) -> TrainedCNN:
    """Train the CNN on images ``(n, C, H, W)`` with labels ``0..K-1``.

    Parameters
    ----------
    X_train, y_train : float32 ``(n, C, H, W)`` and int ``(n,)``
    config : CNNConfig
    seed : seeds the initialisation, the validation split, the batch order
    device : ``"cpu"``, ``"cuda"``, ``"auto"`` or a ``torch.device``
    n_classes : ``K`` (None: one more than the largest label)
    num_threads : CPU threads while training (None: torch's setting; convolutions, unlike the
        small MLPs, gain from several)
    epoch_inputs : the images drawn anew for each epoch (see :func:`~synthbench.models.loop.fit_network`)

    Returns
    -------
    TrainedCNN
        In eval mode, on ``device``. On the CPU the same seed gives bit-identical weights on one
        machine and torch build.
    """
    (model,) = train_cnns(
        [MemberData(X_train, y_train, seed, epoch_inputs)],
        config=config,
        device=device,
        n_classes=n_classes,
        num_threads=num_threads,
    )
    return unwrap(model)


def train_cnns(
    data: Sequence[MemberData],
    *,
    config: CNNConfig = CNNConfig(),
    device: str | torch.device = "cpu",
    n_classes: int | None = None,
    num_threads: int | None = None,
    memory_budget: int = BATCH_MEMORY,
) -> list[TrainedCNN | TrainingFailed]:
    """:func:`train_cnn` of several members (their images, labels, seeds) by the one loop at once
    (:func:`~synthbench.models.loop.fit_networks`: member by member under one optimiser, each the CNN trained
    alone to the bit; convolutions are not stacked, see :mod:`synthbench.models.stacked`).

    The members must share their image shape; a failed member has its
    :class:`~synthbench.models.loop.TrainingFailed` in its place; members are trained in consecutive groups whose
    images fit ``memory_budget`` bytes.
    """
    shapes = {tuple(int(d) for d in np.shape(d.X)[1:]) for d in data}
    if len(shapes) > 1:
        raise ValueError("the members of a batch of CNNs must share their image shape")
    shape = cast(tuple[int, int, int], shapes.pop())  # fit_classifiers checks it
    out: list[TrainedCNN | TrainingFailed] = []
    for chunk in memory_chunks([np.asarray(d.X).nbytes for d in data], memory_budget):
        part = [data[i] for i in chunk]
        results, dev, k = fit_classifiers(
            lambda generator, k: build_cnn(shape, k, config, generator=generator),
            part,
            config=config.train,
            device=device,
            n_classes=n_classes,
            num_threads=num_threads,
            input_ndim=4,
        )
        for d, result in zip(part, results, strict=True):
            if result.failure is not None:
                out.append(TrainingFailed(f"the CNN's training failed: {result.failure}"))
                continue
            log.debug(
                "trained CNN %s on %d images: %d epochs, best %d", shape, len(d.y), result.epochs_run, result.best_epoch
            )
            out.append(
                TrainedCNN(
                    cast(nn.Sequential, result.module),
                    config,
                    shape,
                    result.epochs_run,
                    result.best_epoch,
                    result.history,
                    result.validation_indices,
                    dev,
                    np.arange(k),
                    train_seconds=result.seconds,
                )
            )
    return out
