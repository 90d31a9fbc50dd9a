"""What each explained model learned, per setting: held-out accuracy and competence beside the learnability ceiling.

Usage: ``python benchmarks/competence_table.py [--store results/synthbench.sqlite] [--competence 0.5]``

Reads the models a store's cells record (:func:`synthbench.runner.competence.model_fits`, once per
fold) and prints, per setting (dataset, sample size, decoy count): for every model the mean
held-out accuracy and mean competence over the folds (``acc / comp``), the fraction of its fits at or
above the threshold, the fold's learnability ceiling (mean; the best of the forest and the booster on
the relevant features alone) and the Bayes accuracy where the generator gives one; then which
settings no model learns at their sample size. Run it on the store of the default command
(``python -m synthbench.run --decoys 100,1000``) to read what its neural and tree rows stand on.
"""

from __future__ import annotations

import argparse

import pandas as pd

from synthbench.runner.competence import learnability, model_fits
from synthbench.runner.store import ResultStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="results/synthbench.sqlite")
    parser.add_argument("--competence", type=float, default=0.5)
    args = parser.parse_args()
    with ResultStore(args.store, readonly=True) as db:
        fits = model_fits(db.cells(), db.catalogue())
    if fits.empty:
        raise SystemExit(f"{args.store}: no cell records a trained model")
    fits = fits.assign(passed=fits["competence"] >= args.competence)
    keys = ["dataset", "n_samples", "n_decoys"]
    rows = []
    for key, g in fits.groupby(keys, sort=False):
        row = dict(zip(keys, key), ceiling=g["ceiling"].mean(), bayes=g["bayes_accuracy"].mean())
        for model, m in g.groupby("model", sort=False):
            row[model] = f"{m['accuracy'].mean():.2f} / {m['competence'].mean():.2f} ({m['passed'].mean():.0%})"
        rows.append(row)
    table = pd.DataFrame(rows)
    print(f"per model: mean held-out accuracy / mean competence (share of fits with competence >= {args.competence})")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
    for model, g in fits.groupby("model", sort=False):
        print(f"{model}: {g['passed'].sum()} of {len(g)} fits at or above {args.competence}")
    missing = learnability(fits, args.competence)
    for r in missing[missing["learnable"] == False].itertuples():  # noqa: E712
        print(
            f"no model of the store learns {r.dataset}/{r.n_decoys} at n = {r.n_samples} (best {r.best_model}, "
            f"competence {r.best_competence:.2f})"
        )


if __name__ == "__main__":
    main()
