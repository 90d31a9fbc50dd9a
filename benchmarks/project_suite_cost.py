"""A frozen suite's compute projected from another suite's measured run, for one too long to run here.

Usage: ``python benchmarks/project_suite_cost.py --store results/verdicts_quick/store.sqlite --suite verdicts``

Reads the finished cells of ``--store`` (runs of a suite on this machine, one store or several) and their measured
seconds: each cell's method time (``seconds - train_seconds``), its scorer time, and each fold's model training
(once per fold and model). A cell's cost is modelled as linear in its work units (:func:`work_units`): the examples
it explains (fragility: at most ``max_examples`` of them) times what its options repeat (radii, fractions times
repeats, noise samples; meta-consistency: the wrapped verdict's units on the fold and on ``2 x perturbations``
perturbed copies). For every cell of ``--suite`` it takes the measured seconds per unit of the most specific match,
(data kind, scorer, judged verdict, method), else (data kind, scorer, judged verdict), else for meta-consistency the
judged verdict's own cells (kind, verdict, method), else (data kind, scorer), times the cell's units; on the most
specific match, measured at several feature counts, the seconds per unit are interpolated in log(features) between
the nearest two (the 2023 suites' m = 2 ... 2048; constant beyond the measured ends). A fold's training is scaled by
its number of samples. Prints, side by side, the measured suite (cells, core seconds, wall time, the wall/core ratio
of its run) and the projection in core hours and in wall hours at the measured ratio, the projection per (data kind,
scorer) and per method family (the module that registers the method: ``neural`` the attribution methods on a shared
network, ``embedded`` and ``selectors_2023`` the selectors that train their own, ...), each beside the measured
cells' own seconds (a store of the suite's whole run: its measured time per family), and the cells no measured
cell matches (counted as 0 s: then the projection is a lower bound).

Usage for the 2023 suite: run a few of its settings, every fold (so the methods that compute a setting's folds at
once are measured as they run), ``python benchmarks/run_suite_settings.py ring:2 ring:64 ring:2048 --store S``, then
``python benchmarks/project_suite_cost.py --store S --suite passemiers2023`` (the eight costliest methods are
printed too).
"""

from __future__ import annotations

import argparse
import functools
import json

import numpy as np
import pandas as pd

from synthbench import datasets
from synthbench.methods import get_method
from synthbench.runner.store import ResultStore
from synthbench.suites import load_suite


def _kind(dataset: str) -> str:
    return "images" if datasets.spec(dataset).kind == "image" else "tables"


@functools.cache
def features(dataset: str, n_decoys: int | None, params: tuple) -> int:
    """The number of input features of a setting (a small draw of its dataset, once)."""
    return int(datasets.make(dataset, n_samples=60, n_decoys=n_decoys, seed=0, **dict(params)).n_features)


def _verdict(params: object) -> str:
    """The verdict a meta-consistency cell judges ('' for every other scorer)."""
    if isinstance(params, str) and params:
        return str(json.loads(params).get("verdict", ""))
    return ""


def work_units(scorer: str, params: dict, n_explained: int) -> float:
    """Units of work of a cell of ``scorer`` with its recorded ``params`` (``params_for``) on ``n_explained``
    examples: the examples it explains times what its options repeat."""
    if scorer == "meta_consistency":  # the verdict on the fold and on every perturbed copy, the method run again
        inner = work_units(str(params["verdict"]), dict(params.get("verdict_params", {})), n_explained)
        return (1 + 2 * int(params["perturbations"])) * inner
    units = float(min(int(params.get("max_examples", n_explained)), n_explained))
    units *= len(params.get("eps", [0]))  # fragility's radii
    units *= len(params.get("fractions", [0])) * int(params.get("repeats", 1))  # ROAD, ROAR, KAR
    return units * max(1, int(params.get("noise_samples", 1)))  # sMPRT's noisy copies


def measured(cells: pd.DataFrame) -> pd.DataFrame:
    """The finished ``cells`` with ``kind``, ``verdict`` (:func:`_verdict`), ``own`` (method plus scorer seconds,
    training left out) and ``units`` (:func:`work_units`)."""
    done = cells[cells["status"] == "ok"].copy()
    done["kind"] = done["dataset"].map(_kind)
    done["verdict"] = done["scorer_params"].map(_verdict)
    # scorer seconds below zero: stores written before the siblings' share was kept apart (a shared model a scorer
    # read from the cache subtracted its whole training)
    done["own"] = (done["seconds"] - done["train_seconds"]).clip(lower=0) + done["scorer_seconds"].fillna(0).clip(0)
    done["units"] = [
        work_units(scorer, json.loads(params) if isinstance(params, str) and params else {}, n // folds)
        for scorer, params, n, folds in zip(done["scorer"], done["scorer_params"], done["n_samples"], done["n_folds"])
    ]
    done["per_unit"] = done["own"] / done["units"]
    return done


def run_walls(runs: pd.DataFrame) -> float:
    """Wall seconds of the store's runs: each run's own, or from its start to its last stored cell where it ended
    without recording one (killed)."""
    until_last = (pd.to_datetime(runs["last_cell_at"]) - pd.to_datetime(runs["started_at"])).dt.total_seconds()
    return float(runs["wall_seconds"].astype(float).fillna(until_last).fillna(0.0).sum())


def project(done: pd.DataFrame, target: pd.DataFrame) -> np.ndarray:
    """Per target cell (columns ``kind, scorer, verdict, method, units``): its projected seconds (NaN: no match)."""
    # the most specific match, by feature count; then coarser ones, their mean time per unit
    per_unit = _by_features(done, target, ["kind", "scorer", "verdict", "method"])
    # meta-consistency without a measured cell of its verdict: the verdict's own cells' time per unit
    as_verdict = target.assign(scorer=target["verdict"].where(target["scorer"] == "meta_consistency"), verdict="")
    for frame, keys in (
        (target, ["kind", "scorer", "verdict"]),
        (as_verdict, ["kind", "scorer", "verdict", "method"]),
        (target, ["kind", "scorer"]),
    ):
        hit = frame.join(done.groupby(keys)["per_unit"].mean(), on=keys)["per_unit"].to_numpy()
        per_unit = np.where(np.isnan(per_unit), hit, per_unit)
    return per_unit * target["units"].to_numpy()


def _by_features(done: pd.DataFrame, target: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Per target cell, the measured seconds per unit of its ``keys`` group, interpolated in log(n_features) between
    the group's measured feature counts (their mean at each count; constant beyond the ends); NaN without a match."""
    means = done.groupby([*keys, "n_features"])["per_unit"].mean()
    curves = {
        group: (np.log(rows.index.get_level_values("n_features").to_numpy(dtype=float)), rows.to_numpy(dtype=float))
        for group, rows in means.groupby(level=list(range(len(keys))))
    }
    out = np.full(len(target), np.nan)
    for i, (group, m) in enumerate(zip(target[keys].itertuples(index=False, name=None), target["n_features"])):
        if group in curves:
            out[i] = np.interp(np.log(m), *curves[group])
    return out


def _beside_measured(target: pd.DataFrame, done: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per ``key`` (family or method), the projected cells and core hours beside the measured ones (the cells of the
    stores, of whatever suite: a store of the whole suite's run gives its measured time), costliest first."""
    projected = target.groupby(key)["seconds"].agg(cells="size", core_h=lambda x: np.nansum(x) / 3600)
    measured = done.groupby(key)["own"].agg(measured_cells="size", measured_core_h=lambda x: x.sum() / 3600)
    return projected.join(measured, how="left").sort_values("core_h", ascending=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--store",
        required=True,
        nargs="+",
        help="runs of a suite on this machine; a cell in several stores is taken from the last (a newer measurement)",
    )
    parser.add_argument("--suite", required=True, help="the suite to project (a shipped name or a .toml path)")
    args = parser.parse_args()
    parts = []
    for path in args.store:
        with ResultStore(path, readonly=True) as db:
            parts.append((db.cells(), db.runs()))
    cells = pd.concat([c for c, _ in parts]).drop_duplicates("cell_id", keep="last")
    runs = pd.concat([r for _, r in parts])
    done = measured(cells)
    # a fold's training: the largest any of its cells records (cells of methods that train nothing record 0)
    fold_keys = ["dataset", "dataset_params", "n_samples", "n_decoys", "seed", "fold", "model_preset", "kind"]
    folds = done.groupby(fold_keys, dropna=False)["train_seconds"].max().reset_index()
    per_sample = (folds["train_seconds"] / folds["n_samples"]).groupby(folds["kind"]).mean()
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
            "family": [get_method(c.method).fn.__module__.rsplit(".", 1)[-1] for c in cells_to_run],
            "n_features": [features(c.dataset, c.n_decoys, c.dataset_params) for c in cells_to_run],
            "units": [
                work_units(
                    c.scorer, c.scorer_object.params_for(datasets.spec(c.dataset).kind), c.n_samples // c.n_folds
                )
                for c in cells_to_run
            ],
        }
    )
    target["seconds"] = project(done, target)
    fold_keys = {(c.dataset, c.dataset_params, c.n_samples, c.n_decoys, c.seed, c.fold, c.model) for c in cells_to_run}
    trained = sum(float(per_sample.get(_kind(key[0]), 0.0)) * key[2] for key in fold_keys)
    projected = float(np.nansum(target["seconds"])) + trained
    ratio = wall / core if core else float("nan")
    print(f"measured: {', '.join(args.store)}")
    print(f"{'':28}{'cells':>8}{'core h':>10}{'wall h':>10}")
    print(f"{'measured':28}{len(done):8d}{core / 3600:10.2f}{wall / 3600:10.2f}")
    print(f"{'projected ' + suite.name:28}{len(target):8d}{projected / 3600:10.2f}{projected * ratio / 3600:10.2f}")
    print(f"(wall at the measured run's wall/core ratio {ratio:.2f}; the folds' training {trained / 3600:.2f} core h)")
    by = target.groupby(["kind", "scorer"])["seconds"].agg(cells="size", core_h=lambda x: np.nansum(x) / 3600)
    print(by.sort_values("core_h", ascending=False).round(2).to_string())
    done = done.assign(family=[get_method(m).fn.__module__.rsplit(".", 1)[-1] for m in done["method"]])
    for key, top in (("family", None), ("method", 8)):
        table = _beside_measured(target, done, key)
        print((table if top is None else table.head(top)).round(2).to_string())
    missing = target[target["seconds"].isna()].groupby(["kind", "scorer"]).size()
    if len(missing):
        print(
            f"no measured cell matches {int(missing.sum())} cells (counted as 0 s, so the projection is a lower bound):"
        )
        print(missing.to_string())


if __name__ == "__main__":
    main()
