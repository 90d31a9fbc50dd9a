"""The shared network model kinds: the MLP of tables and the CNN of images, trained once per fold and preset.

Both are cached on disk (:func:`~synthbench.models.cache.cached_train`) and explained by
every attribution method that needs them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from synthbench.models.cache import Trainer, cached_train
from synthbench.models.cnn import cnn_layers, train_cnn
from synthbench.models.device import select_device
from synthbench.models.loop import EpochInputs
from synthbench.models.mlp import mlp_layers, train_mlp
from synthbench.models.presets import DEFAULT_PRESET, DEFAULT_PRESETS, get_preset
from synthbench.models.screening import screening_record
from synthbench.models.shared import ModelKind, TrainSettings, register_model
from synthbench.protocol import FoldData

__all__ = ["train_fold_mlp", "train_fold_cnn", "MLP", "CNN"]


def _train_fold(
    kind: str,
    trainer: Trainer,
    data: FoldData,
    settings: TrainSettings,
    preset: str,
    replicate: int,
    epoch_inputs: EpochInputs | None,
    training: Mapping[str, Any] | None,
):
    chosen = get_preset(preset)
    if chosen.kind != kind:
        raise ValueError(f"preset {preset!r} configures a {chosen.kind}, not a {kind}")
    config = chosen.config
    if training:
        config = dataclasses.replace(config, train=dataclasses.replace(config.train, **training))
    return cached_train(
        trainer,
        data.X_train,
        data.y_train,
        config=config,
        n_classes=data.n_classes,
        seed=data.random_state("model", kind, *((replicate,) if replicate else ())),
        device=select_device(settings.device),
        cache_dir=settings.cache_dir,
        epoch_inputs=epoch_inputs,
    )


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
    return _train_fold("mlp", train_mlp, data, settings, preset, replicate, epoch_inputs, training)


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
    return _train_fold("cnn", train_cnn, data, settings, preset, replicate, epoch_inputs, training)


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
        record=screening_record,
    )
)
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
    )
)
