"""A seeded hyperparameter search for the MLP of one fold, on its training rows only.

:func:`search_mlp` draws ``budget`` configurations with Optuna's TPE sampler (seeded, so the same
call returns the same trials) from a space of :data:`SPACES`, trains each on a *search* part of the fold's
training rows (itself early-stopped on the inner validation split the trainer draws from it) and
scores it by accuracy on the rest of the training rows (the *selection* part, stratified and
seeded). Optuna reports each trial on its own logger (``optuna.logging`` sets how much). The fold's held-out rows
(``X_test``, ``y_test``) and explained rows are never read:
what is chosen cannot have seen the rows a model is judged on. The chosen configuration is then
meant to be trained on the whole training part, as every preset is.

``benchmarks/search_neural_preset.py`` runs it per setting on data seeds the benchmark's runs do
not use, so that a preset can ship the chosen configurations as a table and the default run
never searches.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.model_selection import train_test_split

from synthbench.models.mlp import MLPConfig, train_mlp
from synthbench.models.presets import get_preset

__all__ = ["SPACES", "Space", "Trial", "search_mlp", "config_of"]

log = logging.getLogger(__name__)


def _params_of(preset: str, names: tuple[str, ...]) -> dict[str, Any]:
    """The values of ``names`` in a preset's flat configuration."""
    flat = get_preset(preset).config.to_dict()
    return {name: flat[name] for name in names}


@dataclass(frozen=True)
class Space:
    """A search space: ``names`` maps a parameter to ("int", low, high), ("log", low, high), ("float", low,
    high) or ("choice", values); ``common`` holds what every trial shares; ``first`` (or None) is the
    first trial, enqueued before the sampler draws (a preset the search should beat)."""

    names: dict[str, tuple]
    common: dict[str, Any]
    first: dict[str, Any] | None = None


#: ``"plain"``: MLPs on the raw inputs (an L1 penalty on the first layer optional), stopped on
#: validation AUROC from the best epoch. ``"screened"``: the ``screened_mlp`` family (a hinge basis,
#: a group penalty and successive halving of the inputs, :mod:`synthbench.models.mlp`), its first
#: trial the ``screened_mlp`` preset.
SPACES: dict[str, Space] = {
    "plain": Space(
        {
            "width": ("choice", (32, 64, 128, 256, 512)),
            "depth": ("int", 1, 3),
            "noise_sigma": ("float", 0.0, 0.2),
            "lr": ("log", 3e-4, 1e-2),
            "weight_decay": ("log", 1e-6, 1e-2),
            "l1_first_layer": ("log", 1e-6, 3e-3),
            "batch_size": ("choice", (32, 64, 128)),
        },
        {"monitor": "auroc", "stopping": "best", "patience": 30, "restore": "best", "max_epochs": 400},
    ),
    "screened": Space(
        {
            "width": ("choice", (32, 64, 128)),
            "depth": ("int", 1, 2),
            "lr": ("log", 1e-3, 5e-3),
            "batch_size": ("choice", (32, 64)),
            "basis_knots": ("choice", (4, 6, 10)),
            "group_penalty": ("log", 1e-4, 1e-2),
            "screen_keep": ("float", 0.3, 0.75),
            "patience": ("choice", (40, 100)),
        },
        {
            "activation": "relu",
            "noise_sigma": 0.0,
            "weight_decay": 0.0,
            "monitor": "auroc",
            "stopping": "best",
            "restore": "best",
            "max_epochs": 300,
            "screen_budget": 30_000,
        },
        first=_params_of(
            "screened_mlp",
            ("width", "depth", "lr", "batch_size", "basis_knots", "group_penalty", "screen_keep", "patience"),
        ),
    ),
}


@dataclass(frozen=True)
class Trial:
    """One configuration tried: its parameters (its space's names) and its accuracy on the selection rows."""

    number: int
    params: dict[str, Any]
    accuracy: float


def config_of(params: dict[str, Any], space: str = "plain") -> MLPConfig:
    """The :class:`MLPConfig` of a trial's parameters in ``space``, with what that space's trials share."""
    return MLPConfig.from_dict({**_space(space).common, **params})


def _space(name: str) -> Space:
    if name not in SPACES:
        raise ValueError(f"unknown search space {name!r}; choose from {sorted(SPACES)}")
    return SPACES[name]


def _suggest(trial: Any, name: str, spec: tuple) -> Any:
    kind = spec[0]
    if kind == "choice":
        return trial.suggest_categorical(name, list(spec[1]))
    if kind == "int":
        return trial.suggest_int(name, spec[1], spec[2])
    return trial.suggest_float(name, spec[1], spec[2], log=kind == "log")


def search_mlp(
    X_train: np.ndarray,
    y_train: np.ndarray,
    *,
    budget: int,
    seed: int,
    selection_fraction: float = 0.25,
    n_classes: int | None = None,
    space: str = "plain",
) -> tuple[MLPConfig, list[Trial]]:
    """The best of ``budget`` MLP configurations on a fold's training rows, and every trial.

    Parameters
    ----------
    X_train, y_train : the fold's training part only (float32 ``(n, p)``, int ``(n,)``)
    budget : trials, at least 1
    seed : seeds the TPE sampler, the search / selection split and every trial's training
    selection_fraction : share of the training rows that score the trials (stratified), in (0, 1)
    space : a name of :data:`SPACES`

    Returns
    -------
    The chosen configuration (the highest selection accuracy; the first on ties) and the trials in order.

    Raises
    ------
    ValueError
        For a budget below 1, a selection fraction outside (0, 1) or an unknown space.
    """
    import optuna  # imported here: only the search needs it

    if int(budget) < 1:
        raise ValueError(f"the search budget must be at least 1 trial, got {budget}")
    if not 0.0 < selection_fraction < 1.0:
        raise ValueError(f"selection_fraction must lie strictly between 0 and 1, got {selection_fraction}")
    chosen = _space(space)
    y = np.asarray(y_train)
    fit, held = train_test_split(np.arange(len(y)), test_size=selection_fraction, random_state=seed, stratify=y)

    def objective(trial: Any) -> float:
        config = config_of({name: _suggest(trial, name, spec) for name, spec in chosen.names.items()}, space)
        model = train_mlp(X_train[fit], y[fit], config=config, seed=seed, n_classes=n_classes)
        return float((model.predict(X_train[held]) == y[held]).mean())

    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    if chosen.first is not None:
        study.enqueue_trial(chosen.first)
    study.optimize(objective, n_trials=int(budget))
    trials = [Trial(t.number, dict(t.params), float(t.value if t.value is not None else np.nan)) for t in study.trials]
    best = max(trials, key=lambda t: (t.accuracy, -t.number))
    log.debug("search: %d trials, best %s at %.3f", len(trials), best.params, best.accuracy)
    return config_of(best.params, space), trials
