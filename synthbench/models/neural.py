"""The shared MLP model kind: trained once per fold, cached on disk, used by every neural method."""

from __future__ import annotations

from synthbench.evaluation.protocol import FoldData
from synthbench.models.mlp import MLPConfig
from synthbench.models.shared import ModelKind, TrainSettings, register_model

__all__ = ["train_fold_mlp", "MLP"]


def train_fold_mlp(data: FoldData, settings: TrainSettings, config: MLPConfig = MLPConfig()):
    """The benchmark MLP trained on the fold's training part (seeded from the fold).

    Returns a :class:`~synthbench.models.training.TrainedMLP` (``predict_proba``, ``module``).
    Cached on disk under ``settings.cache_dir`` when one is set.
    """
    from synthbench.models.training import cached_train_mlp, select_device

    return cached_train_mlp(
        data.X_train, data.y_train, config=config, seed=data.random_state("model", "mlp"),
        device=select_device(settings.device), cache_dir=settings.cache_dir,
    )


MLP = register_model(ModelKind("mlp", train_fold_mlp, "the 2023 benchmark's MLP: 2 hidden layers of 16, LeakyReLU(0.2), Adam, early stopping",
                             accelerated=True))
