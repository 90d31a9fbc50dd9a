"""The one training loop of every benchmark network.

:func:`fit_network` trains any module mapping ``(b, *input_shape)`` to logits (tables or images;
one logit for binary labels, one per class otherwise) with Adam, mini-batches, the classification
loss (binary or softmax cross-entropy, :func:`classification_loss`) or a caller's batch loss,
optional penalties, and early stopping on a random validation part of the training rows (not
stratified, as ``sklearn.model_selection.train_test_split`` without ``stratify`` in the reference
code) or a fixed number of epochs without one. A :class:`TrainConfig` chooses what stopping
watches (validation loss or AUROC), how the validation loss is measured (clean, or as the 2023
code did: noise on, summed over batches), which weights are kept (the best epoch's, truly
copied, or the last), a learning-rate schedule and an L1 penalty on the first layer; the presets
of :mod:`synthbench.models.presets` name the useful combinations. The MLP
(:func:`~synthbench.models.mlp.train_mlp`), the CNN (:func:`~synthbench.models.cnn.train_cnn`),
the embedded selectors (:mod:`synthbench.methods.embedded`) and the concrete selectors and
DeepPINK (:mod:`synthbench.methods.selectors`, :mod:`synthbench.methods.selectors_2023`) all
train with it. There is no other training loop.

Reproducibility: every random draw (initialisation, validation split, batch order, the
``GaussianNoise`` layer) comes from one ``torch.Generator`` seeded with ``seed``; on CPU the
same seed gives bit-identical weights. A replicate is another seed. Nothing touches torch's
global generator or its thread setting.

Speed: the training rows live on the device as tensors; batches are contiguous slices of one
gathered permutation per epoch; losses are accumulated on the device and read back once per
epoch; the clean validation loss is one forward pass (in chunks of :data:`PREDICT_BATCH` rows).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synthbench.models.device import cpu_threads, select_device
from synthbench.models.layers import seed_noise_layers

__all__ = [
    "TrainConfig",
    "NetworkConfig",
    "TrainResult",
    "Penalty",
    "BatchLoss",
    "EpochInputs",
    "classification_loss",
    "fit_network",
    "fit_classifier",
    "first_linear",
    "plateau_2023",
    "check_training_data",
    "n_classes_of",
    "TRAINING_VERSION",
    "PREDICT_BATCH",
]

log = logging.getLogger(__name__)

#: Part of the model cache's key; bump it whenever a change to the loop changes trained weights.
TRAINING_VERSION = 3

#: Rows per forward pass when predicting or validating.
PREDICT_BATCH = 8192


def _adam(param_groups: list[dict], lr: float, eps: float = 1e-8, fused: bool = True) -> torch.optim.Adam:
    """Adam over ``param_groups``; with ``fused``, the fused kernel where torch has one for the device.

    The fused kernel (CUDA; CPU from torch 2.4) cuts 15-30 % off a CPU epoch of these small
    networks; older builds fall back to the default implementation.
    """
    if fused:
        try:
            return torch.optim.Adam(param_groups, lr=lr, eps=eps, fused=True)
        except RuntimeError:
            pass
    return torch.optim.Adam(param_groups, lr=lr, eps=eps)


def check_training_data(
    X_train: np.ndarray, y_train: np.ndarray, *, any_shape: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``X`` as contiguous float32 (2-D unless ``any_shape``) and ``y`` as int64 labels, or ValueError."""
    X = np.ascontiguousarray(X_train, dtype=np.float32)
    y = np.asarray(y_train)
    if X.ndim != 2 and not (any_shape and X.ndim >= 2):
        raise ValueError(f"X_train must be 2-D (n, p), got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y_train must have shape ({X.shape[0]},), got {y.shape}")
    integral = np.issubdtype(y.dtype, np.integer) or np.array_equal(y, np.round(y))
    if not integral or (y.size and y.min() < 0):
        raise ValueError("y_train must hold integer class labels 0, 1, ..., K - 1")
    if not np.isfinite(X).all():
        raise ValueError("X_train holds NaN or infinite values")
    return X, np.ascontiguousarray(y, dtype=np.int64)


def _n_validation(n: int, fraction: float) -> int:
    """Validation rows out of ``n``: ``ceil(fraction * n)`` as scikit-learn's ``train_test_split``."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_fraction must lie in (0, 1), got {fraction}")
    n_val = math.ceil(fraction * n)
    if n_val < 1 or n - n_val < 1:
        raise ValueError(f"{n} rows are too few for a validation fraction of {fraction}")
    return n_val


def n_classes_of(y: np.ndarray, n_classes: int | None) -> int:
    """``n_classes`` checked against the labels, or (None) one more than the largest label; at least 2."""
    found = int(y.max()) + 1 if len(y) else 2
    if n_classes is None:
        return max(2, found)
    if n_classes < max(2, found):
        raise ValueError(f"n_classes={n_classes} but the labels go up to {found - 1}")
    return int(n_classes)


#: ``penalty(module, xb, loss) -> scalar tensor`` added to the batch loss. ``xb`` is the batch
#: ``(b, *input_shape)`` (requiring grad when the loop is told ``input_grad=True``), ``loss`` the
#: batch's mean classification loss, still attached to the graph.
Penalty = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]

#: ``epoch_inputs(epoch) -> X``: float32 ``(n, *input_shape)``, every row's inputs for the 0-based
#: ``epoch``, in place of ``X`` for the rows that train (see :func:`fit_network`).
EpochInputs = Callable[[int], np.ndarray]

#: ``loss(module, xb, yb, step) -> scalar tensor``: a batch's whole training objective in place of
#: the classification loss (selectors whose forward pass is not a classifier); ``yb`` holds the
#: batch's int64 labels, ``step`` is the 0-based optimisation step.
BatchLoss = Callable[[Any, torch.Tensor, torch.Tensor, int], torch.Tensor]  # (the network trained, x, y, step)


@dataclass(frozen=True)
class TrainConfig:
    """How :func:`fit_network` trains: optimiser, batches, stopping, validation, restore, schedule.

    Attributes
    ----------
    lr, weight_decay, adam_eps : Adam's settings (weight decay as torch's L2 added to the gradient)
    fused_adam : torch's fused Adam kernel (faster on CPU and CUDA; its rounding differs from the
        default kernel's, so a network trained one way is not bit-identical to the other)
    batch_size : rows per optimisation step
    max_epochs : epochs at most (exactly, when ``validation="none"``)
    patience, stopping : early stopping ends after ``patience`` epochs in a row whose monitored
        value does not beat the previous epoch's (``"previous"``, the 2023 rule) or the best so far
    validation_fraction : share of the rows held out (``ceil``), drawn at random, not stratified
    monitor : what early stopping watches: the validation loss (lower is better) or, for binary
        single-logit models, the validation AUROC (higher is better)
    validation : ``"clean"`` (eval mode, one pass, mean loss), ``"noisy_batches"`` (the 2023
        code: training mode, noise on, shuffled batches, the sum of the batch means) or
        ``"none"`` (no held-out rows and no early stopping: every row trains for ``max_epochs``,
        the last weights are kept; needs ``restore="last"``)
    restore : weights kept: the best epoch's (copied, never aliased) or the last
    lr_schedule : ``"plateau2023"`` steps :func:`plateau_2023` on each epoch's summed objective
    l1_first_layer : weight of ``sum |W_1|`` of the first Linear layer added to each batch's loss
    """

    lr: float = 5e-4
    weight_decay: float = 1e-5
    adam_eps: float = 1e-8
    fused_adam: bool = True
    batch_size: int = 64
    max_epochs: int = 1000
    patience: int = 5
    stopping: str = "previous"
    validation_fraction: float = 0.2
    monitor: str = "loss"
    validation: str = "clean"
    restore: str = "best"
    lr_schedule: str = "constant"
    l1_first_layer: float = 0.0


class NetworkConfig:
    """Base of a network's config dataclass: its architecture fields and ``train``, its one :class:`TrainConfig`.

    :meth:`to_dict` is flat, the architecture and training fields side by side: what a cell id
    records of a preset. It leaves out the fields of :attr:`record_omits` (architecture or
    training) while they hold their default: fields the config did not have when those ids were
    first written (setting one to another value enters the id). :meth:`from_dict` reads a flat dict
    back, training fields absent from it taking the class's own default training.
    """

    record_omits: ClassVar[tuple[str, ...]] = ("adam_eps", "fused_adam")
    train: TrainConfig

    def to_dict(self) -> dict[str, Any]:
        own = {
            f.name: getattr(self, f.name)
            for f in fields(cast(Any, self))  # a subclass is the dataclass
            if f.name != "train" and not (f.name in self.record_omits and getattr(self, f.name) == f.default)
        }
        default = TrainConfig()
        training = {
            f.name: getattr(self.train, f.name)
            for f in fields(TrainConfig)
            if not (f.name in self.record_omits and getattr(self.train, f.name) == getattr(default, f.name))
        }
        return {**own, **training}

    @classmethod
    def from_dict(cls, flat: Mapping[str, Any]) -> Any:
        """The config of a flat dict of architecture and training fields (TypeError for an unknown field)."""
        own = {f.name for f in fields(cast(Any, cls))} - {"train"}
        training = {f.name for f in fields(TrainConfig)}
        unknown = sorted(set(flat) - own - training)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
        train = replace(cls().train, **{k: v for k, v in flat.items() if k in training})
        return cast(Any, cls)(**{k: v for k, v in flat.items() if k in own}, train=train)


@dataclass(eq=False)
class TrainResult:
    """What :func:`fit_network` returns.

    Attributes
    ----------
    module : nn.Module, trained, in eval mode, on ``device``
    epochs_run : int
    best_epoch : int, 0-based epoch of the best monitored value (-1 when none was finite or
        without validation); its weights were restored when ``config.restore == "best"``
    history : dict of lists, one float per epoch: ``"train_loss"`` (objective, mean over the
        epoch's batches) and, with validation, ``"val_loss"`` (classification loss, penalties
        excluded, measured as ``config.validation`` says) and, when ``config.monitor == "auroc"``,
        ``"val_auroc"`` (eval mode)
    validation_indices : int64 ``(n_val,)``, rows of ``X`` held out for early stopping, ascending
        (empty without validation)
    steps : optimisation steps taken
    """

    module: nn.Module
    epochs_run: int
    best_epoch: int
    history: dict[str, list[float]]
    validation_indices: np.ndarray
    steps: int = 0


def plateau_2023(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.ReduceLROnPlateau:
    """The 2023 code's schedule: torch's ReduceLROnPlateau (factor 0.9, patience 10, relative
    threshold 1e-4, cooldown 5, floor 1e-5), to be stepped on each epoch's summed training loss."""
    return torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer,
        mode="min",
        factor=0.9,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=5,
        min_lr=1e-5,
        eps=1e-8,
    )


def _check_config(config: TrainConfig) -> None:
    if config.batch_size < 1 or config.max_epochs < 1 or config.patience < 1:
        raise ValueError("batch_size, max_epochs and patience must be positive")
    choices = {
        "stopping": ("previous", "best"),
        "monitor": ("loss", "auroc"),
        "validation": ("clean", "noisy_batches", "none"),
        "restore": ("best", "last"),
        "lr_schedule": ("constant", "plateau2023"),
    }
    for name, valid in choices.items():
        if getattr(config, name) not in valid:
            raise ValueError(f"{name} must be one of {valid}, got {getattr(config, name)!r}")
    if config.l1_first_layer < 0:
        raise ValueError(f"l1_first_layer must be non-negative, got {config.l1_first_layer}")
    if config.validation == "none" and config.restore != "last":
        raise ValueError(
            "validation='none' trains without held-out rows and keeps the last weights; set restore='last'"
        )


def first_linear(module: nn.Module) -> nn.Linear:
    """The first ``nn.Linear`` of ``module`` in registration order (ValueError when it has none)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            return m
    raise ValueError(f"{type(module).__name__} has no linear layer")


def classification_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean classification loss of a batch: binary cross-entropy on a single logit ``(b, 1)`` or
    ``(b,)``, softmax cross-entropy on ``(b, K)`` logits with ``K >= 2``; ``y`` int labels ``(b,)``."""
    if logits.dim() == 1 or logits.shape[1] == 1:
        return F.binary_cross_entropy_with_logits(logits.reshape(-1), y.to(logits.dtype))
    return F.cross_entropy(logits, y)


def _auroc(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Held-out AUROC of single-logit ``logits`` for binary ``y`` (0.5 when one class is absent).

    The Mann-Whitney form, ``(R1 - n1 (n1 + 1) / 2) / (n1 n0)`` with ``R1`` the positives' summed
    ranks (ties averaged), equal to :func:`sklearn.metrics.roc_auc_score`; computed every epoch, so
    without scikit-learn's input validation (a fifth of a screened MLP's training time).
    """
    from scipy.stats import rankdata

    if logits.dim() == 2 and logits.shape[1] != 1:
        raise ValueError("monitor='auroc' needs a binary model with a single logit; use monitor='loss'")
    positive = y.cpu().numpy() == 1
    n1 = int(positive.sum())
    n0 = positive.size - n1
    if n1 == 0 or n0 == 0:
        return 0.5
    ranks = rankdata(logits.reshape(-1).double().cpu().numpy())
    return float((ranks[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _validate(
    module: nn.Module, X_val: torch.Tensor, y_val: torch.Tensor, config: TrainConfig, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The epoch's validation loss as ``config.validation`` says, and the clean logits when stopping watches AUROC.

    ``"noisy_batches"`` (the 2023 code): measured before switching to eval mode, so the input
    noise is on, over a fresh order of the rows drawn from ``generator``, as the sum of the
    batch means. ``"clean"``: the mean loss of one eval-mode pass. Returns ``(loss, logits)``,
    ``logits`` the model's output on ``X_val`` or None; the module is in eval mode afterwards.
    """
    bs, n_val = int(config.batch_size), X_val.shape[0]
    with torch.no_grad():
        if config.validation == "noisy_batches":
            order = torch.randperm(n_val, generator=generator, device=X_val.device)
            Xv, yv = X_val[order], y_val[order]
            # summed in order as the 2023 code did (a tensor: there is at least one batch)
            loss = cast(
                torch.Tensor,
                sum(classification_loss(module(Xv[s : s + bs]), yv[s : s + bs]) for s in range(0, n_val, bs)),
            )
        module.eval()
        logits = None
        if config.monitor == "auroc" or config.validation == "clean":
            logits = torch.cat([module(X_val[s : s + PREDICT_BATCH]) for s in range(0, n_val, PREDICT_BATCH)])
        if logits is not None and config.validation == "clean":
            loss = classification_loss(logits, y_val)
    return loss, logits


def fit_network(
    module: nn.Module,
    X: np.ndarray,
    y: np.ndarray,
    *,
    config: TrainConfig,
    generator: torch.Generator,
    device: torch.device,
    loss: BatchLoss | None = None,
    penalty: Penalty | None = None,
    input_grad: bool = False,
    gate_params: tuple[nn.Parameter, ...] = (),
    gate_lr: float | None = None,
    epoch_inputs: EpochInputs | None = None,
    validation_rows: np.ndarray | None = None,
) -> TrainResult:
    """The one training loop of every benchmark network: MLPs, CNNs, embedded and concrete selectors.

    Parameters
    ----------
    module : nn.Module mapping float32 ``(b, *input_shape)`` to logits: ``(b, 1)`` for a binary
        model, ``(b, K)`` for ``K`` classes (see :func:`classification_loss`); already initialised
        (on the CPU or ``device``). Every random layer inside (``seed_noise_layers``) draws from
        the run's generator while training.
    X : float32 ``(n, *input_shape)``;  y : int ``(n,)`` class labels ``0..K-1``
    config : TrainConfig (a preset's is its config's ``train``)
    generator : CPU ``torch.Generator``; draws the validation split, then (on CPU) the batch
        order, the noise and the order of noisy validation batches (on CUDA those come from a
        CUDA generator seeded from it). A replicate is another generator.
    device : where to train.
    loss : the batch objective in place of the classification loss (:data:`BatchLoss`).
    penalty : added to each batch's classification loss before the backward pass.
    input_grad : mark each batch as requiring grad before the forward pass (penalties on input
        gradients).
    gate_params : parameters put in their own Adam group: no weight decay and learning rate
        ``gate_lr`` (None: ``config.lr``).
    epoch_inputs : ``fn(epoch) -> X_epoch`` of ``X``'s shape, called at the start of every epoch;
        the rows that train read it instead of ``X`` (inputs redrawn each epoch, such as a
        random removal mask drawn anew), the validation rows keep ``X``'s values.
    validation_rows : the rows of ``X`` held out, in place of drawing ``config.validation_fraction`` of
        them (trainings compared on the same rows: another's ``validation_indices``); nothing is drawn
        for the split then, so the generator's later draws differ from a drawn split's.

    Returns
    -------
    TrainResult

    Notes
    -----
    Per epoch: the training rows are visited in a fresh random order in batches of
    ``config.batch_size`` (the last one may be smaller), one Adam step each; the objective is
    ``loss`` or the batch's mean classification loss, plus ``l1_first_layer * sum |W_1|``, plus
    ``penalty``. Then the learning-rate schedule steps (``plateau2023``: on the epoch's summed
    objective), then the validation value is measured. Early stopping counts epochs whose
    monitored value does not beat the previous epoch's (``stopping="previous"``, the 2023 rule)
    or the best so far (``"best"``); ``patience`` such epochs in a row end training, as does
    ``max_epochs``. ``restore="best"`` restores the weights of the best epoch (copied, never
    aliased). With ``validation="none"`` every row trains and the loop runs ``max_epochs``.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig (a preset's config.train), got {type(config).__name__}")
    _check_config(config)
    n = X.shape[0]
    validate = config.validation != "none"
    if validate and validation_rows is not None:
        held = np.zeros(n, dtype=bool)
        held[np.asarray(validation_rows, dtype=np.int64)] = True
        n_val = int(held.sum())
        if n_val < 1 or n_val == n:
            raise ValueError(f"validation_rows must hold out some but not all of the {n} rows, got {n_val}")
        val_idx, tr_idx = torch.from_numpy(np.flatnonzero(held)), torch.from_numpy(np.flatnonzero(~held))
    elif validate:
        n_val = _n_validation(n, config.validation_fraction)
        perm = torch.randperm(n, generator=generator)
        val_idx, tr_idx = torch.sort(perm[:n_val]).values, torch.sort(perm[n_val:]).values
    else:
        n_val, val_idx, tr_idx = 0, torch.empty(0, dtype=torch.long), None
    if device.type == "cpu":
        dev_gen = generator
    else:
        dev_gen = torch.Generator(device=device).manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))

    X_all = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    y_all = torch.from_numpy(np.asarray(y, dtype=np.int64))
    if tr_idx is None:
        X_tr, y_tr = X_all.to(device), y_all.to(device)
    else:
        X_tr, y_tr = X_all[tr_idx].to(device), y_all[tr_idx].to(device)
        X_val, y_val = X_all[val_idx].to(device), y_all[val_idx].to(device)
    n_tr, bs = n - n_val, int(config.batch_size)
    starts = list(range(0, n_tr, bs))

    module = module.to(device)
    own = {id(q) for q in gate_params}
    groups = [
        {"params": [q for q in module.parameters() if id(q) not in own], "weight_decay": config.weight_decay},
        {
            "params": [q for q in module.parameters() if id(q) in own],
            "weight_decay": 0.0,
            "lr": config.lr if gate_lr is None else float(gate_lr),
        },
    ]
    optimizer = _adam([g for g in groups if g["params"]], config.lr, config.adam_eps, config.fused_adam)
    scheduler = plateau_2023(optimizer) if config.lr_schedule == "plateau2023" else None
    first = first_linear(module) if config.l1_first_layer > 0 else None
    higher = config.monitor == "auroc"

    history: dict[str, list[float]] = {"train_loss": []}
    if validate:
        history["val_loss"] = []
    if validate and higher:
        history["val_auroc"] = []
    best = previous = -math.inf if higher else math.inf
    best_epoch, stale, step = -1, 0, 0
    best_state: dict[str, torch.Tensor] = {}

    def better(a: float, b: float) -> bool:
        return a > b if higher else a < b

    seed_noise_layers(module, dev_gen)
    try:
        for epoch in range(int(config.max_epochs)):
            module.train()
            if epoch_inputs is not None:
                X_tr = _epoch_rows(epoch_inputs(epoch), X.shape, tr_idx).to(device)
            order = torch.randperm(n_tr, generator=dev_gen, device=device)
            Xe, ye = X_tr[order], y_tr[order]
            total = torch.zeros((), device=device)
            for s in starts:
                xb, yb = Xe[s : s + bs], ye[s : s + bs]
                if input_grad:
                    xb = xb.clone().requires_grad_(True)
                base = loss(module, xb, yb, step) if loss is not None else classification_loss(module(xb), yb)
                objective = base
                if first is not None:
                    objective = objective + config.l1_first_layer * first.weight.abs().sum()
                if penalty is not None:
                    objective = objective + penalty(module, xb, base)
                optimizer.zero_grad(set_to_none=True)
                objective.backward()
                optimizer.step()
                total += objective.detach()
                step += 1
            if not validate:
                train_sum = float(total)
                if scheduler is not None:
                    scheduler.step(train_sum)
                history["train_loss"].append(train_sum / len(starts))
                continue
            val_loss, val_logits = _validate(module, X_val, y_val, config, dev_gen)  # leaves the module in eval mode
            train_sum, val = torch.stack([total, val_loss]).tolist()  # one sync per epoch
            if scheduler is not None:
                scheduler.step(train_sum)
            history["train_loss"].append(train_sum / len(starts))
            history["val_loss"].append(val)
            if higher and val_logits is not None:  # the logits are kept when stopping watches AUROC
                val = _auroc(val_logits, y_val)
                history["val_auroc"].append(val)
            reference = previous if config.stopping == "previous" else best
            stale = 0 if better(val, reference) else stale + 1
            previous = val
            if better(val, best):
                best, best_epoch = val, epoch
                if config.restore == "best":
                    best_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
            if stale >= config.patience:
                break
    finally:
        seed_noise_layers(module, None)
    if best_state:
        module.load_state_dict(best_state)
    elif config.restore == "best":
        log.warning(
            "training: no finite validation value in %d epochs; keeping the last weights", len(history["train_loss"])
        )
    module.eval()
    return TrainResult(module, len(history["train_loss"]), best_epoch, history, val_idx.numpy().astype(np.int64), step)


def fit_classifier(
    build: Callable[[torch.Generator, int], nn.Module],
    X_train: np.ndarray,
    y_train: np.ndarray,
    *,
    config: TrainConfig,
    seed: int,
    device: str | torch.device,
    n_classes: int | None,
    num_threads: int | None,
    epoch_inputs: EpochInputs | None = None,
    input_ndim: int = 2,
    penalty: Penalty | None = None,
    validation_rows: np.ndarray | None = None,
) -> tuple[TrainResult, torch.device, int]:
    """What every trainer of a classifier network does: check the data, build, fit.

    ``X_train`` is checked to be ``input_ndim``-D float32 (2: tables ``(n, p)``, 4: images),
    ``y_train`` labels ``0..K-1`` (``K`` from :func:`n_classes_of`); one CPU generator seeded with
    ``seed`` draws the network's initialisation (``build(generator, K)``) and then everything
    :func:`fit_network` draws; torch runs on ``num_threads`` CPU threads meanwhile (None: its
    setting); ``penalty`` and ``validation_rows`` go to :func:`fit_network`. Returns ``(result, device, K)``.
    """
    X, y = check_training_data(X_train, y_train, any_shape=input_ndim != 2)
    if X.ndim != input_ndim:
        raise ValueError(f"X_train must be images (n, C, H, W), got shape {X.shape}")
    k = n_classes_of(y, n_classes)
    dev = select_device(device)
    with cpu_threads(dev, num_threads):
        gen = torch.Generator().manual_seed(int(seed))
        result = fit_network(
            build(gen, k),
            X,
            y,
            config=config,
            generator=gen,
            device=dev,
            epoch_inputs=epoch_inputs,
            penalty=penalty,
            validation_rows=validation_rows,
        )
    return result, dev, k


def _epoch_rows(X_epoch: np.ndarray, shape: tuple[int, ...], rows: torch.Tensor | None) -> torch.Tensor:
    """The training ``rows`` (None: all) of one epoch's inputs, checked against ``X``'s ``shape``."""
    if np.shape(X_epoch) != tuple(shape):
        raise ValueError(f"epoch_inputs must return inputs of shape {tuple(shape)}, got {np.shape(X_epoch)}")
    X_all = torch.from_numpy(np.ascontiguousarray(X_epoch, dtype=np.float32))
    return X_all if rows is None else X_all[rows]
