"""The shared network model kinds: the MLP of tables and the CNN of images, trained once per fold and preset.

Both are cached on disk (:func:`~synthbench.models.cache.cached_train_many`) and explained by
every attribution method that needs them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from synthbench.models.cache import ManyTrainer, cached_train_many
from synthbench.models.cnn import cnn_layers, train_cnns
from synthbench.models.device import select_device
from synthbench.models.loop import EpochInputs, MemberData, unwrap
from synthbench.models.mlp import mlp_layers, train_mlps
from synthbench.models.presets import DEFAULT_PRESET, DEFAULT_PRESETS, get_preset
from synthbench.models.screening import screening_record
from synthbench.models.shared import ModelKind, TrainRequest, TrainSettings, register_model
from synthbench.protocol import FoldData

__all__ = ["train_fold_mlp", "train_fold_cnn", "train_folds_mlp", "train_folds_cnn", "MLP", "CNN"]


def _train_folds(
    kind: str,
    trainer: ManyTrainer,
    requests: Sequence[TrainRequest],
    settings: TrainSettings,
    preset: str,
    training: Mapping[str, Any] | None,
) -> list[Any]:
    """The networks of ``requests``, each seeded from its fold and replicate, trained as one batch (cached)."""
    chosen = get_preset(preset)
    if chosen.kind != kind:
        raise ValueError(f"preset {preset!r} configures a {chosen.kind}, not a {kind}")
    config = chosen.config
    if training:
        config = dataclasses.replace(config, train=dataclasses.replace(config.train, **training))
    classes = {r.data.n_classes for r in requests}
    if len(classes) > 1:
        raise ValueError("the requests of a batch must share their data set's number of classes")
    members = [
        MemberData(
            r.data.X_train,
            r.data.y_train,
            r.data.random_state("model", kind, *((r.replicate,) if r.replicate else ())),
            r.epoch_inputs,
        )
        for r in requests
    ]
    return cached_train_many(
        trainer,
        members,
        config=config,
        n_classes=classes.pop() if classes else None,
        device=select_device(settings.device),
        cache_dir=settings.cache_dir,
        memory_budget=settings.batch_memory,
    )


def train_folds_mlp(
    requests: Sequence[TrainRequest],
    settings: TrainSettings,
    preset: str = DEFAULT_PRESET,
    *,
    training: Mapping[str, Any] | None = None,
) -> list[Any]:
    """The MLPs of ``requests`` (folds, replicates, per-epoch inputs) as one batch
    (:func:`~synthbench.models.mlp.train_mlps`); each is the model :func:`train_fold_mlp` gives it alone, or its
    ``TrainingFailed``."""
    return _train_folds("mlp", train_mlps, requests, settings, preset, training)


def train_folds_cnn(
    requests: Sequence[TrainRequest],
    settings: TrainSettings,
    preset: str = DEFAULT_PRESETS["cnn"],
    *,
    training: Mapping[str, Any] | None = None,
) -> list[Any]:
    """The CNNs of ``requests`` as one batch (:func:`~synthbench.models.cnn.train_cnns`), as :func:`train_folds_mlp`."""
    return _train_folds("cnn", train_cnns, requests, settings, preset, training)


def train_fold_mlp(
    data: FoldData,
    settings: TrainSettings,
    preset: str = DEFAULT_PRESET,
    *,
    replicate: int = 0,
    epoch_inputs: EpochInputs | None = None,
    training: Mapping[str, Any] | None = None,
):
    """The MLP of ``preset`` (:mod:`synthbench.models.presets`) trained on the fold's training part.

    Seeded from the fold (the same seed for every preset) and, for ``replicate > 0``, the
    replicate's number. Returns a :class:`~synthbench.models.mlp.TrainedMLP`
    (``predict_proba``, ``module``). Cached on disk under ``settings.cache_dir`` when one is set
    (not with ``epoch_inputs``: training rows redrawn each epoch, see
    :func:`~synthbench.models.loop.fit_network`). ``training``: fields of the preset's
    :class:`~synthbench.models.loop.TrainConfig` replaced for this training.
    """
    return unwrap(
        train_folds_mlp([TrainRequest(data, replicate, epoch_inputs)], settings, preset, training=training)[0]
    )


def train_fold_cnn(
    data: FoldData,
    settings: TrainSettings,
    preset: str = DEFAULT_PRESETS["cnn"],
    *,
    replicate: int = 0,
    epoch_inputs: EpochInputs | None = None,
    training: Mapping[str, Any] | None = None,
):
    """The CNN of ``preset`` trained on the fold's training images, seeded and cached like :func:`train_fold_mlp`.

    Returns a :class:`~synthbench.models.cnn.TrainedCNN` with one logit per class of the data set.
    """
    return unwrap(
        train_folds_cnn([TrainRequest(data, replicate, epoch_inputs)], settings, preset, training=training)[0]
    )


MLP = register_model(
    ModelKind(
        "mlp",
        train_fold_mlp,
        "the shared MLP of the cell's preset (see --list)",
        accelerated=True,
        uses_preset=True,
        epoch_inputs=True,
        training=True,
        layers=mlp_layers,
        ceiling=True,
        record=screening_record,
        train_many=train_folds_mlp,
    )
)
# The CNN's members of a batch train one after another under one optimiser (train_cnns), not stacked: one grouped
# convolution of 29 CNNs took 6.6 times as long as their 29 convolutions on one CPU thread, and 1.2 to 1.8 times as
# long in the channels-last layout the CNN trains in (its three layers, forward and backward, on shapes' 32 x 32).
CNN = register_model(
    ModelKind(
        "cnn",
        train_fold_cnn,
        "the shared CNN of the cell's image preset (see --list)",
        accelerated=True,
        uses_preset=True,
        epoch_inputs=True,
        training=True,
        inputs=("image",),
        layers=cnn_layers,
        train_many=train_folds_cnn,
    )
)
