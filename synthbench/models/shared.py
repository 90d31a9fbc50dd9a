"""Registry of model kinds and the per-fold cache that trains each kind once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, roc_auc_score

from synthbench.evaluation.protocol import FoldData

__all__ = ["ModelKind", "SharedModels", "TrainSettings", "register_model", "kinds", "model_kind"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainSettings:
    """How models are trained, as opposed to what they are (which the cell's config fixes).

    Attributes
    ----------
    n_jobs : threads a trainer may use
    device : ``"auto"``, ``"cpu"`` or ``"cuda"`` for torch models
    cache_dir : folder of the on-disk model cache, or None for no disk cache
    """

    n_jobs: int = 1
    device: str = "cpu"
    cache_dir: str | None = None


@dataclass(frozen=True)
class ModelKind:
    """A kind of model methods may ask for.

    ``train(data, settings) -> model`` fits on ``data.X_train``; the model must offer
    ``predict_proba`` (scikit-learn convention) so the cache can score it on the held-out part.
    ``accelerated``: training runs on ``settings.device`` (torch), so a GPU speeds it up.
    ``uses_preset``: the kind is configured by a named preset (:mod:`synthbench.models.presets`);
    its trainer is called as ``train(data, settings, preset)`` and every method that needs it
    runs once per preset of a grid.
    """

    name: str
    train: Callable[..., Any]
    description: str
    accelerated: bool = False
    uses_preset: bool = False


_KINDS: dict[str, ModelKind] = {}


def register_model(kind: ModelKind) -> ModelKind:
    """Add a model kind to the registry."""
    if kind.name in _KINDS:
        raise ValueError(f"model kind {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def kinds() -> list[str]:
    """Names of the registered model kinds."""
    return list(_KINDS)


def model_kind(name: str) -> ModelKind:
    """The registered kind ``name``; the error lists the valid kinds."""
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown model kind {name!r}; valid kinds: {', '.join(_KINDS)}") from None


class SharedModels:
    """Models of one fold, trained lazily and at most once per kind.

    Parameters
    ----------
    data : FoldData
    settings : TrainSettings
    preset : the preset of every kind with ``uses_preset`` (None: that kind's trainer default)
    """

    def __init__(self, data: FoldData, settings: TrainSettings = TrainSettings(), preset: str | None = None) -> None:
        self._data = data
        self._settings = settings
        self.preset = preset
        self._models: dict[str, Any] = {}
        self.info: dict[str, dict[str, float]] = {}
        self.trainings = 0

    @property
    def settings(self) -> TrainSettings:
        """How models are trained (device, threads, cache); methods that train their own nets read it too."""
        return self._settings

    def get(self, name: str) -> Any:
        """The trained model of kind ``name``, training it on first request."""
        if name not in self._models:
            kind = model_kind(name)
            t0 = time.perf_counter()
            if kind.uses_preset and self.preset is not None:
                model = kind.train(self._data, self._settings, self.preset)
            else:
                model = kind.train(self._data, self._settings)
            seconds = time.perf_counter() - t0
            self.trainings += 1
            self._models[name] = model
            self.info[name] = {**held_out_quality(model, self._data), "train_seconds": seconds}
            log.debug("trained %s in %.2fs: %s", name, seconds, self.info[name])
        return self._models[name]


def held_out_quality(model: Any, data: FoldData) -> dict[str, float]:
    """Accuracy and AUROC of ``model`` on the fold's held-out rows (AUROC: binary labels only)."""
    proba = model.predict_proba(data.X_test)
    pred = model.classes_[np.argmax(proba, axis=1)]
    out = {"test_accuracy": float(accuracy_score(data.y_test, pred))}
    if len(model.classes_) == 2 and len(np.unique(data.y_test)) == 2:
        out["test_auroc"] = float(roc_auc_score(data.y_test, proba[:, 1]))
    return out
