"""Which stored cells explain a model that did not learn (competence below a threshold), and which settings no model
learns at their sample size, read from the store.

A cell's ``competence`` (:meth:`~synthbench.runner.store.ResultStore.cells`) is the lowest
competence of the models it needs (:mod:`synthbench.models.competence`), null where none is known:
a method that explains no model, data without a ceiling, or a cell written before ceilings were
recorded. Such an older cell carries instead the flag its run wrote when the model scored a
held-out AUROC below 0.6 (:data:`LEGACY_NEAR_CHANCE_FLAG`), read here as below any threshold.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from synthbench.catalogue import Catalogue
from synthbench.defaults import COMPETENCE_THRESHOLD
from synthbench.runner.judged import entry_label

__all__ = ["below_competence", "LEGACY_NEAR_CHANCE_FLAG", "model_fits", "model_label", "learnability", "FIT_COLUMNS"]

#: The flag cells written before the learnability ceiling carry when a model they explain scored a held-out
#: AUROC below 0.6; no cell is written with it any more.
LEGACY_NEAR_CHANCE_FLAG = "model_near_chance"


def below_competence(frame: pd.DataFrame, threshold: float = COMPETENCE_THRESHOLD) -> pd.Series:
    """Per row of ``frame`` (columns ``competence`` and ``flags``, as the store gives them): whether the cell
    explains a model whose competence is below ``threshold`` (bool; False where no competence is known and no
    legacy flag says otherwise)."""
    competence = pd.to_numeric(frame["competence"], errors="coerce")
    legacy = frame["flags"].fillna("").str.contains(LEGACY_NEAR_CHANCE_FLAG)
    return (competence < threshold).where(competence.notna(), legacy).astype(bool)


#: The columns of :func:`model_fits`.
FIT_COLUMNS = [
    "model",
    "dataset",
    "dataset_params",
    "n_samples",
    "n_decoys",
    "seed",
    "fold",
    "run_id",
    "auroc",
    "accuracy",
    "competence",
    "ceiling",
    "bayes_accuracy",
    "train_seconds",
    "flags",
    "methods",
]


def model_label(kind: str, preset: str | None, catalogue: Catalogue) -> str:
    """A fitted model's name: the kind, with the preset for a kind configured by one (``mlp@sparse_mlp``, as
    ``catalogue`` says)."""
    return entry_label(kind, preset) if catalogue.uses_preset(kind) else kind


def _number(value: float | None) -> float:
    return np.nan if value is None else float(value)


def model_fits(cells: pd.DataFrame, catalogue: Catalogue) -> pd.DataFrame:
    """Every shared model the finished ``cells`` (:meth:`ResultStore.cells` rows) record, once per training.

    A fold's model is trained once per (dataset configuration, decoy count, seed, fold) in a run and shared by
    every cell of the fold that needs it; each such cell records it. Returns :data:`FIT_COLUMNS`: ``model``
    (:func:`model_label`), the fold's configuration, ``run_id`` (-1 when unknown), held-out ``auroc`` and
    ``accuracy``, ``competence`` and ``ceiling`` (NaN where unknown), ``bayes_accuracy``, ``train_seconds``,
    ``flags`` (of the first cell recording it) and ``methods`` (sorted names of the methods that explain it), in
    the cells' order; ``n_decoys`` is -1 for a dataset without decoys.
    """
    done = cells[(cells["status"] == "ok") & cells["model"].notna()]
    rows = [
        (
            model_label(kind, None if pd.isna(c.model_preset) else c.model_preset, catalogue),
            c.dataset,
            c.dataset_params,
            int(c.n_samples),
            -1 if pd.isna(c.n_decoys) else int(c.n_decoys),
            c.seed,
            c.fold,
            -1 if pd.isna(c.run_id) else int(c.run_id),
            info.get("test_auroc", np.nan),
            info.get("test_accuracy", np.nan),
            _number(info.get("competence")),
            _number(info.get("ceiling_accuracy")),
            _number(info.get("bayes_accuracy")),
            info.get("train_seconds", np.nan),
            c.flags,
            c.method,
        )
        for c in done.itertuples()
        for kind, info in json.loads(c.model).items()
    ]
    fits = pd.DataFrame(rows, columns=[*FIT_COLUMNS[:-1], "method"])
    keys = FIT_COLUMNS[:8]
    users = fits.groupby(keys, sort=False, dropna=False)["method"].unique().map(sorted).rename("methods")
    return fits.drop_duplicates(keys).drop(columns="method").join(users, on=keys).reset_index(drop=True)


def learnability(fits: pd.DataFrame, threshold: float = COMPETENCE_THRESHOLD) -> pd.DataFrame:
    """Per setting (dataset, parameters, sample size, decoy count) of :func:`model_fits`: whether any model kind
    learns it.

    Returns ``dataset, dataset_params, n_samples, n_decoys, best_model, best_competence`` (the model with the
    highest mean competence over the setting's folds, NaN where none is known), ``learnable`` (it reaches
    ``threshold``; None where unknown) and ``learnable_at`` (the smallest sample size of the same dataset,
    parameters and decoy count at which some model reaches it, or NaN), in the fits' order.
    """
    keys = ["dataset", "dataset_params", "n_samples", "n_decoys"]
    rows = []
    for key, g in fits.groupby(keys, sort=False):
        means = g.groupby("model", sort=False)["competence"].mean().dropna()
        best = (means.idxmax(), float(means.max())) if len(means) else (None, np.nan)
        rows.append((*key, *best, None if not len(means) else bool(best[1] >= threshold)))
    table = pd.DataFrame(rows, columns=[*keys, "best_model", "best_competence", "learnable"])
    passing = table[table["learnable"] == True]  # noqa: E712 - None is unknown, not False
    smallest = passing.groupby(["dataset", "dataset_params", "n_decoys"])["n_samples"].min()
    table["learnable_at"] = [
        smallest.get((d, p, k), np.nan) for d, p, k in zip(table["dataset"], table["dataset_params"], table["n_decoys"])
    ]
    return table
