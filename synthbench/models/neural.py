"""The shared MLP model kind: trained once per fold and preset, cached on disk, used by every neural method."""

from __future__ import annotations

from synthbench.protocol import FoldData
from synthbench.models.presets import DEFAULT_PRESET, get_preset
from synthbench.models.shared import ModelKind, TrainSettings, register_model

__all__ = ["train_fold_mlp", "MLP"]


def train_fold_mlp(data: FoldData, settings: TrainSettings, preset: str = DEFAULT_PRESET, *, replicate: int = 0):
    """The MLP of ``preset`` (:mod:`synthbench.models.presets`) trained on the fold's training part.

    Seeded from the fold (the same seed for every preset) and, for ``replicate > 0``, the
    replicate's number. Returns a
    :class:`~synthbench.models.training.TrainedMLP` (``predict_proba``, ``module``). Cached on
    disk under ``settings.cache_dir`` when one is set.
    """
    from synthbench.models.training import cached_train_mlp, select_device

    return cached_train_mlp(
        data.X_train, data.y_train, config=get_preset(preset).config,
        seed=data.random_state("model", "mlp", *((replicate,) if replicate else ())),
        device=select_device(settings.device), cache_dir=settings.cache_dir,
    )


MLP = register_model(ModelKind("mlp", train_fold_mlp, "the shared MLP of the cell's preset (see --list)",
                               accelerated=True, uses_preset=True))
