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
global generator or its thread setting; training runs with denormal floats flushed to zero
(:func:`~synthbench.models.device.denormals_flushed`: values below ``1.2e-38`` are zeros, at up to
twice the speed of the screened MLP).

Many at once: :func:`fit_networks` trains ``K`` members of one architecture (the retrainings of a
remove-and-retrain cell, replicates, a screening's rounds of several members) as one computation:
stacked parameters, one batched forward and backward pass where the network allows it
(:mod:`synthbench.models.stacked`), each member with its own rows, generator, Adam state, schedule,
stopping and restore. A member trained in a batch is, on the CPU, the network trained alone to the
bit; :func:`fit_network` is the batch of one.

Speed: the training rows live on the device as tensors; batches are contiguous slices of one
gathered permutation per epoch; losses are accumulated on the device and read back once per
epoch; the clean validation loss is one forward pass (in chunks of :data:`PREDICT_BATCH` rows).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synthbench.defaults import BATCH_MEMORY_MIB
from synthbench.models.device import cpu_threads, denormals_flushed, select_device
from synthbench.models.layers import seed_noise_layers
from synthbench.models.stacked import (
    Draw,
    ParameterLayout,
    StackedAdam,
    StackedBatch,
    StackedNetwork,
    classification_rows,
    member_mean,
    stackable,
    stacked_forward,
)

__all__ = [
    "TrainConfig",
    "NetworkConfig",
    "TrainResult",
    "Penalty",
    "BatchLoss",
    "EpochInputs",
    "classification_loss",
    "GroupPenalty",
    "Member",
    "MemberData",
    "TrainingFailed",
    "fit_network",
    "fit_networks",
    "fit_classifiers",
    "memory_chunks",
    "unwrap",
    "BATCH_MEMORY",
    "first_linear",
    "first_linear_name",
    "check_training_data",
    "n_classes_of",
    "TRAINING_VERSION",
    "PREDICT_BATCH",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Part of the model cache's key; bump it whenever a change to the loop changes trained weights.
TRAINING_VERSION = 7

#: Rows per forward pass when predicting or validating.
PREDICT_BATCH = 8192

#: Bytes of input data a batch of members may hold (:func:`memory_chunks`) before it is split in consecutive parts
#: (``--batch-memory`` of the command line, in MiB).
BATCH_MEMORY = BATCH_MEMORY_MIB << 20


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
    lr_schedule : ``"plateau2023"``: the 2023 code's schedule, torch's ``ReduceLROnPlateau`` (factor 0.9,
        patience 10, relative threshold 1e-4, cooldown 5, floor 1e-5) stepped on each epoch's summed objective
    l1_first_layer : weight of ``sum |W_1|`` of the first Linear layer added to each batch's loss
    """

    lr: float = 5e-4
    weight_decay: float = 1e-5
    adam_eps: float = 1e-8
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

    record_omits: ClassVar[tuple[str, ...]] = ("adam_eps",)
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
    failure : why training failed (its loss turned NaN or infinite), or None
    seconds : this network's share of its batch's training time (by the rows it trained on)
    last_state : the last epoch's weights (a state dict) where the best epoch's were restored, else None
    """

    module: nn.Module
    epochs_run: int
    best_epoch: int
    history: dict[str, list[float]]
    validation_indices: np.ndarray
    steps: int = 0
    failure: str | None = None
    seconds: float = 0.0
    last_state: dict[str, torch.Tensor] | None = None


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
    """Held-out AUROC of a binary model's ``logits`` (one logit, or one per class: their difference) for binary ``y``
    (0.5 when one class is absent).

    The Mann-Whitney form, ``(R1 - n1 (n1 + 1) / 2) / (n1 n0)`` with ``R1`` the positives' summed
    ranks (ties averaged), equal to :func:`sklearn.metrics.roc_auc_score`; computed every epoch, so
    without scikit-learn's input validation (a fifth of a screened MLP's training time).
    """
    from scipy.stats import rankdata

    if logits.dim() == 2 and logits.shape[1] == 2:  # one logit per class: their difference orders P(y = 1)
        logits = logits[:, 1] - logits[:, 0]
    elif logits.dim() == 2 and logits.shape[1] != 1:
        raise ValueError("monitor='auroc' needs a binary model (one logit, or one per class); use monitor='loss'")
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


@dataclass(frozen=True)
class GroupPenalty:
    """``weight * sum_j sqrt(||W_1[:, group j]||^2 + eps)`` of the first ``Linear`` layer ``W_1``, one group per
    ``units`` consecutive inputs: the group lasso of a hinge basis (one group per input column).

    A penalty the batched loop computes for every member at once (:meth:`stacked`); called as a
    :data:`Penalty` it is the same value for one network.
    """

    weight: float
    units: int
    eps: float = 1e-12

    def __call__(self, module: nn.Module, xb: torch.Tensor, loss: torch.Tensor) -> torch.Tensor:
        return self.stacked(first_linear(module).weight[None])[0]

    def stacked(self, first: torch.Tensor) -> torch.Tensor:
        """The penalty of each member from its first layer's weights ``(K, out, m * units)``: ``(K,)``."""
        return self.weight * self._norms(first).sum(dim=1)

    def add_gradient(self, first: torch.Tensor, grad: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """:meth:`stacked` of ``first`` ``(K, out, m * units)``; ``out`` (the same shape) := ``grad`` plus the
        penalty's gradient ``weight * W_j / norm_j``, in one pass, where autograd's would take five over the
        largest weights of the network."""
        k, rows, width = first.shape
        norms = self._norms(first)
        shape = (k, rows, width // self.units, self.units)
        scale = (self.weight / norms)[:, None, :, None]
        torch.addcmul(grad.view(shape), first.view(shape), scale, out=out.view(shape))
        return self.weight * norms.sum(dim=1)

    def _norms(self, first: torch.Tensor) -> torch.Tensor:
        """Each member's group norms ``sqrt(||W_j||^2 + eps)``: ``(K, m)``."""
        k, out, width = first.shape
        return first.reshape(k, out, width // self.units, self.units).pow(2).sum(dim=(1, 3)).add(self.eps).sqrt()


@dataclass(eq=False)
class Member:
    """One network of a batch :func:`fit_networks` trains, with its own data and random stream.

    Attributes
    ----------
    module : nn.Module mapping float32 ``(b, *input_shape)`` to logits, initialised; every member of a
        batch has the same architecture (the same trainable parameters and shapes)
    X : float32 ``(n, *input_shape)``;  y : int ``(n,)`` class labels (``n`` may differ between members)
    generator : CPU ``torch.Generator`` of this member alone: its validation split, batch order and
        random layers' draws (on CUDA, a CUDA generator seeded from it draws the last two)
    epoch_inputs : ``fn(epoch) -> X_epoch`` of ``X``'s shape, read by the rows that train instead of ``X``
    validation_rows : the rows of ``X`` held out, in place of drawing them
    loss : the batch objective in place of the classification loss (:data:`BatchLoss`)
    penalty : added to each batch's loss (:data:`Penalty`, or a :class:`GroupPenalty`)
    gate_params : parameters of ``module`` in their own Adam group (no weight decay, ``gate_lr``)
    """

    module: nn.Module
    X: np.ndarray
    y: np.ndarray
    generator: torch.Generator
    epoch_inputs: EpochInputs | None = None
    validation_rows: np.ndarray | None = None
    loss: BatchLoss | None = None
    penalty: Penalty | GroupPenalty | None = None
    gate_params: tuple[nn.Parameter, ...] = ()


class TrainingFailed(RuntimeError):
    """A network's training failed (its loss turned NaN or infinite); its siblings in a batch are unaffected."""


class _Plateau:
    """The 2023 schedule (``lr_schedule="plateau2023"``) for one member's learning rates: torch's
    ``ReduceLROnPlateau`` with factor 0.9, patience 10, relative threshold 1e-4, cooldown 5 and floor 1e-5, stepped
    on the epoch's summed objective."""

    def __init__(self) -> None:
        self.best, self.bad, self.cooldown = math.inf, 0, 0

    def step(self, value: float, lrs: list[float]) -> list[float]:
        """The learning rates after an epoch whose summed objective is ``value``."""
        if value < self.best * (1.0 - 1e-4):
            self.best, self.bad = value, 0
        else:
            self.bad += 1
        if self.cooldown > 0:
            self.cooldown -= 1
            self.bad = 0
        if self.bad > 10:
            lowered = [max(lr * 0.9, 1e-5) for lr in lrs]
            lrs = [new if old - new > 1e-8 else old for old, new in zip(lrs, lowered, strict=True)]
            self.cooldown, self.bad = 5, 0
        return lrs


@dataclass(eq=False)
class _State:
    """One member's data and bookkeeping while :func:`fit_networks` runs."""

    index: int
    X_tr: torch.Tensor
    y_tr: torch.Tensor
    X_val: torch.Tensor | None
    y_val: torch.Tensor | None
    val_idx: np.ndarray
    tr_idx: torch.Tensor | None
    dev_gen: torch.Generator
    buffers: dict[str, torch.Tensor]
    lrs: list[float]
    plateau: _Plateau | None
    history: dict[str, list[float]]
    best: float
    previous: float
    best_epoch: int = -1
    stale: int = 0
    steps: int = 0
    work: float = 0.0
    best_state: dict[str, torch.Tensor] | None = None
    last_state: dict[str, torch.Tensor] | None = None
    failure: str | None = None


def _split(member: Member, config: TrainConfig, device: torch.device) -> tuple:
    """The member's validation split (as :func:`fit_network` documents) and its device generator."""
    n = member.X.shape[0]
    if config.validation == "none":
        val_idx, tr_idx = torch.empty(0, dtype=torch.long), None
    elif member.validation_rows is not None:
        held = np.zeros(n, dtype=bool)
        held[np.asarray(member.validation_rows, dtype=np.int64)] = True
        n_val = int(held.sum())
        if n_val < 1 or n_val == n:
            raise ValueError(f"validation_rows must hold out some but not all of the {n} rows, got {n_val}")
        val_idx, tr_idx = torch.from_numpy(np.flatnonzero(held)), torch.from_numpy(np.flatnonzero(~held))
    else:
        n_val = _n_validation(n, config.validation_fraction)
        perm = torch.randperm(n, generator=member.generator)
        val_idx, tr_idx = torch.sort(perm[:n_val]).values, torch.sort(perm[n_val:]).values
    if device.type == "cpu":
        dev_gen = member.generator
    else:
        seed = int(torch.randint(0, 2**62, (1,), generator=member.generator))
        dev_gen = torch.Generator(device=device).manual_seed(seed)
    return val_idx, tr_idx, dev_gen


def fit_networks(
    members: Sequence[Member],
    *,
    config: TrainConfig,
    device: torch.device,
    input_grad: bool = False,
    gate_lr: float | None = None,
) -> list[TrainResult]:
    """The one training loop of every benchmark network, for ``K`` members of one architecture at once.

    Every member trains as :func:`fit_network` documents, on its own rows, from its own generator,
    with its own Adam state, learning-rate schedule, early stopping and restored epoch; a member
    that has stopped (or failed) no longer changes while the others go on, and leaves the batch.
    Which members share a batch never changes what any of them computes (on the CPU, to the bit).

    Where every member is :func:`~synthbench.models.stacked.stackable` and trains on the classification
    loss (with at most a :class:`GroupPenalty`), one forward and backward pass computes every member's
    batch (``baddbmm`` over stacked weights; a mini-batch past a member's last row is padded and masked,
    so each member's shapes are its own alone or in a batch); any other network (custom losses, penalties
    on the module or on input gradients) runs member by member on its own module, under the same
    optimiser, stopping and restore.

    Returns one :class:`TrainResult` per member, in order; a member whose training loss turned NaN or
    infinite stops there with ``failure`` set (its best weights kept, when it had any).
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig (a preset's config.train), got {type(config).__name__}")
    _check_config(config)
    if not members:
        return []
    t0 = time.perf_counter()
    layout = ParameterLayout.of(members[0].module)
    for m in members[1:]:
        if ParameterLayout.of(m.module) != layout:
            raise ValueError("the members of a batch must share one architecture (the same trained parameters)")
    if len({tuple(np.shape(m.X)[1:]) for m in members}) != 1:
        raise ValueError("the members of a batch must share one input shape")
    template = members[0].module
    if isinstance(template, StackedNetwork) and (
        input_grad or config.l1_first_layer > 0 or any(m.loss or m.penalty for m in members)
    ):
        raise ValueError("a StackedNetwork holds its own objective: no loss, penalty or input gradient beside it")
    fast = (
        stackable(template)
        and all(m.loss is None for m in members)
        and (isinstance(template, StackedNetwork) or not any(m.gate_params for m in members))
        and all(m.penalty is None or isinstance(m.penalty, GroupPenalty) for m in members)
        and len({m.penalty for m in members}) == 1
        and not input_grad
    )
    validate, higher = config.validation != "none", config.monitor == "auroc"

    gate_names = [{n for n, p in m.module.named_parameters() if any(p is q for q in m.gate_params)} for m in members]
    if any(g != gate_names[0] for g in gate_names):
        raise ValueError("the members of a batch must put the same parameters in the gate group")
    segments = [  # each parameter's place in a row and its group: 0, or 1 for the gate
        (off, off + math.prod(shape), int(name in gate_names[0]))
        for name, shape, off in zip(layout.names, layout.shapes, layout.offsets, strict=True)
    ]
    lr_groups = [config.lr, config.lr if gate_lr is None else float(gate_lr)]

    states: list[_State] = []
    for i, m in enumerate(members):
        val_idx, tr_idx, dev_gen = _split(m, config, device)
        X_all = torch.from_numpy(np.ascontiguousarray(m.X, dtype=np.float32))
        y_all = torch.from_numpy(np.asarray(m.y, dtype=np.int64))
        history: dict[str, list[float]] = {"train_loss": []}
        if validate:
            history["val_loss"] = []
        if validate and higher:
            history["val_auroc"] = []
        start = -math.inf if higher else math.inf
        states.append(
            _State(
                index=i,
                X_tr=(X_all if tr_idx is None else X_all[tr_idx]).to(device),
                y_tr=(y_all if tr_idx is None else y_all[tr_idx]).to(device),
                X_val=None if tr_idx is None else X_all[val_idx].to(device),
                y_val=None if tr_idx is None else y_all[val_idx].to(device),
                val_idx=val_idx.numpy().astype(np.int64),
                tr_idx=tr_idx,
                dev_gen=dev_gen,
                buffers=dict(m.module.to(device).named_buffers()),
                lrs=list(lr_groups),
                plateau=_Plateau() if config.lr_schedule == "plateau2023" else None,
                history=history,
                best=start,
                previous=start,
            )
        )

    flat = torch.stack([layout.row(m.module) for m in members]).to(device)
    adam = StackedAdam(flat, segments=segments, weight_decay=[config.weight_decay, 0.0], eps=config.adam_eps)
    best_rows = flat.clone() if fast else None
    if not fast:
        for m, row in zip(members, flat, strict=True):
            layout.bind(m.module, row)
    live = list(states)  # the members still training, in the rows of flat, in order
    batch = _Batch(template, layout, config, device, members[0].penalty) if fast else None

    try:
        with denormals_flushed():
            if not fast:
                for s in states:
                    seed_noise_layers(members[s.index].module, s.dev_gen)
            for epoch in range(int(config.max_epochs)):
                lr = [s.lrs for s in live]
                for s in live:
                    inputs = members[s.index].epoch_inputs
                    if inputs is not None:
                        s.X_tr = _epoch_rows(inputs(epoch), tuple(members[s.index].X.shape), s.tr_idx).to(device)
                if batch is not None:
                    totals = batch.train_epoch(live, adam, lr)
                else:
                    totals = _train_epoch_members(live, members, layout, adam, lr, config, input_grad)
                values = _validate_members(live, members, layout, adam.flat, config, batch) if validate else None
                stopped = []
                for j, s in enumerate(live):
                    improved, stop = _end_epoch(s, epoch, totals[j], None if values is None else values[j], config)
                    if improved and config.restore == "best":
                        if best_rows is not None:
                            best_rows[j] = adam.flat[j].detach()
                        else:
                            s.best_state = _state_copy(members[s.index].module)
                    if stop:
                        stopped.append(j)
                        _finish(s, members, layout, adam.flat, best_rows, j, config)
                if stopped:  # the stopped members leave the batch
                    live = [s for j, s in enumerate(live) if j not in stopped]
                    if not live:
                        break
                    keep = torch.tensor([j for j in range(len(totals)) if j not in stopped], device=device)
                    flat_kept = adam.flat.detach()[keep]
                    if best_rows is not None:
                        best_rows = best_rows[keep]
                    else:
                        for s, row in zip(live, flat_kept, strict=True):
                            layout.bind(members[s.index].module, row)
                    adam.keep(keep, flat_kept)
            for j, s in enumerate(live):
                _finish(s, members, layout, adam.flat, best_rows, j, config)
    finally:
        for m in members:
            seed_noise_layers(m.module, None)
    seconds = time.perf_counter() - t0
    log.debug(
        "trained %d members (%s) in %.2f s: epochs %s",
        len(members),
        "batched" if fast else "one by one",
        seconds,
        [len(s.history["train_loss"]) for s in states],
    )
    work = sum(s.work for s in states) or 1.0
    results = []
    for s, m in zip(states, members, strict=True):
        m.module.eval()
        results.append(
            TrainResult(
                m.module,
                len(s.history["train_loss"]),
                s.best_epoch,
                s.history,
                s.val_idx,
                s.steps,
                failure=s.failure,
                seconds=seconds * s.work / work,
                last_state=s.last_state,
            )
        )
    return results


def _end_epoch(
    s: _State, epoch: int, train_sum: float, values: tuple[float, float] | None, config: TrainConfig
) -> tuple[bool, bool]:
    """Record one member's epoch (its summed objective and validation values) and step its schedule; returns
    whether the epoch is its best so far and whether it stops (patience spent, or its loss not finite)."""
    if s.plateau is not None:
        s.lrs = s.plateau.step(train_sum, s.lrs)
    s.history["train_loss"].append(train_sum / _n_batches(s, config))
    if not math.isfinite(train_sum):
        s.failure = f"training loss turned {train_sum} at epoch {epoch}"
        return False, True
    if values is None:
        return False, False
    higher = config.monitor == "auroc"
    val_loss, auroc = values
    s.history["val_loss"].append(val_loss)
    val = val_loss
    if higher:
        val = auroc
        s.history["val_auroc"].append(auroc)

    def better(a: float, b: float) -> bool:
        return a > b if higher else a < b

    reference = s.previous if config.stopping == "previous" else s.best
    s.stale = 0 if better(val, reference) else s.stale + 1
    s.previous = val
    improved = better(val, s.best)
    if improved:
        s.best, s.best_epoch = val, epoch
    return improved, s.stale >= config.patience


def _n_batches(s: _State, config: TrainConfig) -> int:
    return max(1, math.ceil(s.X_tr.shape[0] / int(config.batch_size)))


def first_linear_name(module: nn.Module) -> str:
    """The parameter name (as in ``module.state_dict()``) of :func:`first_linear`'s weight."""
    first = first_linear(module)
    return next(f"{name}.weight" for name, m in module.named_modules() if m is first)


def _state_copy(module: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``module``'s state dict that no later step changes."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _finish(
    s: _State,
    members: Sequence[Member],
    layout: ParameterLayout,
    flat: torch.Tensor,
    best_rows: torch.Tensor | None,
    j: int,
    config: TrainConfig,
) -> None:
    """Give a member that stops its final weights: the best epoch's (when ``restore="best"`` found one, the last
    epoch's then kept in ``s.last_state``) or the last."""
    module = members[s.index].module
    restore = config.restore == "best" and s.best_epoch >= 0
    if best_rows is not None:  # the batched pass: the module holds its initial weights until now
        if restore:
            layout.load(module, flat[j].detach())
            s.last_state = _state_copy(module)
        layout.load(module, (best_rows if restore else flat)[j].detach())
    else:
        layout.bind(module, flat[j].detach().clone())  # the module no longer shares the batch's buffer
        if s.best_state is not None:
            s.last_state = _state_copy(module)
            module.load_state_dict(s.best_state)
    if config.restore == "best" and s.best_epoch < 0 and config.validation != "none":
        log.warning(
            "training: no finite validation value in %d epochs; keeping the last weights", len(s.history["train_loss"])
        )


def _draws(live: Sequence[_State], counts: Sequence[int], width: int, device: torch.device) -> Draw:
    """Each live member's draw of its ``counts[k]`` rows from its own generator, padded to ``width`` rows."""

    def draw(kind: str, shape: tuple[int, ...], *, per_row: bool = True) -> torch.Tensor:
        out = torch.zeros((len(live), width, *shape) if per_row else (len(live), *shape), device=device)
        for k, (s, c) in enumerate(zip(live, counts, strict=True)):
            if c:
                f = torch.randn if kind == "normal" else torch.rand
                drawn = f((c, *shape) if per_row else shape, generator=s.dev_gen, device=device)
                if per_row:
                    out[k, :c] = drawn
                else:
                    out[k] = drawn
        return out

    return draw


def _stacked(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """The members' ``rows`` ``(n_k, ...)`` stacked into ``(K, max n_k + 1, ...)``: row ``max n_k`` (and any past a
    member's own) is zeros, where :func:`_shuffled`'s padding points."""
    return _padded(rows, max(r.shape[0] for r in rows) + 1)


def _shuffled(live: Sequence[_State], n: Sequence[int], bs: int, device: torch.device) -> tuple[torch.Tensor, list]:
    """Each member's ``n[k]`` rows in a fresh order from its own generator, padded to whole batches of ``bs`` with
    the index of a zero row of :func:`_stacked` (``max n``): int64 ``(K, length)``; and each batch's real rows per
    member. A batch is ``stacked[arange(K)[:, None], index[:, start:start + bs]]``, gathered when its step comes."""
    length = max(math.ceil(k / bs) for k in n) * bs
    index = torch.full((len(n), length), max(n), dtype=torch.long, device=device)
    for k, (s, count) in enumerate(zip(live, n, strict=True)):
        index[k, :count] = torch.randperm(count, generator=s.dev_gen, device=device)
    return index, [[max(0, min(bs, k - start)) for k in n] for start in range(0, length, bs)]


def _padded(rows: Sequence[torch.Tensor], length: int) -> torch.Tensor:
    """The members' ``rows`` ``(n_k, ...)`` stacked into ``(K, length, ...)``, zeros past each member's rows."""
    out = rows[0].new_zeros((len(rows), length, *rows[0].shape[1:]))
    for k, r in enumerate(rows):
        out[k, : r.shape[0]] = r
    return out


class _Batch:
    """The batched pass of :func:`fit_networks`: every live member's mini-batch in one forward and backward."""

    def __init__(
        self,
        template: nn.Module,
        layout: ParameterLayout,
        config: TrainConfig,
        device: torch.device,
        penalty: Penalty | GroupPenalty | None,
    ) -> None:
        self.template = template
        self.layout = layout
        self.config = config
        self.device = device
        self.penalty = cast(GroupPenalty | None, penalty)
        # the first layer's weights, read by name where a penalty acts on them
        self.first_name = first_linear_name(template) if config.l1_first_layer > 0 or penalty is not None else None
        self._held: dict[str, tuple[list[torch.Tensor], torch.Tensor]] = {}

    def stacked(
        self, name: str, rows: list[torch.Tensor], stack: Callable[[list[torch.Tensor]], torch.Tensor] = _stacked
    ) -> torch.Tensor:
        """``stack(rows)`` of the live members' ``rows``, made again only when they are no longer the same tensors (a
        member left the batch, or ``epoch_inputs`` drew new rows): not once per epoch."""
        held = self._held.get(name)
        if held is None or len(held[0]) != len(rows) or any(a is not b for a, b in zip(held[0], rows, strict=True)):
            held = self._held[name] = (rows, stack(rows))
        return held[1]

    def buffers(self, live: Sequence[_State]) -> dict[str, torch.Tensor]:
        """The live members' buffers, stacked: name -> ``(K, *shape)``."""
        return {n: self.stacked(f"buffer {n}", [s.buffers[n] for s in live], torch.stack) for n in live[0].buffers}

    def logits(
        self,
        params: dict[str, torch.Tensor],
        live: Sequence[_State],
        x: torch.Tensor,
        *,
        training: bool,
        draw: Draw | None = None,
    ) -> torch.Tensor:
        """The live members' logits on their rows ``x`` ``(K, b, ...)``."""
        if isinstance(self.template, StackedNetwork):
            return self.template.stacked_logits(params, self.buffers(live), x, training=training, draw=draw)
        return stacked_forward(cast(nn.Sequential, self.template), params, x, training=training, draw=draw)

    def objective(
        self,
        params: dict[str, torch.Tensor],
        live: Sequence[_State],
        xb: torch.Tensor,
        yb: torch.Tensor,
        counts: torch.Tensor,
        real: torch.Tensor | None,
        step: int,
        draw: Draw,
    ) -> torch.Tensor:
        """Each member's objective on its batch ``(K, b, ...)`` (``counts`` rows of it real, marked by ``real``), the
        epoch's ``step``-th: ``(K,)``, but for the group penalty (:meth:`train_epoch` adds it and its gradient). A
        member's mean loss is :func:`~synthbench.models.stacked.member_mean` of its rows' losses; a
        :class:`~synthbench.models.stacked.StackedNetwork` gives its own objective."""
        if isinstance(self.template, StackedNetwork):
            steps = [s.steps + step for s in live]
            batch = StackedBatch(params, self.buffers(live), xb, yb, counts, real, steps, draw)
            return self.template.stacked_objective(batch)
        logits = self.logits(params, live, xb, training=True, draw=draw)
        loss = member_mean(classification_rows(logits, yb), counts, real)
        if self.config.l1_first_layer > 0:
            loss = loss + self.config.l1_first_layer * params[cast(str, self.first_name)].abs().sum(dim=(1, 2))
        return loss

    def train_epoch(self, live: Sequence[_State], adam: StackedAdam, lr: Sequence[Sequence[float]]) -> list[float]:
        """One epoch of every live member; each member's summed objective."""
        bs = int(self.config.batch_size)
        n_tr = [s.X_tr.shape[0] for s in live]
        X, y = self.stacked("X", [s.X_tr for s in live]), self.stacked("y", [s.y_tr for s in live])
        index, counts = _shuffled(live, n_tr, bs, self.device)
        member = torch.arange(len(live), device=self.device)[:, None]  # with the rows of a step, gathers its batch
        counts_t = torch.tensor(counts, device=self.device)
        total = torch.zeros(len(live), device=self.device)
        # each parameter of every member a leaf that shares the optimiser's buffer (rebound only between epochs, when
        # members stop): its gradient arrives whole, in its own layout, and is copied once into the optimiser's
        params = {n: v.requires_grad_() for n, v in self.layout.views(adam.flat.detach()).items()}
        grads = self.layout.views(adam.grad)
        penalised = self.first_name if self.penalty is not None else None
        for i, start in enumerate(range(0, index.shape[1], bs)):
            c = counts[i]
            active = [x > 0 for x in c]
            draw = _draws(live, c, bs, self.device)
            rows = index[:, start : start + bs]
            real = torch.arange(bs, device=self.device)[None] < counts_t[i][:, None] if min(c) < bs else None
            for v in params.values():
                v.grad = None
            objective = self.objective(params, live, X[member, rows], y[member, rows], counts_t[i], real, i, draw)
            objective.sum().backward()
            done = objective.detach()
            with torch.no_grad():
                for name, v in params.items():
                    grad = cast(torch.Tensor, v.grad)  # every parameter takes part in the objective
                    if name == penalised:
                        done = done + cast(GroupPenalty, self.penalty).add_gradient(v.detach(), grad, grads[name])
                    else:
                        grads[name].copy_(grad)
            adam.step(lr, active)
            total += done if all(active) else torch.where(counts_t[i] > 0, done, torch.zeros((), device=self.device))
        for s, n in zip(live, n_tr, strict=True):
            s.steps += math.ceil(n / bs)
            s.work += n
        return total.tolist()


def _train_epoch_members(
    live: Sequence[_State],
    members: Sequence[Member],
    layout: ParameterLayout,
    adam: StackedAdam,
    lr: Sequence[Sequence[float]],
    config: TrainConfig,
    input_grad: bool,
) -> list[float]:
    """One epoch of every live member, each on its own module (bound to its row of the optimiser's buffer)."""
    bs = int(config.batch_size)
    shuffled = []
    for s in live:
        order = torch.randperm(s.X_tr.shape[0], generator=s.dev_gen, device=s.X_tr.device)
        shuffled.append((s.X_tr[order], s.y_tr[order]))
        members[s.index].module.train()
    length = max(s.X_tr.shape[0] for s in live)
    totals = [torch.zeros((), device=adam.flat.device) for _ in live]
    for start in range(0, length, bs):
        grads, active = [], []
        for k, s in enumerate(live):
            m = members[s.index]
            Xe, ye = shuffled[k]
            if start >= Xe.shape[0]:
                grads.append(torch.zeros(layout.size, device=adam.flat.device))
                active.append(False)
                continue
            xb, yb = Xe[start : start + bs], ye[start : start + bs]
            if input_grad:
                xb = xb.clone().requires_grad_(True)
            module = m.module
            base = m.loss(module, xb, yb, s.steps) if m.loss is not None else classification_loss(module(xb), yb)
            objective = base
            if config.l1_first_layer > 0:
                objective = objective + config.l1_first_layer * first_linear(module).weight.abs().sum()
            if m.penalty is not None:
                objective = objective + m.penalty(module, xb, base)
            module.zero_grad(set_to_none=True)
            objective.backward()
            grads.append(layout.gradient(module))
            active.append(True)
            totals[k] = totals[k] + objective.detach()
            s.steps += 1
            s.work += xb.shape[0]
        adam.grad.copy_(torch.stack(grads))
        adam.step(lr, active)
    return torch.stack(totals).tolist()


def _validate_members(
    live: Sequence[_State],
    members: Sequence[Member],
    layout: ParameterLayout,
    flat: torch.Tensor,
    config: TrainConfig,
    batch: _Batch | None,
) -> list[tuple[float, float]]:
    """Each live member's validation loss (as ``config.validation`` says) and, when stopping watches it, AUROC; the
    members one by one on their own modules, or as one pass of the ``batch``."""
    out = []
    if batch is None:
        for s in live:
            module = members[s.index].module
            assert s.X_val is not None and s.y_val is not None
            loss, logits = _validate(module, s.X_val, s.y_val, config, s.dev_gen)
            auroc = _auroc(logits, s.y_val) if config.monitor == "auroc" and logits is not None else math.nan
            out.append((float(loss), auroc))
        return out
    with torch.no_grad():
        params = layout.views(flat.detach())
        vals = [cast(torch.Tensor, s.X_val) for s in live]
        ys = [cast(torch.Tensor, s.y_val) for s in live]
        noisy: list[torch.Tensor] = []
        if config.validation == "noisy_batches":
            noisy = _noisy_validation(batch, params, live, vals, ys, int(config.batch_size), flat.device)
        logits = None
        if config.monitor == "auroc" or config.validation == "clean":
            length = max(v.shape[0] for v in vals)
            X = batch.stacked("validation", vals, lambda rows: _padded(rows, length))
            logits = torch.cat(
                [
                    batch.logits(params, live, X[:, s : s + PREDICT_BATCH], training=False)
                    for s in range(0, length, PREDICT_BATCH)
                ],
                dim=1,
            )
        for k, (s, y) in enumerate(zip(live, ys, strict=True)):
            own = None if logits is None else logits[k, : y.shape[0]]
            loss = noisy[k] if noisy else classification_loss(cast(torch.Tensor, own), y)
            auroc = _auroc(cast(torch.Tensor, own), y) if config.monitor == "auroc" else math.nan
            out.append((float(loss), auroc))
    return out


def _noisy_validation(
    batch: _Batch,
    params: dict[str, torch.Tensor],
    live: Sequence[_State],
    vals: Sequence[torch.Tensor],
    ys: Sequence[torch.Tensor],
    bs: int,
    device: torch.device,
) -> list[torch.Tensor]:
    """The 2023 code's validation loss of each member: noise on, a fresh order of its rows, the sum of batch means."""
    X, Y = _stacked(vals), _stacked(ys)
    index, batches = _shuffled(live, [v.shape[0] for v in vals], bs, device)
    member = torch.arange(len(live), device=device)[:, None]
    sums: list[torch.Tensor | int] = [0] * len(live)
    for start, counts in zip(range(0, index.shape[1], bs), batches, strict=True):
        rows = index[:, start : start + bs]
        logits = batch.logits(params, live, X[member, rows], training=True, draw=_draws(live, counts, bs, device))
        Yb = Y[member, rows]
        for k, c in enumerate(counts):
            if c:
                sums[k] = sums[k] + classification_loss(logits[k, :c], Yb[k, :c])
    return [cast(torch.Tensor, v) for v in sums]


def fit_network(
    module: nn.Module,
    X: np.ndarray,
    y: np.ndarray,
    *,
    config: TrainConfig,
    generator: torch.Generator,
    device: torch.device,
    loss: BatchLoss | None = None,
    penalty: Penalty | GroupPenalty | None = None,
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
    member = Member(module, X, y, generator, epoch_inputs, validation_rows, loss, penalty, gate_params)
    return fit_networks([member], config=config, device=device, input_grad=input_grad, gate_lr=gate_lr)[0]


@dataclass(frozen=True, eq=False)
class MemberData:
    """What one member of a batch of classifiers trains on: rows, labels, seed (and optional per-epoch inputs and
    held-out rows, as :class:`Member`)."""

    X: np.ndarray
    y: np.ndarray
    seed: int
    epoch_inputs: EpochInputs | None = None
    validation_rows: np.ndarray | None = None


def fit_classifiers(
    build: Callable[[torch.Generator, int], nn.Module],
    data: Sequence[MemberData],
    *,
    config: TrainConfig,
    device: str | torch.device,
    n_classes: int | None,
    num_threads: int | None,
    input_ndim: int = 2,
    penalty: GroupPenalty | None = None,
) -> tuple[list[TrainResult], torch.device, int]:
    """What every trainer of classifier networks does: check the data, build, fit, for ``K`` members at once.

    Each member's ``X`` is checked to be ``input_ndim``-D float32 (2: tables ``(n, p)``, 4: images),
    its ``y`` labels ``0..K-1`` (``K`` from :func:`n_classes_of`, the largest over the members); one CPU
    generator per member seeded with its ``seed`` draws its network's initialisation
    (``build(generator, K)``) and then everything :func:`fit_networks` draws for it; torch runs on
    ``num_threads`` CPU threads meanwhile (None: its setting). Returns ``(results, device, K)``.
    """
    checked = []
    for d in data:
        X, y = check_training_data(d.X, d.y, any_shape=input_ndim != 2)
        if X.ndim != input_ndim:
            raise ValueError(f"X_train must be images (n, C, H, W), got shape {X.shape}")
        checked.append((X, y))
    k = max((n_classes_of(y, n_classes) for _, y in checked), default=2)
    dev = select_device(device)
    with cpu_threads(dev, num_threads):
        members = []
        for d, (X, y) in zip(data, checked, strict=True):
            gen = torch.Generator().manual_seed(int(d.seed))
            members.append(Member(build(gen, k), X, y, gen, d.epoch_inputs, d.validation_rows, penalty=penalty))
        results = fit_networks(members, config=config, device=dev)
    return results, dev, k


def memory_chunks(sizes: Sequence[int], budget: int) -> list[list[int]]:
    """Consecutive groups of member indices whose ``sizes`` (bytes of data each trains on, held about three times
    over while training) sum to at most ``budget``, each group at least one member (decided by the sizes alone)."""
    if budget <= 0:
        raise ValueError(f"the memory budget of a batch must be positive, got {budget}")
    chunks: list[list[int]] = []
    used = 0
    for i, size in enumerate(sizes):
        need = 3 * int(size)
        if chunks and used + need <= budget:
            chunks[-1].append(i)
            used += need
        else:
            chunks.append([i])
            used = need
    return chunks


def unwrap(model: T | TrainingFailed) -> T:
    """``model``, or raise it when training failed (a member's :class:`TrainingFailed` in its place)."""
    if isinstance(model, TrainingFailed):
        raise model
    return model


def _epoch_rows(X_epoch: np.ndarray, shape: tuple[int, ...], rows: torch.Tensor | None) -> torch.Tensor:
    """The training ``rows`` (None: all) of one epoch's inputs, checked against ``X``'s ``shape``."""
    if np.shape(X_epoch) != tuple(shape):
        raise ValueError(f"epoch_inputs must return inputs of shape {tuple(shape)}, got {np.shape(X_epoch)}")
    X_all = torch.from_numpy(np.ascontiguousarray(X_epoch, dtype=np.float32))
    return X_all if rows is None else X_all[rows]
