"""A frozen suite's compute projected from another suite's measured run: a lower bound for one too long to run here.

Usage: ``python benchmarks/project_suite_cost.py --store results/verdicts_quick/store.sqlite --suite verdicts``

Reads the finished cells of ``--store`` (a run of a suite on this machine) and their measured seconds: each
cell's method time (``seconds - train_seconds``), its scorer time, and each fold's model training (once per
fold and model). Then, for every cell of ``--suite``, takes the mean measured time of the most specific
match: (data kind, scorer, judged verdict, method), else (data kind, scorer, judged verdict), else (data
kind, scorer); image cells are scaled by the ratio of sample sizes (every verdict there is linear in the
explained images). Options the target runs larger (more fractions, repeats, radii, examples, perturbations)
are not scaled, so the projection is a lower bound. Prints, side by side, the measured suite (cells, core
seconds, wall time, the wall/core ratio of its run) and the projection in core hours and in wall hours at
the measured ratio.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from synthbench import datasets
from synthbench.runner.store import ResultStore
from synthbench.suites import load_suite


def _kind(dataset: str) -> str:
    return "images" if datasets.spec(dataset).kind == "image" else "tables"


def _verdict(params: object) -> str:
    """The verdict a meta-consistency cell judges ('' for every other scorer)."""
    if isinstance(params, str) and params:
        return str(json.loads(params).get("verdict", ""))
    return ""


def measured(cells: pd.DataFrame) -> pd.DataFrame:
    """The finished ``cells`` with ``kind``, ``verdict`` (:func:`_verdict`) and ``own`` (method plus scorer
    seconds, training left out)."""
    done = cells[cells["status"] == "ok"].copy()
    done["kind"] = done["dataset"].map(_kind)
    done["verdict"] = done["scorer_params"].map(_verdict)
    done["own"] = (done["seconds"] - done["train_seconds"]).clip(lower=0) + done["scorer_seconds"].fillna(0)
    return done


def run_walls(runs: pd.DataFrame) -> float:
    """Wall seconds of the store's runs: each run's own, or from its start to its last stored cell where it ended
    without recording one (killed)."""
    until_last = (pd.to_datetime(runs["last_cell_at"]) - pd.to_datetime(runs["started_at"])).dt.total_seconds()
    return float(runs["wall_seconds"].astype(float).fillna(until_last).fillna(0.0).sum())


def project(done: pd.DataFrame, target: pd.DataFrame) -> np.ndarray:
    """Per target cell (columns ``kind, scorer, verdict, method, n_samples``): its projected seconds."""
    out = np.full(len(target), np.nan)
    for keys in (["kind", "scorer", "verdict", "method"], ["kind", "scorer", "verdict"], ["kind", "scorer"]):
        means = done.groupby(keys)[["own", "n_samples"]].mean().rename(columns={"n_samples": "measured_n"})
        hit = target.join(means, on=keys)
        fill = np.isnan(out) & hit["own"].notna().to_numpy()
        scale = np.where(hit["kind"] == "images", hit["n_samples"] / hit["measured_n"], 1.0)
        out[fill] = (hit["own"] * scale).to_numpy()[fill]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="a finished run of a suite on this machine")
    parser.add_argument("--suite", required=True, help="the suite to project (a shipped name or a .toml path)")
    args = parser.parse_args()
    with ResultStore(args.store, readonly=True) as db:
        cells, runs = db.cells(), db.runs()
    done = measured(cells)
    folds = done.drop_duplicates(["dataset", "dataset_params", "n_samples", "n_decoys", "seed", "fold", "model_preset"])
    train = folds.groupby("kind")["train_seconds"].mean()
    core = float(done["own"].sum() + folds["train_seconds"].sum())
    wall = run_walls(runs)

    suite = load_suite(args.suite)
    cells_to_run = suite.cells()
    target = pd.DataFrame(
        {
            "kind": [_kind(c.dataset) for c in cells_to_run],
            "scorer": [c.scorer for c in cells_to_run],
            "verdict": [str(dict(c.scorer_options).get("verdict", "")) for c in cells_to_run],
            "method": [c.method for c in cells_to_run],
            "n_samples": [c.n_samples for c in cells_to_run],
        }
    )
    seconds = project(done, target)
    fold_keys = {(c.dataset, c.dataset_params, c.n_samples, c.n_decoys, c.seed, c.fold, c.model) for c in cells_to_run}
    trained = sum(float(train.get(_kind(key[0]), 0.0)) for key in fold_keys)
    projected = float(np.nansum(seconds)) + trained
    ratio = wall / core if core else float("nan")
    print(f"measured: {args.store}")
    print(f"{'':28}{'cells':>8}{'core h':>10}{'wall h':>10}")
    print(f"{'measured':28}{len(done):8d}{core / 3600:10.2f}{wall / 3600:10.2f}")
    print(f"{'projected ' + suite.name:28}{len(target):8d}{projected / 3600:10.2f}{projected * ratio / 3600:10.2f}")
    print(
        f"(wall at the measured run's wall/core ratio {ratio:.2f}; {int(np.isnan(seconds).sum())} cells with no "
        "measured match counted as 0 s; larger options not scaled: a lower bound)"
    )


if __name__ == "__main__":
    main()
