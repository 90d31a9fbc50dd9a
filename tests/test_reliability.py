"""A verdict's reliability without the truth: Krippendorff's alpha of the methods' rankings across examples
(Tomsett et al. 2020), per setting and across settings, and whether it predicts validity."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synthbench.report.study.reliability import (
    inter_rater_alpha,
    reliability_against_validity,
    reliability_table,
    setting_reliability,
)


def _values(examples: int, methods: int, noise: float, seed: int = 0) -> np.ndarray:
    """A verdict's value per example and method: the methods' true order plus per-example noise."""
    rng = np.random.default_rng(seed)
    return np.arange(methods, dtype=float)[None, :] + rng.normal(0, noise, size=(examples, methods))


def test_alpha_is_krippendorffs_ordinal_alpha_of_the_per_example_rankings_with_examples_as_raters():
    values = _values(200, 6, noise=2.0)
    values[3, 2] = np.nan  # a method without a value on one example: missing, not a rank
    values[7, :2] = values[7, 2]  # ties share their mean rank
    ranks = stats.rankdata(values, axis=1, nan_policy="omit")
    want = krippendorff.alpha(reliability_data=ranks, level_of_measurement="ordinal")
    assert inter_rater_alpha(values) == pytest.approx(want)
    assert want != pytest.approx(krippendorff.alpha(reliability_data=ranks.T, level_of_measurement="ordinal"))
    # only each example's order counts: its scale, a monotone change of one example's values, and (for complete
    # rankings without ties, where every rank is as frequent) its direction
    full = _values(200, 6, noise=2.0)
    assert inter_rater_alpha(-full) == pytest.approx(inter_rater_alpha(full))
    bent = values.copy()
    bent[0] = np.exp(bent[0])
    assert inter_rater_alpha(bent) == pytest.approx(want)


def test_alpha_is_one_for_examples_that_agree_and_near_zero_for_noise_or_two_opposed_camps():
    assert inter_rater_alpha(_values(100, 5, noise=0.0)) == pytest.approx(1.0)
    assert abs(inter_rater_alpha(np.random.default_rng(1).normal(size=(2000, 5)))) < 0.02
    opposed = _values(100, 5, noise=0.0)
    opposed[::2] = -opposed[::2]  # half the examples order the methods one way, half the other: no common order
    assert abs(inter_rater_alpha(opposed)) < 0.02
    assert np.isnan(inter_rater_alpha(np.ones((50, 4))))  # no example separates any two methods
    assert np.isnan(inter_rater_alpha(_values(50, 1, noise=1.0)))  # one method: nothing to rank


def _rows(noise_by_setting: dict[str, float], folds: int = 4, examples: int = 60) -> pd.DataFrame:
    rows = []
    for s, (setting, noise) in enumerate(noise_by_setting.items()):
        for fold in range(folds):
            values = _values(examples, 5, noise, seed=100 * s + fold)
            rows += [(setting, f"0/{fold}", f"m{m}", values[:, m]) for m in range(5)]
    return pd.DataFrame(rows, columns=["setting", "fold", "method", "values"])


def test_a_settings_alpha_is_the_mean_over_its_folds_with_a_fold_bootstrap():
    rows = _rows({"clean": 0.3, "noisy": 3.0})
    got = setting_reliability(rows, ["setting"]).set_index("setting")
    for setting in ("clean", "noisy"):
        folds = rows[rows["setting"] == setting].groupby("fold")["values"]
        want = np.mean([inter_rater_alpha(np.stack(list(v), axis=1)) for _, v in folds])
        assert got.at[setting, "alpha"] == pytest.approx(want) and got.at[setting, "folds"] == 4
        assert got.at[setting, "alpha_lo"] <= want <= got.at[setting, "alpha_hi"]
    assert got.at["clean", "alpha"] > 0.8 > 0.2 > got.at["noisy", "alpha"]
    assert got.at["clean", "methods"] == 5 and got.at["clean", "examples"] == 60
    uneven = rows.copy()
    uneven.loc[0, "values"] = uneven.loc[0, "values"][:10]  # fold 0 of "clean": methods on different examples
    assert setting_reliability(uneven, ["setting"]).set_index("setting").at["clean", "folds"] == 3
    summary = reliability_table(setting_reliability(rows, ["setting"]).assign(verdict="v"), ["verdict"]).iloc[0]
    assert summary["alpha_settings"] == 2 and summary["alpha"] == pytest.approx(got["alpha"].mean())
    assert summary["alpha_lo"] < summary["alpha"] < summary["alpha_hi"]


def test_whether_reliability_predicts_validity_is_spearman_across_verdicts_with_a_paired_bootstrap():
    summary = pd.DataFrame({"alpha": [0.1, 0.2, 0.4, 0.5, 0.7, 0.9], "spearman": [-0.2, 0.1, 0.0, 0.5, 0.6, 0.8]})
    got = reliability_against_validity(summary)
    assert got["rho"] == pytest.approx(stats.spearmanr(summary["alpha"], summary["spearman"])[0]) and got["n"] == 6
    assert got["lo"] <= got["rho"] <= got["hi"] <= 1.0
    assert got == reliability_against_validity(summary)  # seeded
    two = reliability_against_validity(summary.head(2).assign(alpha=[0.1, np.nan]))
    assert np.isnan(two["rho"]) and two["n"] == 1
