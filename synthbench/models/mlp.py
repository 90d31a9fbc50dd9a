"""The benchmark's multilayer perceptron (architecture of the 2023 quantitative benchmark).

Default: ``GaussianNoise(0.1) -> Linear(p, 16) -> LeakyReLU(0.2) -> Linear(16, 16) ->
LeakyReLU(0.2) -> Linear(16, 1)``; the output is a single logit of ``P(y = 1)``, shape ``(n, 1)``
(one logit per class for ``K > 2`` classes). The network is a flat ``nn.Sequential`` so
attribution rules (DeepLIFT, LRP, guided backpropagation) can walk its layers.
:func:`train_mlp` trains it with the one loop (:func:`~synthbench.models.loop.fit_network`) into a
:class:`TrainedMLP`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import nn
from torch.nn.utils import skip_init

from synthbench.models.layers import GaussianNoise
from synthbench.models.loop import EpochInputs, NetworkConfig, TrainConfig, fit_classifier
from synthbench.models.networks import TrainedNetwork
from synthbench.models.randomise import Layer, sequential_layers

__all__ = ["MLPConfig", "TrainedMLP", "build_mlp", "build_seeded_mlp", "train_mlp", "ACTIVATIONS", "initialise_linear",
           "mlp_layers"]

log = logging.getLogger(__name__)

ACTIVATIONS = ("leaky_relu", "relu", "softplus")


@dataclass(frozen=True)
class MLPConfig(NetworkConfig):
    """Architecture of the MLP and how it trains (defaults: the 2023 benchmark's).

    ``train`` is the loop's :class:`~synthbench.models.loop.TrainConfig` (its defaults are the 2023
    benchmark's: Adam 5e-4, weight decay 1e-5, batches of 64, previous-epoch patience 5, clean
    validation, best weights restored); :meth:`~synthbench.models.loop.NetworkConfig.to_dict`
    gives both flat, as cell ids record them.
    """

    width: int = 16
    depth: int = 2  # hidden layers
    activation: Literal["leaky_relu", "relu", "softplus"] = "leaky_relu"
    negative_slope: float = 0.2
    noise_sigma: float = 0.1
    train: TrainConfig = TrainConfig()

    @property
    def n_layers(self) -> int:
        """Parametrised layers (``Linear``), as :func:`mlp_layers` declares them: ``depth + 1``."""
        return self.depth + 1


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
                initialise_linear(layer, generator)
    return net


def initialise_linear(layer: nn.Linear, generator: torch.Generator | None) -> None:
    """The 2023 benchmark's initialisation of one ``Linear`` layer, in place (call under ``no_grad``).

    Weights Kaiming uniform for a leaky ReLU with ``a = 0`` (bound ``sqrt(6 / fan_in)``), Xavier
    uniform where ``fan_in == 1``; bias :data:`BIAS_INIT`.
    """
    if layer.in_features == 1:
        nn.init.xavier_uniform_(layer.weight, generator=generator)
    else:
        nn.init.kaiming_uniform_(layer.weight, nonlinearity="leaky_relu", generator=generator)
    nn.init.constant_(layer.bias, BIAS_INIT)


def mlp_layers(model: TrainedMLP) -> tuple[Layer, ...]:
    """The MLP's ``Linear`` layers in forward order, each with :func:`initialise_linear`."""
    return sequential_layers(model.module, initialise_linear)


def _n_outputs(n_classes: int) -> int:
    """Logits of a classifier of ``n_classes``: one for binary labels, one per class otherwise."""
    return 1 if n_classes <= 2 else int(n_classes)


def build_seeded_mlp(n_features: int, config: MLPConfig, generator: torch.Generator, n_outputs: int = 1) -> nn.Sequential:
    """``build_mlp`` without side effects on torch's global generator.

    ``nn.Linear``'s constructor draws a default initialisation from the global generator
    before ``build_mlp`` overwrites it from ``generator``; ``fork_rng`` restores the global state.
    """
    with torch.random.fork_rng(devices=[]):
        return build_mlp(n_features, config, generator=generator, n_outputs=n_outputs)


@dataclass(eq=False)
class TrainedMLP(TrainedNetwork):
    """A trained benchmark MLP with a scikit-learn-style probability interface.

    Attributes
    ----------
    module : nn.Sequential
        The network in eval mode, on ``device``; maps float32 ``(n, p)`` to logits: ``(n, 1)``
        for binary labels, ``(n, K)`` for ``K > 2`` classes.
    config : MLPConfig
    n_features_in_ : int
        ``p``, the number of input columns.
    epochs_run : int
        Epochs trained before early stopping (or ``config.max_epochs``).
    best_epoch : int
        0-based index into the ``history`` lists of the epoch whose weights were restored
        (the lowest validation loss; the first one on ties).
    history : dict
        ``{"train_loss": [...], "val_loss": [...]}``, one float per epoch: the mean
        training loss over the epoch's batches (noise on) and the validation loss after the
        epoch (eval mode, noise off).
    validation_indices : ndarray of int64, shape (n_val,)
        Rows of ``X_train`` held out for early stopping, in ascending order.
    device : torch.device
    classes_ : ndarray, ``[0, 1, ..., K - 1]``
    """

    module: nn.Sequential = field(repr=False)
    config: MLPConfig
    n_features_in_: int
    epochs_run: int
    best_epoch: int
    history: dict[str, list[float]] = field(repr=False)
    validation_indices: np.ndarray = field(repr=False)
    device: torch.device
    classes_: np.ndarray = field(default_factory=lambda: np.array([0, 1]), repr=False)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n, p)

        Returns
        -------
        ndarray of float64, shape (n, K)
            Column ``c`` is ``P(y = c)``; rows sum to 1. Binary models (one logit) give
            ``[1 - sigmoid, sigmoid]``, multi-class models the softmax.
        """
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n, {self.n_features_in_}), got {X.shape}")
        return super().predict_proba(X)

    def _architecture(self) -> nn.Module:
        return build_seeded_mlp(self.n_features_in_, self.config, torch.Generator().manual_seed(0),
                                n_outputs=_n_outputs(len(self.classes_)))


def train_mlp(
    X_train: np.ndarray,
    y_train: np.ndarray,
    *,
    config: MLPConfig = MLPConfig(),
    seed: int,
    device: str | torch.device = "cpu",
    num_threads: int | None = 1,
    n_classes: int | None = None,
    epoch_inputs: EpochInputs | None = None,
) -> TrainedMLP:
    """Train the benchmark MLP with early stopping on a random validation part.

    Parameters
    ----------
    X_train : ndarray of float32, shape (n, p)
    y_train : ndarray of int, shape (n,), class labels ``0..K-1`` (binary: one logit and binary
        cross-entropy; ``K > 2``: ``K`` logits and softmax cross-entropy)
    config : MLPConfig
        Architecture and training settings.
    seed : int
        Seeds the one ``torch.Generator`` behind the initialisation, the validation split
        (``ceil(validation_fraction * n)`` rows, uniformly at random, not stratified), the
        batch order and the Gaussian input noise.
    device : ``"cpu"``, ``"cuda"``, ``"auto"`` or a ``torch.device`` (see :func:`select_device`).
    num_threads : int or None
        CPU threads torch may use while training (set with :func:`torch_threads` and restored
        afterwards); None keeps the current setting. The default, 1, is much faster for these
        small networks (batches of 64 rows, width 16) than torch's default of one thread per
        core, most of all on a loaded machine, and makes CPU results independent of the core
        count.
    n_classes : int or None
        ``K``; None: one more than the largest label (a fold can lack the last class: pass the
        data set's).
    epoch_inputs : the rows' inputs drawn anew for each epoch (see :func:`fit_network`)

    Returns
    -------
    TrainedMLP
        In eval mode, on ``device``, with the weights ``config.restore`` names.

    Notes
    -----
    The loop is :func:`fit_network`: the ``config`` says what early stopping watches and how
    (``monitor``, ``stopping``, ``patience``, ``validation``), which weights are kept
    (``restore``), the learning-rate schedule and an L1 penalty on the first layer. The default
    config restores the weights of the epoch with the lowest clean validation loss.

    On CPU the result is bit-identical for a seed on one machine and torch build (not
    guaranteed across torch versions or CPU instruction sets). On CUDA the
    initialisation and split still come from the CPU generator; batch order and noise come
    from a CUDA generator seeded from it, so CUDA and CPU runs differ.
    """
    p = np.shape(X_train)[1] if np.ndim(X_train) == 2 else 0

    def build(generator: torch.Generator, k: int) -> nn.Sequential:
        return build_seeded_mlp(p, config, generator, n_outputs=_n_outputs(k))

    result, dev, k = fit_classifier(build, X_train, y_train, config=config.train, seed=seed, device=device,
                                    n_classes=n_classes, num_threads=num_threads, epoch_inputs=epoch_inputs)
    log.debug("trained MLP p=%d n=%d: %d epochs, best %d", p, len(y_train), result.epochs_run, result.best_epoch)
    return TrainedMLP(
        module=result.module,
        config=config,
        n_features_in_=p,
        epochs_run=result.epochs_run,
        best_epoch=result.best_epoch,
        history=result.history,
        validation_indices=result.validation_indices,
        device=dev,
        classes_=np.arange(k),
    )
