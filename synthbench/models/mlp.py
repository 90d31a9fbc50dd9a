"""The benchmark's multilayer perceptron (architecture of the 2023 quantitative benchmark).

Default: ``GaussianNoise(0.1) -> Linear(p, 16) -> LeakyReLU(0.2) -> Linear(16, 16) ->
LeakyReLU(0.2) -> Linear(16, 1)``; the output is a single logit of ``P(y = 1)``, shape ``(n, 1)``
(one logit per class for ``K > 2`` classes). The network is a flat ``nn.Sequential`` so
attribution rules (DeepLIFT, LRP, guided backpropagation) can walk its layers.
:func:`train_mlp` trains it with the one loop (:func:`~synthbench.models.loop.fit_network`) into a
:class:`TrainedMLP`.

A hinge basis (``basis_knots``, with ``group_penalty`` and ``screen_keep``): each input column
first passes through a fixed hinge basis (:mod:`synthbench.models.basis`: ``Linear(p, m * G)``
and ``ReLU`` after the noise layer, fixed weights), the first trained layer may carry a group
penalty ``group_penalty * sum_j ||W_1[:, group j]||`` (one group per input column: its ``G`` basis
units), and the inputs may be screened by successive halving on those group norms (of each
round's last weights: :func:`ranking_weight`; :mod:`synthbench.models.screening`, rounds scored on
the same validation rows).
The returned network takes all ``p`` columns; its basis covers only the columns the chosen
round read (zero weight on every other), so a dropped column changes nothing and costs nothing.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, cast

import numpy as np
import torch
from torch import nn
from torch.nn.utils import skip_init

from synthbench.models.basis import (
    basis_layer,
    basis_units,
    expand,
    group_columns,
    group_norms,
    hinge_knots,
)
from synthbench.models.device import select_device
from synthbench.models.layers import GaussianNoise
from synthbench.models.loop import (
    BATCH_MEMORY,
    EpochInputs,
    GroupPenalty,
    MemberData,
    NetworkConfig,
    TrainConfig,
    TrainingFailed,
    TrainResult,
    check_training_data,
    first_linear,
    first_linear_name,
    fit_classifiers,
    memory_chunks,
    unwrap,
)
from synthbench.models.networks import TrainedNetwork
from synthbench.models.randomise import Layer, sequential_layers
from synthbench.models.screening import successive_halving_many

__all__ = [
    "ACTIVATIONS",
    "BASIS_LAYER",
    "MLPConfig",
    "TrainedMLP",
    "build_mlp",
    "build_seeded_mlp",
    "check_config",
    "initialise_linear",
    "mlp_layers",
    "ranking_weight",
    "train_mlp",
    "train_mlps",
]

log = logging.getLogger(__name__)

ACTIVATIONS = ("leaky_relu", "relu", "softplus")


@dataclass(frozen=True)
class MLPConfig(NetworkConfig):
    """Architecture of the MLP and how it trains (defaults: the 2023 benchmark's).

    ``train`` is the loop's :class:`~synthbench.models.loop.TrainConfig` (its defaults are the 2023
    benchmark's: Adam 5e-4, weight decay 1e-5, batches of 64, previous-epoch patience 5, clean
    validation, best weights restored); :meth:`~synthbench.models.loop.NetworkConfig.to_dict`
    gives both flat, as cell ids record them.

    ``basis_knots`` (``K``; 0: none) puts the fixed hinge basis of ``K + 2`` units per column in
    front (no input noise with it); with it, ``group_penalty`` weighs the group norms of the first
    trained layer and ``screen_keep`` (0: no screening) is the share of inputs each halving round
    keeps. ``screen_budget`` (0: none) caps a screening round on ``n`` inputs at ``ceil(screen_budget / n)``
    epochs (never more than ``max_epochs``): the rounds on many inputs, bound by their compute and rarely the
    chosen round, train briefly and only rank the inputs, the rounds on few train as long as ever (successive
    halving's budget grows as its candidates shrink: Jamieson & Talwalkar, AISTATS 2016). ``binary_logits`` is the
    head of a binary classifier: 1, one logit (evidence for ``y = 1``, binary cross-entropy), or 2, one logit per
    class (softmax cross-entropy), so that a map can be asked of either class (the random-logit check). The five
    enter a cell id only when set.
    """

    width: int = 16
    depth: int = 2  # hidden layers
    activation: Literal["leaky_relu", "relu", "softplus"] = "leaky_relu"
    negative_slope: float = 0.2
    noise_sigma: float = 0.1
    basis_knots: int = 0
    group_penalty: float = 0.0
    screen_keep: float = 0.0
    screen_budget: int = 0
    binary_logits: int = 1
    train: TrainConfig = TrainConfig()

    record_omits: ClassVar[tuple[str, ...]] = NetworkConfig.record_omits + (
        "basis_knots",
        "group_penalty",
        "screen_keep",
        "screen_budget",
        "binary_logits",
    )

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


def check_config(config: MLPConfig) -> None:
    """ValueError for a config no MLP can be built or trained from (the grouped fields' ranges and combinations)."""
    if config.basis_knots < 0 or config.group_penalty < 0:
        raise ValueError(
            f"basis_knots and group_penalty must be non-negative, got {config.basis_knots}, {config.group_penalty}"
        )
    if config.screen_keep and not 0.0 < config.screen_keep < 1.0:
        raise ValueError(f"screen_keep must be 0 (no screening) or lie in (0, 1), got {config.screen_keep}")
    if config.screen_budget < 0 or (config.screen_budget and not config.screen_keep):
        raise ValueError(f"screen_budget must be 0 (none) or positive with screen_keep set, got {config.screen_budget}")
    if (config.group_penalty or config.screen_keep) and not config.basis_knots:
        raise ValueError("group_penalty and screen_keep act on the groups of a hinge basis; set basis_knots > 0")
    if config.basis_knots and config.noise_sigma:
        raise ValueError("a hinge basis (basis_knots > 0) takes no input noise; set noise_sigma=0")
    if config.basis_knots and config.train.l1_first_layer:
        raise ValueError("grouped inputs are penalised by group_penalty, not l1_first_layer")
    if config.binary_logits not in (1, 2):
        raise ValueError(f"binary_logits must be 1 (one logit) or 2 (one per class), got {config.binary_logits}")


#: Child of a basis MLP's ``nn.Sequential`` that holds the fixed hinge basis (after the noise layer).
BASIS_LAYER = "1"


def build_mlp(
    n_features: int,
    config: MLPConfig = MLPConfig(),
    *,
    generator: torch.Generator | None = None,
    n_outputs: int = 1,
    knots: np.ndarray | None = None,
    features: np.ndarray | None = None,
) -> nn.Sequential:
    """A fresh MLP for ``n_features`` inputs, initialised from ``generator`` as the 2023 benchmark does.

    Returns an ``nn.Sequential``: ``GaussianNoise``, with ``config.basis_knots`` the fixed hinge
    basis of the columns ``features`` (None: all; ``Linear(p, m * G)`` at child :data:`BASIS_LAYER`,
    then ``ReLU``; knots ``(m, K)``, zeros when None: a shape to load weights into), then ``depth``
    blocks of ``Linear`` + activation, then
    ``Linear(width, n_outputs)`` (one logit for binary labels, one per class). Trained weights: Kaiming
    uniform for a leaky ReLU with ``a = 0`` (bound ``sqrt(6 / fan_in)``), Xavier uniform where
    ``fan_in == 1``; every bias 1e-3. Torch's global generator is never drawn from (layers are
    created uninitialised).
    """
    if n_features < 1 or config.width < 1 or config.depth < 1 or n_outputs < 1:
        raise ValueError("n_features, width, depth and n_outputs must be positive")
    check_config(config)
    layers: list[nn.Module] = [GaussianNoise(config.noise_sigma)]
    fan_in = n_features
    if config.basis_knots:
        features = np.arange(n_features) if features is None else np.asarray(features, dtype=np.int64)
        if knots is None:
            knots = np.zeros((len(features), config.basis_knots), dtype=np.float32)
        if np.shape(knots) != (len(features), config.basis_knots):
            raise ValueError(f"knots must have shape ({len(features)}, {config.basis_knots}), got {np.shape(knots)}")
        layers += [basis_layer(knots, features, n_features), nn.ReLU()]
        fan_in = len(features) * basis_units(config.basis_knots)
    for _ in range(config.depth):
        layers += [skip_init(nn.Linear, fan_in, config.width), _activation(config)]
        fan_in = config.width
    layers.append(skip_init(nn.Linear, fan_in, n_outputs))
    net = nn.Sequential(*layers)
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, nn.Linear) and layer.weight.requires_grad:
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
    """The MLP's trained ``Linear`` layers in forward order, each with :func:`initialise_linear` (a fixed
    hinge basis trains nothing: no randomisation re-draws it)."""
    return sequential_layers(model.module, initialise_linear)


def _n_outputs(n_classes: int, config: MLPConfig) -> int:
    """Logits of a classifier of ``n_classes``: ``config.binary_logits`` for binary labels, one per class otherwise."""
    return config.binary_logits if n_classes <= 2 else int(n_classes)


def build_seeded_mlp(
    n_features: int,
    config: MLPConfig,
    generator: torch.Generator,
    n_outputs: int = 1,
    knots: np.ndarray | None = None,
    features: np.ndarray | None = None,
) -> nn.Sequential:
    """``build_mlp`` without side effects on torch's global generator.

    ``nn.Linear``'s constructor draws a default initialisation from the global generator
    before ``build_mlp`` overwrites it from ``generator``; ``fork_rng`` restores the global state.
    """
    with torch.random.fork_rng(devices=[]):
        return build_mlp(n_features, config, generator=generator, n_outputs=n_outputs, knots=knots, features=features)


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
    features : ndarray of int64 or None
        With a hinge basis: the columns the network reads (a screening's chosen round; its basis
        gives every other column zero weight); None without a basis.
    screening : tuple of ``(inputs, score)``
        A screening's rounds in order: inputs read and the validation value early stopping watched
        (AUROC, or minus the loss); empty without screening.
    train_seconds : float
        Its share of its batch's training time (every screening round's).
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
    features: np.ndarray | None = field(default=None, repr=False)
    screening: tuple[tuple[int, float], ...] = ()
    train_seconds: float = field(default=0.0, repr=False)

    @property
    def n_outputs(self) -> int:
        """Its logits: one for binary labels unless its config asks one per class (``binary_logits``), one per class
        otherwise."""
        return _n_outputs(len(self.classes_), self.config)

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
        return build_seeded_mlp(
            self.n_features_in_,
            self.config,
            torch.Generator().manual_seed(0),
            n_outputs=_n_outputs(len(self.classes_), self.config),
            features=self.features,
        )


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
    device : ``"cpu"``, ``"cuda"``, ``"auto"`` or a ``torch.device``
        (see :func:`~synthbench.models.device.select_device`).
    num_threads : int or None
        CPU threads torch may use while training (set with :func:`~synthbench.models.device.torch_threads` and
        restored afterwards); None keeps the current setting. The default, 1, is much faster for these small
        networks (batches of 64 rows, width 16) than torch's default of one thread per core, most of all on a
        loaded machine, and makes CPU results independent of the core count.
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
    (model,) = train_mlps(
        [MemberData(X_train, y_train, seed, epoch_inputs)],
        config=config,
        device=device,
        num_threads=num_threads,
        n_classes=n_classes,
    )
    return unwrap(model)


def train_mlps(
    data: Sequence[MemberData],
    *,
    config: MLPConfig = MLPConfig(),
    device: str | torch.device = "cpu",
    num_threads: int | None = 1,
    n_classes: int | None = None,
    memory_budget: int = BATCH_MEMORY,
) -> list[TrainedMLP | TrainingFailed]:
    """:func:`train_mlp` of several members (their rows, labels, seeds) as one batched computation.

    Each member's model is the one :func:`train_mlp` gives it alone (:func:`~synthbench.models.loop.fit_networks`);
    the members of one call must share their number of columns. A member whose training failed has its
    :class:`~synthbench.models.loop.TrainingFailed` in its place. Members are trained in consecutive
    groups whose inputs (with a hinge basis, their expansion) fit ``memory_budget`` bytes.
    """
    check_config(config)
    if len({np.shape(d.X)[1:] for d in data}) > 1:
        raise ValueError("the members of a batch of MLPs must share their number of columns")
    factor = basis_units(config.basis_knots) if config.basis_knots else 1
    out: list[TrainedMLP | TrainingFailed] = []
    for chunk in memory_chunks([factor * np.asarray(d.X).nbytes for d in data], memory_budget):
        part = [data[i] for i in chunk]
        if config.basis_knots:
            out += _train_grouped(part, config=config, device=device, num_threads=num_threads, n_classes=n_classes)
            continue
        p = int(np.shape(part[0].X)[1]) if np.ndim(part[0].X) == 2 else 0

        def build(generator: torch.Generator, k: int) -> nn.Sequential:
            return build_seeded_mlp(p, config, generator, n_outputs=_n_outputs(k, config))

        results, dev, k = fit_classifiers(
            build, part, config=config.train, device=device, n_classes=n_classes, num_threads=num_threads
        )
        for d, result in zip(part, results, strict=True):
            log.debug("trained MLP p=%d n=%d: %d epochs, best %d", p, len(d.y), result.epochs_run, result.best_epoch)
        out += [_trained(r.module, r, config, p, dev, k) for r in results]
    return out


def _trained(
    module: nn.Module, result: TrainResult, config: MLPConfig, p: int, dev: torch.device, k: int, **chosen: Any
) -> TrainedMLP | TrainingFailed:
    """The :class:`TrainedMLP` of ``module`` (in eval mode, on ``dev``), with ``result``'s training record (its
    failure, when it failed)."""
    if result.failure is not None:
        return _failed(result)
    return TrainedMLP(
        module=cast(nn.Sequential, module),
        config=config,
        n_features_in_=p,
        epochs_run=result.epochs_run,
        best_epoch=result.best_epoch,
        history=result.history,
        validation_indices=result.validation_indices,
        device=dev,
        classes_=np.arange(k),
        train_seconds=result.seconds,
        **chosen,
    )


#: Scale of the drawn initialisation of a basis network's first trained layer (see :func:`_train_grouped`).
FIRST_LAYER_SCALE = 0.1


def _failed(result: TrainResult) -> TrainingFailed:
    """What takes the place of a member whose training failed."""
    return TrainingFailed(f"the MLP's training failed: {result.failure}")


def _monitored(result: TrainResult, config: TrainConfig) -> float:
    """The best epoch's validation value early stopping watched, higher is better (AUROC, or minus the loss)."""
    if result.best_epoch < 0:
        return -np.inf
    if config.monitor == "auroc":
        return float(result.history["val_auroc"][result.best_epoch])
    return -float(result.history["val_loss"][result.best_epoch])


def _train_grouped(
    data: Sequence[MemberData],
    *,
    config: MLPConfig,
    device: str | torch.device,
    num_threads: int | None,
    n_classes: int | None,
) -> list[TrainedMLP | TrainingFailed]:
    """:func:`train_mlp` with a hinge basis (see the module docstring).

    The network after the basis (a plain MLP of the basis units) trains on the units computed
    once (:func:`~synthbench.models.basis.expand`; ``epoch_inputs`` expanded per epoch), with the
    group penalty. Its first layer starts from :data:`FIRST_LAYER_SCALE` times its drawn
    initialisation, so a group's norm is mostly what training put there: at the full draw the norms
    of a network still near chance rank the draw (the screening of a ring with 1000 decoys lost its
    two features on every fold of data seed 0); at zero, xor starts on its saddle and the first
    round stops before it leaves it (two folds of six lost xor with 100 decoys). With
    ``screen_keep`` and validation rows, :func:`successive_halving` retrains it
    on fewer columns, every round seeded with ``seed`` and validated on the first round's rows,
    starting from the columns that vary on the training rows (a column of one value, as
    remove-and-retrain leaves the ones it removed, can carry nothing; with ``epoch_inputs``, every
    column); without validation (``validation="none"``) there is one round on all columns. The chosen
    round's layers then follow the basis of the columns it read, in a network of ``p`` inputs.
    """
    checked = [check_training_data(d.X, d.y) for d in data]
    p, units = checked[0][0].shape[1], basis_units(config.basis_knots)
    knots = [hinge_knots(X, config.basis_knots) for X, _ in checked]
    Z = [expand(X, kn) for (X, _), kn in zip(checked, knots, strict=True)]
    after = replace(config, basis_knots=0, group_penalty=0.0, screen_keep=0.0, screen_budget=0)
    penalty = GroupPenalty(config.group_penalty, units) if config.group_penalty else None
    held: list[np.ndarray | None] = [None] * len(data)
    seconds = [0.0] * len(data)
    dev = select_device(device)

    def fit(members: list[int], features: list[np.ndarray]) -> list[tuple[Any, float, np.ndarray] | BaseException]:
        cols = [group_columns(f, units) for f in features]

        def build(gen: torch.Generator, k: int) -> nn.Sequential:
            net = build_seeded_mlp(len(cols[0]), after, gen, n_outputs=_n_outputs(k, after))
            with torch.no_grad():
                first_linear(net).weight.mul_(FIRST_LAYER_SCALE)
            return net

        part = [
            MemberData(
                Z[i][:, c],
                checked[i][1],
                data[i].seed,
                _expanded(data[i].epoch_inputs, f, knots[i]),
                held[i],
            )
            for i, c, f in zip(members, cols, features, strict=True)
        ]
        results, _, k = fit_classifiers(
            build,
            part,
            config=_round_training(config, len(features[0])),
            device=dev,
            n_classes=n_classes,
            num_threads=num_threads,
            penalty=penalty,
        )
        out: list[tuple[Any, float, np.ndarray] | BaseException] = []
        for i, result in zip(members, results, strict=True):
            seconds[i] += result.seconds
            if result.failure is not None:
                out.append(_failed(result))
                continue
            if held[i] is None:
                held[i] = result.validation_indices
            with torch.no_grad():
                importance = group_norms(ranking_weight(result), units).cpu().numpy()
            out.append(((result, k), _monitored(result, config.train), importance))
        return out

    if config.screen_keep and config.train.validation != "none":
        start = [np.arange(p) if d.epoch_inputs else _varying(X) for d, (X, _) in zip(data, checked, strict=True)]
        outcomes = successive_halving_many(fit, start, config.screen_keep)
        chosen = [o if isinstance(o, BaseException) else (o[0].features, o[0].model, o[1]) for o in outcomes]
    else:
        fitted = fit(list(range(len(data))), [np.arange(p)] * len(data))
        chosen = [o if isinstance(o, BaseException) else (np.arange(p), o[0], []) for o in fitted]
    models: list[TrainedMLP | TrainingFailed] = []
    for i, c in enumerate(chosen):
        if isinstance(c, BaseException):
            models.append(cast(TrainingFailed, c))
            continue
        features, (result, k), screening = c
        module = build_seeded_mlp(
            p,
            config,
            torch.Generator().manual_seed(0),
            n_outputs=_n_outputs(k, config),
            knots=knots[i][features],
            features=features,
        )
        trained = [m for m in module if isinstance(m, nn.Linear) and m.weight.requires_grad]
        with torch.no_grad():
            fitted_module = cast(nn.Sequential, result.module)  # built by build_seeded_mlp
            for target, source in zip(trained, [m for m in fitted_module if isinstance(m, nn.Linear)], strict=True):
                target.load_state_dict(source.state_dict())
        result.seconds = seconds[i]  # every round's share
        log.debug("trained basis MLP p=%d: reads %d inputs, rounds %s", p, len(features), screening)
        models.append(
            _trained(module.to(dev).eval(), result, config, p, dev, k, features=features, screening=tuple(screening))
        )
    return models


def ranking_weight(result: TrainResult) -> torch.Tensor:
    """The first trained layer's weight ``(out, in)`` a screening round ranks its inputs by: the last epoch's, what
    training and the group penalty made of it, where the best epoch's were restored (that may be an early epoch's,
    still near the drawn initialisation: ranking on it lost a ring's two inputs among 1000 decoys, and xor's among 100,
    on folds whose round on every input scored best at its first epoch)."""
    if result.last_state is None:
        return first_linear(result.module).weight
    return result.last_state[first_linear_name(result.module)]


def _round_training(config: MLPConfig, n_inputs: int) -> TrainConfig:
    """The training of a screening round on ``n_inputs`` inputs: at most ``ceil(screen_budget / n_inputs)`` epochs
    (never more than ``max_epochs``; the config's training when there is no budget)."""
    if not config.screen_budget:
        return config.train
    return replace(config.train, max_epochs=min(config.train.max_epochs, math.ceil(config.screen_budget / n_inputs)))


def _varying(X: np.ndarray) -> np.ndarray:
    """The columns of ``X`` ``(n, p)`` that are not constant (ascending int64; every column when none varies)."""
    varying = np.flatnonzero((X != X[:1]).any(axis=0))
    return varying if len(varying) else np.arange(X.shape[1], dtype=np.int64)


def _expanded(epoch_inputs: EpochInputs | None, features: np.ndarray, knots: np.ndarray) -> EpochInputs | None:
    """``epoch_inputs`` of the columns ``features``, expanded in their hinge basis (None stays None)."""
    if epoch_inputs is None:
        return None
    return lambda epoch: expand(np.asarray(epoch_inputs(epoch))[:, features], knots[features])
