"""The on-disk cache of trained networks (``joblib.Memory``) and of each fold's learnability ceiling.

:func:`cached_train_many` calls the batch trainer a model kind hands it (:func:`~synthbench.models.mlp.train_mlps`,
:func:`~synthbench.models.cnn.train_cnns`) behind a cache of each member's model keyed by the trainer, the member's
data, the config, its seed, the device type and the torch version. :func:`cached_ceiling` computes a fold's
:class:`~synthbench.models.competence.Ceiling` once for every task of the fold, whichever process
asks first (a file lock per fold makes the others wait for it and read it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
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
from synthbench.models.loop import BATCH_MEMORY, TRAINING_VERSION, MemberData, TrainingFailed, check_training_data
from synthbench.models.networks import TrainedNetwork
from synthbench.protocol import FoldData

__all__ = ["cached_train_many", "cached_ceiling", "write_atomically", "ManyTrainer"]

#: ``trainer(members, *, config, device, n_classes, memory_budget) -> [TrainedNetwork or TrainingFailed, ...]``:
#: one model per :class:`~synthbench.models.loop.MemberData`, trained as one batch
#: (:func:`~synthbench.models.mlp.train_mlps`) split into groups whose data fit ``memory_budget`` bytes.
ManyTrainer = Callable[..., list[Any]]


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
    trained: Callable[[], TrainedNetwork],
) -> TrainedNetwork:
    """The function ``joblib.Memory`` caches, one member at a time; ``device`` and ``trained`` (the member's model,
    trained in its batch) are not part of the key."""
    return trained()


def cached_train_many(
    trainer: ManyTrainer,
    members: Sequence[MemberData],
    *,
    config: Any,
    n_classes: int | None = None,
    device: str | torch.device = "cpu",
    cache_dir: str | Path | None = None,
    memory_budget: int = BATCH_MEMORY,
) -> list[Any]:
    """``trainer(members, ...)`` behind an optional on-disk cache of each member's model.

    Parameters
    ----------
    trainer : trains a batch (:data:`ManyTrainer`); the cache keys it by its module and qualified name
    members : each member's rows, labels, seed (and inputs redrawn per epoch)
    config, n_classes, device, memory_budget : as for the trainer (``n_classes`` None: one more than the largest
        label; the budget splits a batch by its members' sizes alone, so no model depends on it)
    cache_dir : folder of a ``joblib.Memory`` cache, or None to train without caching.

    Returns
    -------
    One model (on ``device``) or ``TrainingFailed`` per member. With a cache, the batch is read from it
    when every member's model is there; otherwise the whole batch is trained (which members share a
    batch never depends on what the cache holds) and each model that trained is stored. A member with
    inputs redrawn per epoch is never cached (a function has no content to key it by), nor is its batch.

    Notes
    -----
    A member's key hashes the trainer (by reference), its ``X`` (as float32), ``y`` (as int64), ``config``
    (its configuration's fields), ``seed``, ``n_classes``, the device *type* (``"cpu"`` or ``"cuda"``: CUDA
    and CPU runs give different weights, while ``"cuda:0"`` and ``"cuda:1"`` do not),
    ``torch.__version__`` and :data:`~synthbench.models.loop.TRAINING_VERSION`.
    """
    dev = select_device(device)

    def train() -> list[Any]:
        return trainer(list(members), config=config, device=dev, n_classes=n_classes, memory_budget=memory_budget)

    if cache_dir is None or any(m.epoch_inputs is not None for m in members):
        return train()
    memory = joblib.Memory(str(cache_dir), verbose=0)
    cached = memory.cache(_train_cached, ignore=["device", "trained"])
    name = f"{trainer.__module__}.{trainer.__qualname__}"
    keys = []
    for m in members:
        X, y = check_training_data(m.X, m.y, any_shape=True)
        keys.append((name, X, y, config, int(m.seed), n_classes, dev.type, torch.__version__, TRAINING_VERSION, dev))
    if all(cached.check_call_in_cache(*key, None) for key in keys):
        models = [cached(*key, None) for key in keys]
    else:
        models = train()
        for key, model in zip(keys, models, strict=True):
            if not isinstance(model, TrainingFailed):
                cached.call(*key, lambda model=model: model)  # stores it under its own key
    for model in models:
        if not isinstance(model, TrainingFailed) and model.device != dev:
            model.module.to(dev)
            model.device = dev
    return models


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
        write_atomically(path, lambda partial: partial.write_text(json.dumps(dataclasses.asdict(ceiling))))
    return ceiling


def write_atomically(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(partial)`` to a file of this process beside ``path``, then renamed to ``path``: no reader ever sees a
    half-written file, even if the process dies while writing."""
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    write(partial)
    os.replace(partial, path)
