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


def test_a_parameter_check_ranks_only_methods_that_read_a_model_and_no_agreement_where_the_truth_ties_them(tmp_path):
    """MPRT on xor: every gradient method finds the truth (best_k 1.00) and the filters, which read no model, score 1.00
    similarity by construction. Their agreement is the filters' alone: the check ranks the three methods that read the
    MLP, the truth does not separate them, and there is no agreement to report."""
    from synthbench.report import load_results
    from synthbench.report.parts import store_parts, verdict_agreement
    from synthbench.runner.grid import Cell
    from synthbench.runner.store import CellResult, ResultStore

    mlp = {"mlp": {"test_accuracy": 0.95, "competence": 0.9, "train_seconds": 1.0}}
    truth = {"saliency": 1.0, "deeplift": 1.0, "integrated_gradients": 1.0, "mi": 0.5, "anova": 0.0}
    similarity = {"saliency": 0.2, "deeplift": 0.5, "integrated_gradients": 0.3, "mi": 1.0, "anova": 1.0}
    with ResultStore(tmp_path / "s.sqlite") as db:
        for fold in range(3):
            for method, value in truth.items():
                reads = method not in ("mi", "anova")
                model = dict(model="sparse_mlp") if reads else {}
                db.write(
                    CellResult(
                        Cell("xor", 150, 4, 0, 3, fold, method, **model),
                        "ok",
                        scores={"best_k": value},
                        chance={"best_k": 0.05},
                        model=mlp if reads else None,
                    )
                )
                db.write(
                    CellResult(
                        Cell("xor", 150, 4, 0, 3, fold, method, scorer="randomisation", **model),
                        "ok",
                        scores={"randomisation_spearman": similarity[method] + 0.01 * fold},
                        chance={},
                        model=mlp if reads else None,
                    )
                )
    agree = verdict_agreement(store_parts(load_results(tmp_path / "s.sqlite")), ("best_k",))
    row = agree.iloc[0]
    assert set(row["ranked"]) == {"saliency@sparse_mlp", "deeplift@sparse_mlp", "integrated_gradients@sparse_mlp"}
    assert row["methods"] == 3 and row["truth_spread"] == 0 and np.isnan(row["spearman"])
