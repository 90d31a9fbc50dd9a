"""Results of a store, loaded once for reporting: scores of finished cells, every cell's status, the runs.

A *setting* is what one curve or table block is about: a dataset at one sample size and one set of
dataset parameters (``ring``, ``ring n=500`` when a store holds several sample sizes of that
dataset, ``dag {"scaling": "standardised"}`` when it holds several parameter sets). Cells also
carry their input ``kind`` (tables, images), ``scorer`` and ``explain`` mode; the report keeps
those apart too. What each dataset is (its input kind, whether it takes decoys, the plugin that
registers it), each method's report family, and each scorer's metrics and abilities are read from
the store, which records them with the cells, so a report of plugin datasets, methods and scorers
needs no ``--plugin``, and reading a store imports neither torch nor a registry; only stores written
before they were recorded fall back on what this process has registered (importing its registries). The *grid* a store
implies is every (setting, decoy count, seed, fold) that any of its cells ran, crossed with every
method it holds; a combination with no stored cell is *missing*, never a zero.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from synthbench.catalogue import Catalogue, MetricInfo
from synthbench.defaults import COMPETENCE_THRESHOLD
from synthbench.runner.competence import below_competence
from synthbench.runner.judged import entry_labels
from synthbench.runner.store import ResultStore, StoreError, plugin_of

__all__ = ["Results", "load_results", "ReportError"]

_CONFIG = ["setting", "n_decoys", "seed", "fold"]


class ReportError(Exception):
    """The store cannot be reported on (missing, not a synthbench database, no cells)."""


@dataclass(frozen=True)
class Results:
    """What a report is made of.

    In both tables ``method`` is the row's entry, :func:`~synthbench.runner.judged.entry_label`
    (``saliency@sparse_mlp`` for a method that explains an MLP preset, ``random@forest`` for a
    control judged on the forest), so every table and figure keeps models apart; ``base_method``
    is the registered method.

    Attributes
    ----------
    scores : tidy rows of cells with status ``ok``, one per (cell, metric): the columns of
        :meth:`ResultStore.scores` plus ``setting`` and ``incompetent``; unless ``all_models``, only
        cells whose models reached the competence threshold (or whose competence is unknown).
    cells : one row per stored cell (any status) with ``setting``, ``method``, ``status``,
        ``model_preset``, ``seconds`` (as stored: the method and the training of the shared models it
        needs), ``train_seconds`` (that training, :meth:`ResultStore.cells`), ``method_seconds`` (the method's own:
        ``seconds −
        train_seconds``), ``flags``, ``competence`` (of the least competent model the cell explains, or NaN),
        ``incompetent`` (below ``competence_threshold``), ``package_version``, ``suite``, ``suite_hash``, ``run_id``.
    runs : one row per run (:meth:`ResultStore.runs`); empty for stores older than runs.
    per_example : each metric's value per explained example of the cells with status ``ok`` kept in ``scores``
        (:meth:`ResultStore.per_example`: ``cell_id, metric, values``); empty where no scorer recorded them.
    path : the store's path.
    curves : the curve points of cells with status ``ok`` (:meth:`ResultStore.curves`: ``cell_id,
        curve, x, replicate, value``) with the cell's ``method``, ``base_method``, ``setting``,
        ``n_decoys``, ``fold``, ``seed``, ``scorer``, ``scorer_params``, ``explain`` and ``kind``; empty when no
        scorer measured curves.
    datasets : one row per dataset of the cells, indexed by name: ``kind``, ``decoys``, ``family``,
        ``description``, ``plugin`` (what ``--plugin`` must name to register it; None for synthbench's
        own).
    catalogue : what the cells' scorers (their metrics and abilities) and model kinds are, as the store
        records them (:meth:`ResultStore.catalogue`): the report reads every metric's direction, limits and
        description from here.
    methods_info : one row per method (registered name) of the cells, indexed by name: ``family``,
        ``description``, ``reference`` (the publication it follows), as the store records them or, for
        older cells, as registered here; None where neither knows.
    families : method (registered name) -> its report family (``classical``, ``neural selector``,
        ``attribution``), as the store records it or, for older cells, as registered here; methods
        known to neither are absent (figures call them ``other``).
    data_dir : the folder of data sets read from files, or None (their example maps are drawn alone).
    competence_threshold : a model below this competence did not learn (:mod:`synthbench.models.competence`)
    all_models : whether ``scores`` and ``curves`` keep the cells of such models (marked) or leave them out
    """

    scores: pd.DataFrame
    cells: pd.DataFrame
    runs: pd.DataFrame
    path: Path
    curves: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_example: pd.DataFrame = field(default_factory=pd.DataFrame)
    datasets: pd.DataFrame = field(default_factory=pd.DataFrame)
    catalogue: Catalogue = field(default_factory=Catalogue)
    methods_info: pd.DataFrame = field(default_factory=pd.DataFrame)
    families: dict[str, str] = field(default_factory=dict)
    data_dir: str | None = None
    competence_threshold: float = COMPETENCE_THRESHOLD
    all_models: bool = False

    def metric(self, name: str, scorer: str | None = None) -> MetricInfo:
        """Metric ``name`` as the store's scorers declare it (``scorer``'s, where several declare it differently):
        its direction, limits, unit and description (:meth:`synthbench.catalogue.Catalogue.metric`)."""
        return self.catalogue.metric(name, scorer)

    def select(self, scores: pd.DataFrame, cells: pd.DataFrame, curves: pd.DataFrame) -> Results:
        """The same store restricted to these rows (a part of the report; its per-example values those of ``cells``)."""
        per_example = self.per_example
        if not per_example.empty:
            per_example = per_example[per_example["cell_id"].isin(set(cells["cell_id"]))].reset_index(drop=True)
        return dataclasses.replace(self, scores=scores, cells=cells, curves=curves, per_example=per_example)

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

        The grid crosses each input kind's configurations with the methods the store holds on that kind
        (a method that only runs on images is not missing from a table).

        Returns
        -------
        DataFrame with columns ``method, setting, n_decoys, seed, fold`` (one row per missing cell).
        """
        configs = self.cells[[*_CONFIG, "kind"]].drop_duplicates()
        grid = configs.merge(self.cells[["kind", "method"]].drop_duplicates(), on="kind").drop(columns="kind")
        held = self.cells[["method", *_CONFIG]].drop_duplicates()
        merged = grid.merge(held, how="left", on=["method", *_CONFIG], indicator=True)
        return merged.loc[merged["_merge"] == "left_only", ["method", *_CONFIG]].reset_index(drop=True)


def load_results(
    store: str | Path,
    *,
    suite: str | None = None,
    data_dir: str | Path | None = None,
    competence: float = COMPETENCE_THRESHOLD,
    all_models: bool = False,
) -> Results:
    """Read a results database (read-only) for reporting.

    Parameters
    ----------
    store : path of a synthbench SQLite store
    suite : keep only the cells of this suite (by name)
    data_dir : the folder of data sets read from files (MNIST, CIFAR-10), for the figures that
        draw their images; None draws their maps alone
    competence : the competence threshold (strictly between 0 and 1); cells explaining a model below it are
        left out of ``scores`` and ``curves`` unless ``all_models``

    Raises
    ------
    ReportError
        The file is missing, not a synthbench database, holds no cell (of ``suite``), holds cells of a
        scorer neither it nor this process knows, or (a store written before synthbench recorded datasets)
        cells of a dataset it neither describes nor this process knows.
    """
    try:
        with ResultStore(store, readonly=True) as db:
            cells, scores, runs, curves = db.cells(), db.scores(), db.runs(), db.curves()
            per_example = db.per_example()
            described, methods, catalogue = db.datasets(), db.methods(), db.catalogue()
    except StoreError as exc:
        raise ReportError(str(exc)) from None
    if suite is not None:
        cells, scores = cells[cells["suite"] == suite], scores[scores["suite"] == suite]
    if cells.empty:
        raise ReportError(
            f"store {store} holds no cells{f' of suite {suite!r}' if suite else ''}; run "
            f"python -m synthbench.run --store {store} first"
        )
    unknown = sorted(set(cells["scorer"]) - set(catalogue.scorers))
    if unknown:
        raise ReportError(
            f"store {store} holds cells of scorer(s) {', '.join(unknown)} that neither it records "
            "nor this process knows; import the plugin that registers them (--plugin MODULE|PATH.py)"
        )
    info = _dataset_info(described, list(dict.fromkeys(cells["dataset"])), store)
    cells, scores = _entries(cells), _entries(scores)
    cells = cells.assign(
        kind=cells["dataset"].map(info["kind"]),
        method_seconds=cells["seconds"] - cells["train_seconds"],
        incompetent=below_competence(cells, competence),
    )
    scores = scores.assign(kind=scores["dataset"].map(info["kind"]), incompetent=below_competence(scores, competence))
    labels = _setting_labels(cells)
    cells = cells.assign(setting=labels.loc[cells["cell_id"]].to_numpy())

    def kept(frame: pd.DataFrame) -> pd.Series:  # finished, of a model that learned unless every model is asked for
        return (frame["status"] == "ok") & (all_models | ~frame["incompetent"])

    scores = scores[kept(scores)]
    scores = scores.assign(setting=labels.loc[scores["cell_id"]].to_numpy()).reset_index(drop=True)
    ok = cells.loc[
        kept(cells),
        [
            "cell_id",
            "method",
            "base_method",
            "setting",
            "n_decoys",
            "fold",
            "seed",
            "scorer",
            "scorer_params",
            "explain",
            "kind",
        ],
    ]
    curves = curves.merge(ok, on="cell_id")
    per_example = per_example[per_example["cell_id"].isin(set(ok["cell_id"]))].reset_index(drop=True)
    about = _method_info(methods, sorted(cells["base_method"].unique()))
    return Results(
        scores=scores,
        cells=cells.reset_index(drop=True),
        runs=runs,
        path=Path(store),
        curves=curves,
        per_example=per_example,
        datasets=info,
        catalogue=catalogue,
        methods_info=about,
        families=about["family"].dropna().to_dict(),
        data_dir=None if data_dir is None else str(data_dir),
        competence_threshold=competence,
        all_models=all_models,
    )


_DATASET_COLUMNS = ["kind", "decoys", "family", "description", "plugin"]


def _dataset_info(described: pd.DataFrame, names: list[str], store: str | Path) -> pd.DataFrame:
    """What each dataset of ``names`` is: as the store describes it, else as this process has it registered (the
    datasets' registry is imported only then).

    ReportError for a dataset neither knows (its input kind would be a guess).
    """
    stored = described.set_index("dataset")
    rows = {
        name: [
            row["kind"],
            bool(row["decoys"]),
            row["family"],
            row["description"],
            None if pd.isna(row["plugin"]) else row["plugin"],
        ]
        for name, row in stored.loc[[n for n in names if n in stored.index]].iterrows()
    }
    if len(rows) < len(names):
        from synthbench import datasets

        for name in (n for n in names if n not in rows and n in datasets.names()):
            here = datasets.spec(name)
            rows[name] = [here.kind, here.decoys, here.family, here.description, plugin_of(here.fn)]
    unknown = [n for n in names if n not in rows]
    if unknown:
        raise ReportError(
            f"store {store} does not record what dataset(s) {', '.join(unknown)} are (its cells were "
            "written before synthbench recorded it) and this process does not know them; import the "
            "plugin that registers them (--plugin MODULE|PATH.py)"
        )
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=_DATASET_COLUMNS).rename_axis("dataset")
    return frame.loc[names]


_METHOD_COLUMNS = ["family", "description", "reference"]


def _method_info(described: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """What each method is (``family``, ``description``, ``reference``): as the store records it, else as
    registered here (the methods' registry is imported only then); None where neither knows (a plugin's method
    from an older store)."""
    stored = described.set_index("method").reindex(index=names, columns=_METHOD_COLUMNS)
    stored = stored.astype(object).where(stored.map(lambda v: isinstance(v, str)), None)
    if stored.isna().to_numpy().any():
        from synthbench.methods import get_method, method_names

        for name in (n for n in names if n in method_names()):
            here = get_method(name)
            for column in _METHOD_COLUMNS:
                if stored.at[name, column] is None:
                    stored.at[name, column] = getattr(here, column, None) or None
    return stored.rename_axis("method")


def _entries(frame: pd.DataFrame) -> pd.DataFrame:
    """``method`` replaced by the entry label (method and MLP preset, or the model kind a control was judged
    on), the registered name kept as ``base_method``."""
    return frame.assign(base_method=frame["method"], method=entry_labels(frame))


def _setting_labels(cells: pd.DataFrame) -> pd.Series:
    """``dataset``, with ``n=N`` where the store holds the dataset at several sample sizes and its
    parameters where it holds several parameter sets; by cell_id."""
    sizes = cells.groupby("dataset")["n_samples"].transform("nunique")
    variants = cells.groupby("dataset")["dataset_params"].transform("nunique")
    label = cells["dataset"].where(variants == 1, cells["dataset"] + " " + cells["dataset_params"])
    label = label.where(sizes == 1, label + " n=" + cells["n_samples"].astype(str))
    return pd.Series(label.to_numpy(), index=cells["cell_id"])
