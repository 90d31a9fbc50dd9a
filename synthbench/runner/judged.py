"""Which model each stored result was judged on, and how the controls measured on it compare.

A value of a scorer that judges the explained model (ROAD, ROAR, KAR) is about one model: the
preset of a shared network (``sparse_mlp``) or a model kind that no preset configures
(``forest``). A method's chance reference is a control measured on that same model, so tables
pair rows by :func:`model_key`, and :func:`control_verdict` sets each method beside the controls
judged on its own model.

Every function reads tidy score rows as :meth:`~synthbench.runner.store.ResultStore.scores`
returns them (columns ``method``, ``model_preset``, ``judged``, ``judged_model``, ``control``,
``metric``, ``value`` and the cell's configuration); :func:`control_verdict` wants ``method``
already replaced by :func:`entry_labels` and the registered name kept as ``base_method``.
"""

from __future__ import annotations

import pandas as pd

from synthbench.catalogue import Catalogue

__all__ = ["entry_label", "entry_labels", "model_key", "control_verdict"]

#: What makes two cells the same configuration, less the method and its model.
_CONFIG = ["dataset", "dataset_params", "n_samples", "n_decoys", "seed", "fold", "explain", "scorer", "scorer_params"]


def entry_label(method: str, model: str | None) -> str:
    """The name a result row goes by: the method, and the model preset it explains (``saliency@sparse_mlp``) or
    the model kind a control was judged on beside the input kind's default (``random@forest``)."""
    return f"{method}@{model}" if isinstance(model, str) else method  # None, or NaN from a table


def entry_labels(rows: pd.DataFrame) -> list[str]:
    """:func:`entry_label` of each row: the method with its model preset
    (``saliency@sparse_mlp``) or the model kind a control was judged on (``random@forest``)."""
    models = rows["model_preset"].where(rows["model_preset"].notna(), rows["judged"])
    return [entry_label(m, p) for m, p in zip(rows["method"], models)]


def model_key(rows: pd.DataFrame, catalogue: Catalogue) -> pd.Series:
    """The model each row was judged on, as labelled: its preset when one configures the model, else the
    model kind its scorer measured (``forest``); ``""`` for a scorer that judges no model (the ground
    truth: every method meets the controls there) and where neither is known (a cell written before
    schema 8 that explains no preset). Whether a scorer judges a model is read from ``catalogue``."""
    judges = rows["scorer"].map(lambda name: bool(catalogue.scorer(name).abilities.judges_model))
    key = rows["model_preset"].where(rows["model_preset"].notna(), rows["judged_model"]).fillna("")
    return key.where(judges, "")


def control_verdict(rows: pd.DataFrame, metric: str, catalogue: Catalogue) -> str:
    """One sentence saying whether the controls do as well as the methods on ``metric``.

    Each method (an entry whose method is not a control) is set beside every control measured on
    its own model (:func:`model_key`), over the cells both hold (same configuration, seed and
    fold, scorer settings and explain mode); a control *does as well* when its mean over those
    cells is at least the method's, by the metric's direction. A method counts once however many
    controls do as well. Rows of any status may be given; only finished values count. The metric's direction
    and which scorers judge a model are read from ``catalogue``.

    Returns
    -------
    str
        ``"Controls input, random do as well as 2 of 5 methods on `road_gap` ...: mrmr, rf."``;
        ``""`` when no method has a control measured beside it.
    """
    sel = rows[(rows["metric"] == metric) & rows["value"].notna()]
    if "status" in sel:
        sel = sel[sel["status"] == "ok"]
    sel = sel.assign(
        model=model_key(sel, catalogue),
        n_decoys=sel["n_decoys"].fillna(-1),
        scorer_params=sel["scorer_params"].fillna(""),
    )
    table = sel.pivot_table(index=[*_CONFIG, "model"], columns="method", values="value", aggfunc="mean")
    controls = sorted(set(sel.loc[sel["control"], "method"]))
    higher = catalogue.metric(metric).direction == "higher"
    compared, matched = [], []
    for method in sorted(set(sel.loc[~sel["control"], "method"])):
        own = table[method].dropna()
        beside = [table.loc[own.index, c].dropna() for c in controls]
        beside = [c for c in beside if len(c)]
        if not beside:
            continue
        compared.append(method)
        means = [(own.loc[c.index].mean(), c.mean()) for c in beside]
        if any(control >= mean if higher else control <= mean for mean, control in means):
            matched.append(method)
    if not compared:
        return ""
    names = sorted(set(sel.loc[sel["control"], "base_method"]))
    return (
        f"Controls {', '.join(names)} do as well as {len(matched)} of {len(compared)} methods on `{metric}` "
        f"(each method beside the controls on the cells both hold, judged on the same model)"
        + (f": {', '.join(matched)}." if matched else ".")
    )
