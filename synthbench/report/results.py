"""Results of a store, loaded once for reporting: scores of finished cells, every cell's status, the runs.

A *setting* is what one curve or table block is about: a dataset at one sample size and one set of
dataset parameters (``ring``, ``ring n=500`` when a store holds several sample sizes of that
dataset, ``dag {"scaling": "standardised"}`` when it holds several parameter sets). Cells also
carry their input ``kind`` (tables, images), ``scorer`` and ``explain`` mode; the report keeps
those apart too. The *grid* a store
implies is every (setting, decoy count, seed, fold) that any of its cells ran, crossed with every
method it holds; a combination with no stored cell is *missing*, never a zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from synthbench import datasets
from synthbench.runner.grid import entry_label
from synthbench.runner.store import ResultStore, StoreError

__all__ = ["Results", "load_results", "ReportError"]

_CONFIG = ["setting", "n_decoys", "seed", "fold"]


class ReportError(Exception):
    """The store cannot be reported on (missing, not a synthbench database, no cells)."""


@dataclass(frozen=True)
class Results:
    """What a report is made of.

    In both tables ``method`` is the row's entry, :func:`~synthbench.runner.grid.entry_label`
    (``saliency@sparse_mlp`` for a method that explains an MLP preset), so every table and figure
    keeps presets apart; ``base_method`` is the registered method.

    Attributes
    ----------
    scores : tidy rows of cells with status ``ok``, one per (cell, metric): the columns of
        :meth:`ResultStore.scores` plus ``setting``.
    cells : one row per stored cell (any status) with ``setting``, ``method``, ``status``,
        ``model_preset``,
        ``seconds``, ``flags``, ``package_version``, ``suite``, ``suite_hash``, ``run_id``.
    runs : one row per run (:meth:`ResultStore.runs`); empty for stores older than runs.
    path : the store's path.
    curves : the curve points of cells with status ``ok`` (:meth:`ResultStore.curves`: ``cell_id,
        curve, x, replicate, value``) with the cell's ``method``, ``base_method``, ``setting``,
        ``n_decoys``, ``fold``, ``seed``, ``scorer``, ``scorer_params``, ``explain`` and ``kind``; empty when no scorer measured curves.
    """

    scores: pd.DataFrame
    cells: pd.DataFrame
    runs: pd.DataFrame
    path: Path
    curves: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def methods(self) -> list[str]:
        """Methods with at least one stored cell, by name."""
        return sorted(self.cells["method"].unique())

    @property
    def settings(self) -> list[str]:
        """Settings in first-seen order of the store (the order the grid ran them)."""
        return list(dict.fromkeys(self.cells["setting"]))

    def missing(self) -> pd.DataFrame:
        """Cells of the implied grid that the store does not hold.

        Returns
        -------
        DataFrame with columns ``method, setting, n_decoys, seed, fold`` (one row per missing cell).
        """
        configs = self.cells[_CONFIG].drop_duplicates()
        grid = configs.merge(pd.DataFrame({"method": self.methods}), how="cross")
        held = self.cells[["method", *_CONFIG]].drop_duplicates()
        merged = grid.merge(held, how="left", on=["method", *_CONFIG], indicator=True)
        return merged.loc[merged["_merge"] == "left_only", ["method", *_CONFIG]].reset_index(drop=True)


def load_results(store: str | Path, *, suite: str | None = None) -> Results:
    """Read a results database (read-only) for reporting.

    Parameters
    ----------
    store : path of a synthbench SQLite store
    suite : keep only the cells of this suite (by name)

    Raises
    ------
    ReportError
        The file is missing, not a synthbench database, or holds no cell (of ``suite``).
    """
    try:
        with ResultStore(store, readonly=True) as db:
            cells, scores, runs, curves = db.cells(), db.scores(), db.runs(), db.curves()
    except StoreError as exc:
        raise ReportError(str(exc)) from None
    if suite is not None:
        cells, scores = cells[cells["suite"] == suite], scores[scores["suite"] == suite]
    if cells.empty:
        raise ReportError(f"store {store} holds no cells{f' of suite {suite!r}' if suite else ''}; run "
                          f"python -m synthbench.run --store {store} first")
    from synthbench.scoring import scorer_names

    unknown = sorted(set(cells["scorer"]) - set(scorer_names()))
    if unknown:
        raise ReportError(f"store {store} holds cells of scorer(s) {', '.join(unknown)} that this process does not "
                          "know; import the plugin that registers them (--plugin MODULE)")
    cells, scores = _entries(cells), _entries(scores)
    kinds = {d: datasets.spec(d).kind if d in datasets.names() else "tabular" for d in cells["dataset"].unique()}
    cells = cells.assign(kind=cells["dataset"].map(kinds))
    scores = scores.assign(kind=scores["dataset"].map(kinds).fillna("tabular"))
    labels = _setting_labels(cells)
    cells = cells.assign(setting=labels.loc[cells["cell_id"]].to_numpy())
    scores = scores[scores["status"] == "ok"]
    scores = scores.assign(setting=labels.loc[scores["cell_id"]].to_numpy()).reset_index(drop=True)
    ok = cells.loc[cells["status"] == "ok", ["cell_id", "method", "base_method", "setting", "n_decoys", "fold", "seed",
                                             "scorer", "scorer_params", "explain", "kind"]]
    curves = curves.merge(ok, on="cell_id")
    return Results(scores=scores, cells=cells.reset_index(drop=True), runs=runs, path=Path(store), curves=curves)


def _entries(frame: pd.DataFrame) -> pd.DataFrame:
    """``method`` replaced by the entry label (method and MLP preset), the registered name kept as ``base_method``."""
    labels = [entry_label(m, p) for m, p in zip(frame["method"], frame["model_preset"])]
    return frame.assign(base_method=frame["method"], method=labels)


def _setting_labels(cells: pd.DataFrame) -> pd.Series:
    """``dataset``, with ``n=N`` where the store holds the dataset at several sample sizes and its
    parameters where it holds several parameter sets; by cell_id."""
    sizes = cells.groupby("dataset")["n_samples"].transform("nunique")
    variants = cells.groupby("dataset")["dataset_params"].transform("nunique")
    label = cells["dataset"].where(variants == 1, cells["dataset"] + " " + cells["dataset_params"])
    label = label.where(sizes == 1, label + " n=" + cells["n_samples"].astype(str))
    return pd.Series(label.to_numpy(), index=cells["cell_id"])
