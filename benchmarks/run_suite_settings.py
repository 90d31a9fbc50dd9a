"""Run some settings of a frozen suite (every fold, or chosen folds) into a store: the sample that
``benchmarks/project_suite_cost.py`` projects the whole suite from.

Runs in this process, one cell after another (the measured seconds are core seconds), with a model cache beside
the store, so a method that computes a setting's folds at once (the shared network, ``lassonet_2023``) is measured
as a run computes it. Resumable: cells already in the store are skipped. Usage::

    python benchmarks/run_suite_settings.py ring:2 ring:64 --suite passemiers2023 --store S [--folds 0] [--seeds 0]

A setting is ``dataset:m`` (m, the total number of features; ``dag:2000`` for the causal set's blocks).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from project_suite_cost import features

from synthbench.models import TrainSettings
from synthbench.runner.execute import execute
from synthbench.runner.store import ResultStore
from synthbench.suites import load_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("settings", nargs="+", help="dataset:m, e.g. ring:64")
    parser.add_argument("--suite", default="passemiers2023")
    parser.add_argument("--store", required=True)
    parser.add_argument("--folds", type=int, nargs="+", help="only these folds (default: every fold)")
    parser.add_argument("--seeds", type=int, nargs="+", help="only these seeds (default: every seed)")
    parser.add_argument("--methods", nargs="+", help="only these methods")
    args = parser.parse_args()
    wanted = {(name, int(m)) for name, m in (s.split(":") for s in args.settings)}

    cells = [
        c
        for c in load_suite(args.suite).cells()
        if (c.dataset, features(c.dataset, c.n_decoys, c.dataset_params)) in wanted
        and (args.folds is None or c.fold in args.folds)
        and (args.seeds is None or c.seed in args.seeds)
        and (args.methods is None or c.method in args.methods)
    ]
    if not cells:
        raise SystemExit(f"no cell of {args.suite} matches {sorted(wanted)}")
    store = Path(args.store)
    store.parent.mkdir(parents=True, exist_ok=True)
    settings = TrainSettings(device="cpu", cache_dir=str(store.parent / "cache"))
    t0 = time.perf_counter()
    with ResultStore(store) as st:
        summary = execute(cells, st, settings=settings)
    print(f"{len(cells)} cells ({summary.ok} ok, {summary.skipped} already stored) in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
