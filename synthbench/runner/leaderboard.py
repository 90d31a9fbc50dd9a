"""The leaderboard table: a metric's mean per method × (dataset, decoys), with chance and cost."""

from __future__ import annotations

import pandas as pd

from synthbench.scoring import get_metric
from synthbench.runner.cells import NEAR_CHANCE_FLAG
from synthbench.runner.grid import entry_label

__all__ = ["leaderboard", "format_leaderboard"]


def leaderboard(rows: pd.DataFrame, metric: str = "best_k") -> pd.DataFrame:
    """Mean ``metric`` over folds for each method (rows) and ``dataset/n_decoys`` (columns; ``dataset n=N/n_decoys``
    for a dataset run at several sample sizes).

    ``rows`` are tidy score rows as returned by :meth:`ResultStore.scores`. A method that
    explains the shared MLP has one row per preset (``saliency@sparse_mlp``). Adds a ``chance``
    row (the metric's expected value under a random ranking), a ``s/cell`` column (mean wall
    seconds per cell over every cell of the method), ``failed`` and ``skipped`` (over the method's
    declared feature limit) counts, and a ``near_chance``
    column counting cells whose model scored AUROC < 0.6 on held-out rows (still averaged in). Methods are
    sorted best first by their mean over all columns, following the metric's direction.
    """
    m = get_metric(metric)
    rows = rows.assign(method=[entry_label(a, b) for a, b in zip(rows["method"], rows["model_preset"])])
    ok = rows[(rows["status"] == "ok") & (rows["metric"] == metric)]
    if ok.empty:
        return pd.DataFrame()
    by = ["dataset", "n_samples", "n_decoys"]
    table = ok.pivot_table(index="method", columns=by, values="value", aggfunc="mean")
    chance = ok.pivot_table(columns=by, values="chance", aggfunc="mean")
    several = ok.groupby("dataset")["n_samples"].nunique()
    table.columns = chance.columns = [f"{d}{f' n={n}' if several[d] > 1 else ''}/{k}" for d, n, k in table.columns]
    order = table.mean(axis=1).sort_values(ascending=m.direction == "lower").index
    table = table.loc[order]
    cells = rows.drop_duplicates("cell_id")
    table["s/cell"] = cells[cells["status"] == "ok"].groupby("method")["seconds"].mean()
    for status in ("failed", "skipped"):
        table[status] = cells.groupby("method")["status"].apply(lambda s, st=status: int((s == st).sum()))
    flagged = cells["flags"].fillna("").str.contains(NEAR_CHANCE_FLAG)
    table["near_chance"] = flagged.groupby(cells["method"]).sum().astype(int)
    chance.index = ["chance"]
    return pd.concat([table, chance])


def format_leaderboard(table: pd.DataFrame, metric: str = "best_k") -> str:
    """Plain-text rendering for the terminal: columns ``dataset/decoys``, two decimals."""
    if table.empty:
        return f"(no finished cell has {metric})"
    t = table.copy()
    for col in ("failed", "skipped", "near_chance"):
        if col in t:
            t[col] = t[col].map(lambda v: "" if pd.isna(v) else str(int(v)))
    if "s/cell" in t:
        t["s/cell"] = t["s/cell"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    body = t.to_string(float_format=lambda v: f"{v:.2f}", na_rep="-")
    return f"mean {metric} over folds (columns: dataset/decoys; {get_metric(metric).direction} is better)\n{body}"
