"""An MLP preset's held-out accuracy beside the booster's, fold by fold, on a data seed of your choice.

Usage: ``python benchmarks/neural_vs_booster.py [--preset screened_mlp] [--datasets ring xor ring_xor ring_xor_sum]
[--decoys 100 1000] [--n-samples 1000] [--seed 202] [--folds 0 1 2]``

For each setting and fold (the benchmark's 6-fold protocol) it trains the preset's MLP and the
booster (``gbm``) exactly as a cell does (:class:`~synthbench.models.SharedModels`) and prints both
held-out accuracies, the learnability ceiling, the columns the MLP reads (a screening preset's
choice, ``*`` where they are the truth) and the seconds it took; then, per setting, the means and
the target of issue 31: the MLP within 0.05 of the booster wherever the booster is above chance
(here: its mean accuracy more than 0.05 above the majority rate).
Use a data seed the runs never use (they use 0) to judge a preset without its own test rows, and
``--n-samples`` to find the sample size at which a setting becomes learnable.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from synthbench.models import SharedModels, TrainSettings
from synthbench.protocol import cell_fold


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="screened_mlp")
    parser.add_argument("--datasets", nargs="+", default=["ring", "xor", "ring_xor", "ring_xor_sum"])
    parser.add_argument("--decoys", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--n-samples", type=int, nargs="+", default=[1000])
    parser.add_argument("--seed", type=int, default=202)
    parser.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    rows = []
    for dataset in args.datasets:
        for n in args.n_samples:
            for decoys in args.decoys:
                for fold in args.folds:
                    data, _ = cell_fold(dataset, n_samples=n, seed=args.seed, n_folds=6, fold=fold, n_decoys=decoys)
                    models = SharedModels(data, TrainSettings(), preset=args.preset)
                    t0 = time.perf_counter()
                    models.get("mlp")
                    seconds = time.perf_counter() - t0
                    models.get("gbm")
                    info, gbm = models.info["mlp"], models.info["gbm"]
                    read = info.get("inputs_read")
                    truth = set(np.flatnonzero(data.relevant).tolist())
                    mark = "" if read is None else ("*" if set(read) == truth else "") + str(read[:6])
                    rows.append(
                        {
                            "setting": f"{dataset}/{decoys}",
                            "n": n,
                            "fold": fold,
                            "mlp": info["test_accuracy"],
                            "gbm": gbm["test_accuracy"],
                            "chance": gbm["chance"],
                            "ceiling": gbm["ceiling_accuracy"],
                        }
                    )
                    print(
                        f"{dataset}/{decoys:<6} n={n:<6} fold {fold}: mlp {info['test_accuracy']:.3f}  gbm "
                        f"{gbm['test_accuracy']:.3f}  ceiling {gbm['ceiling_accuracy']:.3f}  reads {mark}  "
                        f"{seconds:.0f}s",
                        flush=True,
                    )
    table = pd.DataFrame(rows).groupby(["setting", "n"], sort=False)[["mlp", "gbm", "chance", "ceiling"]].mean()
    above = table["gbm"] - table["chance"] > 0.05
    table["target met"] = np.where(
        above, (table["mlp"] >= table["gbm"] - 0.05).map({True: "yes", False: "no"}), "booster at chance"
    )
    print(table.round(3).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
