"""Which verdict to trust: rank agreement of a verdict with the ground truth, with a bootstrap over folds."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from synthbench.report.trust import rank_agreement


def _paired(noise: float, seed: int = 0, folds: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for fold in range(folds):
        for i, m in enumerate("abcdef"):
            truth = i + rng.normal(0, 0.3)
            rows.append(("xor", 100, fold, m, truth, -truth + rng.normal(0, noise)))  # a "lower is better" verdict
        rows.append(("xor", 100, fold, "random", 10.0, -10.0))  # a control that would top both orderings
    return pd.DataFrame(rows, columns=["setting", "n_decoys", "fold", "method", "truth", "verdict"])


def test_rank_agreement_is_scipys_on_the_fold_means_without_the_controls():
    paired = _paired(noise=3.0)
    got = rank_agreement(paired, "lower", "higher", controls=["random"]).iloc[0]
    means = paired[paired["method"] != "random"].groupby("method")[["truth", "verdict"]].mean()
    assert got["methods"] == 6 and got["folds"] == 5
    assert got["spearman"] == stats.spearmanr(means["truth"], -means["verdict"])[0]
    assert got["kendall"] == stats.kendalltau(means["truth"], -means["verdict"])[0]
    assert got["spearman_lo"] <= got["spearman"] <= got["spearman_hi"]
    with_control = rank_agreement(paired, "lower", "higher").iloc[0]
    assert with_control["methods"] == 7 and with_control["spearman"] != got["spearman"]
    flipped = rank_agreement(paired, "higher", "higher", controls=["random"]).iloc[0]  # direction read, not assumed
    assert flipped["spearman"] == -got["spearman"]


def test_the_interval_comes_from_the_folds_and_is_reproducible():
    noisy = rank_agreement(_paired(noise=3.0), "lower", "higher", controls=["random"]).iloc[0]
    clean = rank_agreement(_paired(noise=0.01), "lower", "higher", controls=["random"]).iloc[0]
    assert clean["spearman_lo"] == clean["spearman_hi"] == clean["spearman"] == 1.0  # every resample agrees
    assert noisy["spearman_hi"] - noisy["spearman_lo"] > 0.2  # folds that disagree widen it
    again = rank_agreement(_paired(noise=3.0), "lower", "higher", controls=["random"]).iloc[0]
    assert again.equals(noisy)
    single = rank_agreement(_paired(noise=3.0, folds=1), "lower", "higher", controls=["random"]).iloc[0]
    assert np.isfinite(single["spearman"]) and np.isnan(single["spearman_lo"])
