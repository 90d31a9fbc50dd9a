"""Whether the truth separates the methods, per setting and explained model: what to measure before a study's suite
is frozen (issue 47, section 2).

Usage: ``python benchmarks/truth_spread.py --store S [--metrics local_tpr_at_k,average_precision,auroc,best_k]``

Reads the ground-truth cells of ``--store`` (a probe of candidate settings: the explained models' methods and the
``random`` control, a few folds) and prints, per setting (the report's label: the dataset with the parameters and
sample sizes that tell it apart; decoys) and explained model (the preset of a network, the kind of any other model,
as the study orders them), the
explained model's mean and least competence, then for each truth metric: the non-control methods it orders, the
range of their mean values (the *spread*: the study counts a truth as separating the methods from
``MIN_TRUTH_SPREAD``), the least gap between two neighbouring means, and the split-half reliability of the truth's
ordering across folds (Spearman-Brown; the study lets a setting into a verdict's mean from ``MIN_TRUTH_RELIABILITY``).
The ladder's rungs are left out, as the study leaves them out of the methods. Last, the mean seconds of each method's
cells (with their share of the models' training), the cost a suite pays for it.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from synthbench.report import load_results
from synthbench.report.study.validity import MIN_TRUTH_RELIABILITY, group_rng, split_half_reliability
from synthbench.report.study.verdicts import MIN_TRUTH_SPREAD, TRUTH_METRICS
from synthbench.report.tables import judged_values

SETTING = ["setting", "n_decoys", "model"]


def truth_rows(store: str, metrics: list[str]) -> pd.DataFrame:
    """The ground-truth values of ``metrics`` in the store, every model's however it learned
    (:func:`~synthbench.report.tables.judged_values`: setting, model, rung, ...), controls and ladder rungs left
    out, with each cell's ``competence`` and ``seconds``."""
    results = load_results(store, all_models=True)
    cells = results.cells.set_index("cell_id")
    rows = pd.concat([judged_values(results, m).assign(metric=m) for m in metrics], ignore_index=True)
    truth = rows["cell_id"].map(cells["scorer"]) == "ground_truth"
    rows = rows[truth & ~rows["control"] & rows["rung"].isna()]
    return rows.assign(
        competence=rows["cell_id"].map(cells["competence"]), seconds=rows["cell_id"].map(cells["seconds"])
    )


def spread_table(rows: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """One row per setting, model and truth metric: methods, folds, competence, spread, least gap, split-half."""
    out = []
    for key, g in rows.groupby(SETTING, sort=False, dropna=False):
        competence = g.drop_duplicates("cell_id")["competence"]
        for metric in metrics:
            m = g[g["metric"] == metric]
            if m.empty:
                continue
            wide = m.pivot_table(index=["seed", "fold"], columns="method", values="value", aggfunc="mean")
            wide = wide.dropna(axis=1)
            means = np.sort(wide.mean().to_numpy())
            out.append(
                (
                    *key,
                    metric,
                    wide.shape[1],
                    len(wide),
                    competence.mean(),
                    competence.min(),
                    float(np.ptp(means)) if len(means) else np.nan,
                    float(np.diff(means).min()) if len(means) > 1 else np.nan,
                    split_half_reliability(wide.to_numpy(), group_rng(0, (*key, metric))),
                )
            )
    columns = [*SETTING, "truth", "methods", "folds", "competence", "least", "spread", "least gap", "split-half"]
    return pd.DataFrame(out, columns=columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--metrics", default=",".join(TRUTH_METRICS["tabular"]))
    args = parser.parse_args()
    metrics = args.metrics.split(",")
    rows = truth_rows(args.store, metrics)
    table = spread_table(rows, metrics)
    pd.set_option("display.width", 200)
    print(
        f"the truth per setting and model (the study: spread >= {MIN_TRUTH_SPREAD:g}, split-half >= "
        f"{MIN_TRUTH_RELIABILITY:g})"
    )
    print(table.round(3).to_string(index=False))
    seconds = rows.drop_duplicates("cell_id").groupby(["model", "method"])["seconds"].mean()
    print("\nmean seconds per cell, with the share of the models' training")
    print(seconds.round(1).to_string())


if __name__ == "__main__":
    main()
