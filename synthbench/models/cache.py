"""The on-disk cache of trained networks (``joblib.Memory``) and of each fold's learnability ceiling.

:func:`cached_train` calls the trainer a model kind hands it (:func:`~synthbench.models.mlp.train_mlp`,
:func:`~synthbench.models.cnn.train_cnn`) behind a cache keyed by the trainer, the data, the
config, the seed, the device type and the torch version. :func:`cached_ceiling` computes a fold's
:class:`~synthbench.models.competence.Ceiling` once for every task of the fold, whichever process
asks first (a file lock per fold makes the others wait for it and read it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import torch
from filelock import FileLock

from synthbench import __version__
from synthbench.machine import installed_versions
from synthbench.models.competence import CEILING_VERSION, Ceiling
from synthbench.models.device import select_device
from synthbench.models.loop import TRAINING_VERSION, EpochInputs, check_training_data
from synthbench.models.networks import TrainedNetwork
from synthbench.protocol import FoldData

__all__ = ["cached_train", "cached_ceiling", "Trainer"]

#: ``trainer(X_train, y_train, *, config, seed, device, n_classes, epoch_inputs=None) -> TrainedNetwork``.
Trainer = Callable[..., TrainedNetwork]


def _train_cached(
    trainer_name: str,
    X_train: np.ndarray,
    y_train: np.ndarray,
    config: Any,
    seed: int,
    n_classes: int | None,
    device_type: str,
    torch_version: str,
    training_version: int,
    device: torch.device,
    trainer: Trainer,
) -> TrainedNetwork:
    """The function ``joblib.Memory`` caches; ``device`` and ``trainer`` (keyed by ``trainer_name``) are not part of
    the key."""
    return trainer(X_train, y_train, config=config, seed=seed, device=device, n_classes=n_classes)


def cached_train(
    trainer: Trainer,
    X_train: np.ndarray,
    y_train: np.ndarray,
    *,
    config: Any,
    seed: int,
    n_classes: int | None = None,
    device: str | torch.device = "cpu",
    cache_dir: str | Path | None = None,
    epoch_inputs: EpochInputs | None = None,
) -> TrainedNetwork:
    """``trainer(X_train, y_train, ...)`` behind an optional on-disk cache.

    Parameters
    ----------
    trainer : the function that trains (:data:`Trainer`); the cache keys it by its module and qualified name
    X_train, y_train, config, seed, n_classes, device
        As for the trainer (``n_classes`` None: one more than the largest label).
    cache_dir : folder of a ``joblib.Memory`` cache, or None to train without caching.
    epoch_inputs : inputs redrawn each epoch (see :func:`~synthbench.models.loop.fit_network`); such a training is never
        cached (a function has no content to key it by).

    Returns
    -------
    TrainedNetwork
        Loaded from the cache when an entry with the same key exists, on ``device``.

    Notes
    -----
    The key hashes the trainer (by reference), ``X_train`` (as float32), ``y_train`` (as int64), ``config``
    (its configuration's fields), ``seed``, ``n_classes``, the device *type* (``"cpu"`` or
    ``"cuda"``: CUDA and CPU runs give different weights, while ``"cuda:0"`` and ``"cuda:1"`` do
    not), ``torch.__version__`` and :data:`~synthbench.models.loop.TRAINING_VERSION`.
    """
    dev = select_device(device)
    if cache_dir is None or epoch_inputs is not None:
        return trainer(
            X_train, y_train, config=config, seed=seed, device=dev, n_classes=n_classes, epoch_inputs=epoch_inputs
        )
    X, y = check_training_data(X_train, y_train, any_shape=True)
    memory = joblib.Memory(str(cache_dir), verbose=0)
    cached = memory.cache(_train_cached, ignore=["device", "trainer"])
    model = cached(
        f"{trainer.__module__}.{trainer.__qualname__}",
        X,
        y,
        config,
        int(seed),
        n_classes,
        dev.type,
        torch.__version__,
        TRAINING_VERSION,
        dev,
        trainer,
    )
    if model.device != dev:
        model.module.to(dev)
        model.device = dev
    return model


#: Packages whose version can move a ceiling (the forest's and the booster's), part of its cache key.
_CEILING_PACKAGES = ("numpy", "scikit-learn", "lightgbm")


def cached_ceiling(
    data: FoldData,
    kinds: Iterable[str],
    compute: Callable[[], Ceiling],
    cache_dir: str | Path,
) -> Ceiling:
    """The fold's ceiling, ``compute()``-d by the first process that asks for it and read from ``cache_dir`` by the
    rest.

    The key hashes the fold (its rows, labels, truth, seed and fold index: everything a ceiling's
    trainings read), the model ``kinds`` that take part, synthbench's version,
    :data:`~synthbench.models.competence.CEILING_VERSION` and the versions of numpy, scikit-learn and
    LightGBM. A lock file per key makes a second task of the fold wait while the first computes, so the
    trainings run once per fold whatever the number of tasks. A ceiling read from the cache carries the
    ``seconds`` this call spent (waiting and reading), not those of the trainings.
    """
    t0 = time.perf_counter()
    key = joblib.hash(
        (data, sorted(kinds), __version__, CEILING_VERSION, list(installed_versions(_CEILING_PACKAGES).items()))
    )
    folder = Path(cache_dir) / "ceilings"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.json"
    with FileLock(str(path) + ".lock"):
        if path.exists():
            stored = Ceiling(**json.loads(path.read_text()))
            return dataclasses.replace(stored, seconds=time.perf_counter() - t0)
        ceiling = compute()
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(dataclasses.asdict(ceiling)))
        os.replace(partial, path)  # never a half-written ceiling, even if the process dies here
    return ceiling
