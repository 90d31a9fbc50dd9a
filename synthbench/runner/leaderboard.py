"""The leaderboard table: a metric's mean per method × (dataset, decoys), with chance and cost."""

from __future__ import annotations

import numpy as np
import pandas as pd

from synthbench.catalogue import Catalogue
from synthbench.defaults import COMPETENCE_THRESHOLD
from synthbench.runner.competence import below_competence, learnability, model_fits
from synthbench.runner.judged import control_verdict, entry_label, entry_labels, model_key

__all__ = ["leaderboard", "format_leaderboard", "competence_table", "format_competence"]


def _column_label(frame: pd.DataFrame):
    """``fn(dataset, dataset_params, n_samples, n_decoys) -> "dataset/decoys"``: the column of one setting, naming the
    parameters and the sample size only where ``frame`` holds a dataset with several (``n_decoys`` -1: none)."""
    several = frame.groupby("dataset")["n_samples"].nunique()
    variants = frame.groupby("dataset")["dataset_params"].nunique()

    def label(d: str, p: str, n: int, k: int) -> str:
        return (
            f"{d}{f' {p}' if variants[d] > 1 else ''}{f' n={n}' if several[d] > 1 else ''}{f'/{k}' if k >= 0 else ''}"
        )

    return label


def leaderboard(
    rows: pd.DataFrame,
    metric: str = "best_k",
    *,
    catalogue: Catalogue,
    competence: float = COMPETENCE_THRESHOLD,
    all_models: bool = False,
) -> pd.DataFrame:
    """Mean ``metric`` over folds for each method (rows) and ``dataset/n_decoys`` (columns; ``dataset n=N/n_decoys``
    for a dataset run at several sample sizes).

    ``rows`` are tidy score rows as returned by :meth:`ResultStore.scores`, ``catalogue`` what the store says its
    scorers are (:meth:`ResultStore.catalogue`). A method that
    explains the shared MLP has one row per preset (``saliency@sparse_mlp``), a control judged on
    another model kind one per kind (``random@forest``). Adds a ``chance``
    row (the metric's expected value under a random ranking or, for a metric whose chance
    reference is a control method such as ROAD's ``random``, that control's mean in ``rows``; one
    row per model it was judged on, ``chance@sparse_mlp``, ``chance@forest``, when several: each
    method's chance is the row of its own model), a ``s/cell`` column (the method's own mean
    wall seconds per finished cell, without training the shared model it explains), ``failed`` and ``skipped`` (over
    the method's
    declared feature limit) counts, and an ``incompetent`` column counting the finished cells whose model's
    competence is below ``competence`` (:mod:`synthbench.models.competence`): left out of the means, unless
    ``all_models`` (then averaged in, and the column marks them). Methods are sorted best first by their
    mean over all columns, following the metric's direction.

    Results that are not comparable are never averaged together: rows are kept apart by scorer
    (the metric is read from the scorers of ``rows`` that declare it; with several, each method's
    row names its scorer, ``saliency [ground_truth]``, and with one scorer run at several settings
    also those settings), by explain mode (``saliency (train)``) and
    by dataset parameters (the column names them when a dataset ran with several).

    The table's ``attrs["controls"]`` holds :func:`~synthbench.runner.judged.control_verdict`'s
    sentence (whether the controls do as well as the methods; ``""`` when no control ran), which
    :func:`format_leaderboard` prints below it, and ``attrs["direction"]`` the metric's.
    """
    rows = rows.copy()
    rows["n_decoys"] = rows["n_decoys"].astype("Int64")  # null for datasets without decoys
    scorers = [s for s in dict.fromkeys(rows["scorer"]) if metric in catalogue.scorer(s).metrics]
    if not scorers:
        return pd.DataFrame()
    m = catalogue.metric(metric)  # KeyError when the scorers that declare it disagree on what it means
    rows = rows[rows["scorer"].isin(scorers)]
    label = entry_labels(rows)
    if rows["explain"].nunique() > 1:
        label = [f"{x} ({e})" for x, e in zip(label, rows["explain"])]
    params = rows["scorer_params"].fillna("")
    if params.groupby(rows["scorer"]).nunique().max() > 1:  # one scorer run with several settings
        label = [f"{x} [{s} {p}]" for x, s, p in zip(label, rows["scorer"], params)]
    elif len(scorers) > 1:
        label = [f"{x} [{s}]" for x, s in zip(label, rows["scorer"])]
    rows = rows.assign(method=label, base_method=rows["method"], incompetent=below_competence(rows, competence))
    ok = rows[(rows["status"] == "ok") & (rows["metric"] == metric)]
    if ok.empty:
        return pd.DataFrame()
    if not all_models:  # a cell of a model that did not learn keeps its place in the table, not its value
        ok = ok.assign(value=ok["value"].where(~ok["incompetent"]))
    by = ["dataset", "dataset_params", "n_samples", "n_decoys"]
    ok = ok.fillna({"n_decoys": -1})
    table = ok.groupby(["method", *by])["value"].mean().unstack(by)  # a method whose cells were all left out: NaN
    control = m.control  # a metric whose chance reference is a control run beside the methods
    if control:
        # the control judged on each model (preset or kind): one chance row per model when it ran on several
        controls = ok[ok["base_method"] == control]
        chance = controls.assign(model=model_key(controls, catalogue)).pivot_table(
            index="model", columns=by, values="value", aggfunc="mean"
        )
    else:
        chance = ok.pivot_table(columns=by, values="chance", aggfunc="mean")
    chance = chance.reindex(columns=table.columns)
    label = _column_label(ok)
    table.columns = chance.columns = [label(*column) for column in table.columns]
    order = table.mean(axis=1).sort_values(ascending=m.direction == "lower").index
    table = table.loc[order]
    cells = rows.drop_duplicates("cell_id")
    finished = cells[cells["status"] == "ok"]
    table["s/cell"] = (finished["seconds"] - finished["train_seconds"]).groupby(finished["method"]).mean()
    for status in ("failed", "skipped"):
        table[status] = cells.groupby("method")["status"].apply(lambda s, st=status: int((s == st).sum()))
    table["incompetent"] = (
        finished["incompetent"].groupby(finished["method"]).sum().reindex(table.index, fill_value=0).astype(int)
    )
    chance.index = ["chance"] if len(chance) == 1 else [entry_label("chance", p or None) for p in chance.index]
    board = pd.concat([table, chance])
    board.attrs["controls"] = control_verdict(rows if all_models else rows[~rows["incompetent"]], metric, catalogue)
    board.attrs["direction"] = m.direction
    board.attrs["competence"] = (competence, all_models)
    return board


def format_leaderboard(table: pd.DataFrame, metric: str = "best_k") -> str:
    """Plain-text rendering for the terminal: columns ``dataset/decoys``, two decimals."""
    if table.empty:
        return f"(no finished cell has {metric})"
    t = table.copy()
    for col in ("failed", "skipped", "incompetent"):
        if col in t:
            t[col] = t[col].map(lambda v: "" if pd.isna(v) else str(int(v)))
    if "s/cell" in t:
        t["s/cell"] = t["s/cell"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    body = t.to_string(float_format=lambda v: f"{v:.2f}", na_rep="-")
    direction = table.attrs["direction"]
    verdict = table.attrs.get("controls")
    threshold, shown = table.attrs.get("competence", (COMPETENCE_THRESHOLD, False))
    note = (
        f"incompetent: finished cells whose model reached a competence below {threshold:g} (accuracy − chance "
        f"over ceiling − chance), {'averaged in' if shown else 'left out of the means'}"
    )
    return f"mean {metric} over folds (columns: dataset/decoys; {direction} is better)\n{body}\n{note}" + (
        f"\n{verdict}" if verdict else ""
    )


def competence_table(fits: pd.DataFrame) -> pd.DataFrame:
    """Mean competence over folds of each model (rows) per setting, in the leaderboard's columns, from
    :func:`~synthbench.runner.competence.model_fits`; empty without a fit."""
    if fits.empty:
        return pd.DataFrame()
    fits = fits.sort_values(["dataset", "dataset_params", "n_samples", "n_decoys"], kind="stable")
    label = _column_label(fits)
    column = [label(*key) for key in zip(fits["dataset"], fits["dataset_params"], fits["n_samples"], fits["n_decoys"])]
    table = fits.assign(column=column).pivot_table(
        index="model", columns="column", values="competence", aggfunc="mean", sort=False, dropna=False
    )
    table = table.reindex(columns=list(dict.fromkeys(column)))
    table.columns.name = None
    return table


def format_competence(cells: pd.DataFrame, catalogue: Catalogue, threshold: float = COMPETENCE_THRESHOLD) -> str:
    """Plain-text competence of every explained model per ``dataset/decoys`` (:func:`competence_table`, from
    :meth:`ResultStore.cells` rows), then the settings no model of ``cells`` learns at their sample size (and where
    one does): a statement about the models those cells explain, not about every model kind. "" without a model."""
    fits = model_fits(cells, catalogue)
    table = competence_table(fits)
    if table.empty:
        return ""
    body = table.to_string(float_format=lambda v: f"{v:.2f}", na_rep="-")
    head = (
        f"\ncompetence of the explained models, mean over folds ((accuracy − chance) / (ceiling − chance); the "
        f"ceiling: the best of the forest, the booster and the network on the relevant features alone; threshold "
        f"{threshold:g})"
    )
    lines = [head, body]
    unlearnt = learnability(fits, threshold)
    for r in unlearnt[unlearnt["learnable"] == False].itertuples():  # noqa: E712 - None is unknown
        where = r.dataset + (f"/{r.n_decoys}" if r.n_decoys >= 0 else "")
        at = (
            f"some model reaches it at n = {int(r.learnable_at)}"
            if np.isfinite(r.learnable_at)
            else "no sample size run here reaches it"
        )
        lines.append(
            f"no model here learns {where} at n = {r.n_samples} (best: {r.best_model} at competence "
            f"{r.best_competence:.2f} < {threshold:g}; {at})"
        )
    return "\n".join(lines)
