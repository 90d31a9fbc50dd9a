"""The seeded search behind the competent MLP presets (``synthbench.models.presets``).

Usage: ``python benchmarks/search_mlp_presets.py [--trials 12] [--seed 0] [--decoys 100] [--folds 0 1]
[--datasets ring xor ring_xor ring_xor_sum] [--out results/preset_search.csv]``

Each trial is one MLP configuration: the issue's probe (width 128, no input noise, Adam lr 1e-3,
L1 1e-3 on the first layer) first, then ``--trials`` configurations drawn by
``numpy.random.default_rng(seed)`` from :data:`SPACE` (width, depth, input noise, weight decay,
L1 on the first layer, learning rate, learning-rate schedule); every trial stops on validation
AUROC with patience 30 and restores the best epoch. Each trial is trained on the training part of
the given folds of each dataset (n = 1000, the benchmark's 6-fold protocol and seeds).

The selection criterion is the mean *validation* AUROC at the restored epoch (the inner 20 % of
the training part), never the held-out fold: the held-out AUROC is printed beside it to show what
a preset reaches, not to choose one. Two winners are printed: the best trial overall, and the
best trial without an L1 penalty (an L1-sparse first layer is itself a feature selector).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from synthbench import datasets
from synthbench.models.mlp import MLPConfig, train_mlp
from synthbench.protocol import FoldData, make_folds

#: The search space: each trial draws one value per key, uniformly.
SPACE = {
    "width": [32, 64, 128, 256],
    "depth": [1, 2, 3],
    "noise_sigma": [0.0, 0.05, 0.1],
    "weight_decay": [0.0, 1e-5, 1e-4, 1e-3],
    "l1_first_layer": [0.0, 0.0, 1e-4, 3e-4, 1e-3],  # 0 twice: dense-input trials are as common as sparse ones
    "lr": [3e-4, 1e-3, 3e-3],
    "lr_schedule": ["constant", "plateau2023"],
}
#: Settings every trial shares: stop on validation AUROC, patience from the best epoch, true restore.
COMMON = dict(monitor="auroc", stopping="best", patience=30, restore="best", max_epochs=400)
PROBE = dict(
    width=128, depth=2, noise_sigma=0.0, weight_decay=1e-5, l1_first_layer=1e-3, lr=1e-3, lr_schedule="constant"
)


def trials(n: int, seed: int) -> list[MLPConfig]:
    rng = np.random.default_rng(seed)
    drawn = [{k: v[int(rng.integers(len(v)))] for k, v in SPACE.items()} for _ in range(n)]
    return [MLPConfig.from_dict({**COMMON, **t}) for t in [PROBE, *drawn]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--decoys", type=int, default=100)
    parser.add_argument("--folds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--datasets", nargs="+", default=["ring", "xor", "ring_xor", "ring_xor_sum"])
    parser.add_argument("--out", type=Path, default=Path("results") / "preset_search.csv")
    args = parser.parse_args()

    folds = {}
    for name in args.datasets:
        ds = datasets.make(name, n_samples=1000, n_decoys=args.decoys, seed=0)
        split = make_folds(ds.n_samples, ds.n_features, n_folds=6, seed=0)
        folds[name] = [FoldData.from_dataset(ds, split[f]) for f in args.folds]
    rows = []
    configs = trials(args.trials, args.seed)
    for t, config in enumerate(configs):
        for name, fold_list in folds.items():
            for data in fold_list:
                t0 = time.perf_counter()
                model = train_mlp(data.X_train, data.y_train, config=config, seed=data.random_state("model", "mlp"))
                test = roc_auc_score(data.y_test, model.predict_proba(data.X_test)[:, 1])
                rows.append(
                    {
                        "trial": t,
                        **{k: getattr(config, k) for k in SPACE},
                        "dataset": name,
                        "fold": data.fold,
                        "val_auroc": model.history["val_auroc"][model.best_epoch],
                        "test_auroc": test,
                        "epochs": model.epochs_run,
                        "seconds": time.perf_counter() - t0,
                    }
                )
        last = pd.DataFrame([r for r in rows if r["trial"] == t])
        print(
            f"trial {t:2d}: "
            + ", ".join(f"{k}={getattr(config, k)}" for k in SPACE)
            + f" -> val {last['val_auroc'].mean():.3f} test {last['test_auroc'].mean():.3f}"
            + f" ({last['seconds'].sum():.0f}s)",
            flush=True,
        )
    frame = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    per = frame.pivot_table(index="trial", columns="dataset", values=["val_auroc", "test_auroc"], aggfunc="mean")
    summary = frame.groupby("trial").agg(
        val=("val_auroc", "mean"), test=("test_auroc", "mean"), l1=("l1_first_layer", "first"), s=("seconds", "mean")
    )
    print("\nheld-out AUROC per trial and dataset (mean over folds):")
    print(per["test_auroc"].round(3).to_string())
    print("\nselection (mean validation AUROC over datasets and folds):")
    print(summary.sort_values("val", ascending=False).round({"val": 3, "test": 3, "s": 2}).to_string())
    for label, pool in (("overall", summary), ("without L1", summary[summary["l1"] == 0])):
        if not pool.empty:
            best = int(pool["val"].idxmax())
            print(f"best {label}: trial {best}: {configs[best]}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
