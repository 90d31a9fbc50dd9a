"""Which verdict to trust: rank agreement of a verdict with the ground truth, with a bootstrap over folds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synthbench.report.study.validity import rank_agreement


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
    from synthbench.report.parts import store_parts
    from synthbench.report.study.verdicts import verdict_agreement
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
    agree = verdict_agreement(store_parts(load_results(tmp_path / "s.sqlite")))
    row = agree.iloc[0]
    assert set(row["ranked"]) == {"saliency@sparse_mlp", "deeplift@sparse_mlp", "integrated_gradients@sparse_mlp"}
    assert row["methods"] == 3 and row["truth_spread"] == 0 and np.isnan(row["spearman"])


def test_spearman_rows_is_scipys_row_by_row_with_ties_and_nan_where_a_row_is_constant():
    from synthbench.report.study.validity import spearman_rows

    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, size=(50, 6)).astype(float)  # many ties
    b = rng.normal(size=(50, 6))
    got = spearman_rows(a, b)
    for i in range(50):
        want = stats.spearmanr(a[i], b[i])[0] if np.ptp(a[i]) else np.nan
        assert np.isnan(want) and np.isnan(got[i]) or got[i] == pytest.approx(want, abs=1e-12)
    assert np.isnan(spearman_rows(np.ones((1, 5)), b[:1, :5])).all()
    assert np.isnan(spearman_rows(a[:, :2], b[:, :2])).all()  # fewer than 3 methods


def _agree(rhos: list[float], folds: int = 1, spread: float = 0.0, seed: int = 0, alike: bool = False) -> pd.DataFrame:
    """rank_agreement tables of one verdict over settings whose fold-mean rho is near ``rhos`` (``alike``: the same
    draws in every setting, so the settings differ only by name)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s, target in enumerate(rhos):
        rng = np.random.default_rng(seed) if alike else rng
        truth = np.arange(6.0)
        # a verdict that keeps the truth's order, reversed in part so rho is about target
        verdict = truth * target + rng.normal(0, 0.5 + spread, 6)
        for fold in range(folds):
            for i, m in enumerate("abcdef"):
                rows.append((f"s{s}", 100, fold, m, truth[i], verdict[i] + rng.normal(0, spread)))
    paired = pd.DataFrame(rows, columns=["setting", "n_decoys", "fold", "method", "truth", "verdict"])
    return rank_agreement(paired, "higher", "higher").assign(verdict="v", kind="tabular", model="m")


def test_with_one_fold_per_setting_the_hierarchical_interval_is_a_bootstrap_of_the_settings_mean():
    from synthbench.report.study.validity import validity_table

    agree = _agree([0.9, 0.8, 0.2, 0.6, 1.0, -0.1, 0.7, 0.5, 0.4, 0.9])
    gated = validity_table(agree, ["verdict", "kind", "model"]).iloc[0]
    assert gated["settings"] == 0 and gated["unreliable"] == 10  # one fold: the truth's reliability is unknown
    assert "reaches a split-half reliability of 0.8 in no setting" in gated["reason"]
    got = validity_table(agree, ["verdict", "kind", "model"], min_truth_reliability=None, n_resamples=4000).iloc[0]
    assert got["settings"] == got["of"] == 10 and got["spearman"] == pytest.approx(agree["spearman"].mean())
    ref = stats.bootstrap(
        (agree["spearman"].to_numpy(),), np.mean, method="percentile", n_resamples=4000, random_state=1
    ).confidence_interval
    assert got["spearman_lo"] == pytest.approx(ref.low, abs=0.03) and got["spearman_hi"] == pytest.approx(
        ref.high, abs=0.03
    )
    assert got["half_width"] == pytest.approx((got["spearman_hi"] - got["spearman_lo"]) / 2)
    again = validity_table(agree, ["verdict", "kind", "model"], min_truth_reliability=None, n_resamples=4000).iloc[0]
    assert again.equals(got)  # seeded


def test_the_hierarchical_interval_widens_with_the_folds_disagreement_and_narrows_with_more_settings():
    from synthbench.report.study.validity import validity_table

    by = ["verdict", "kind", "model"]
    steady = validity_table(_agree([0.6] * 6, folds=4, spread=0.0, alike=True), by).iloc[0]
    shaky = validity_table(_agree([0.6] * 6, folds=4, spread=3.0, alike=True), by).iloc[0]
    assert steady["half_width"] == 0 < shaky["half_width"]  # alike settings: all the width is the folds'
    few = validity_table(_agree([0.6] * 6, folds=4, spread=3.0), by).iloc[0]
    many = validity_table(_agree([0.6] * 24, folds=4, spread=3.0), by).iloc[0]
    assert many["half_width"] < few["half_width"]


def test_a_group_without_agreement_says_why():
    from synthbench.report.study.validity import validity_table

    rows = [("s", 1, f, m, 1.0, v) for f in range(3) for m, v in (("a", 0.1), ("b", 0.5), ("c", 0.9))]
    paired = pd.DataFrame(rows, columns=["setting", "n_decoys", "fold", "method", "truth", "verdict"])
    tied = rank_agreement(paired, "higher", "higher").assign(verdict="v")
    got = validity_table(tied, ["verdict"]).iloc[0]
    assert got["settings"] == 0 and np.isnan(got["spearman"]) and "the truth does not separate" in got["reason"]
    undefined = rank_agreement(paired.assign(truth=np.nan), "higher", "higher").iloc[0]  # no truth value at all
    assert undefined["methods"] == 0 and np.isnan(undefined["spearman"])
    two = rank_agreement(paired[paired["method"] != "c"], "higher", "higher").assign(verdict="v")
    assert (
        "fewer than 3 non-control methods judged (at most 2): named, not ranked"
        in validity_table(two, ["verdict"]).iloc[0]["reason"]
    )


def test_verdicts_are_compared_by_a_paired_wilcoxon_test_over_shared_settings_holm_corrected():
    from synthbench.report.study.validity import holm, verdict_tests

    good = _agree([0.9, 0.8, 0.95, 0.85, 0.9, 0.7, 0.8, 0.9], seed=1).assign(verdict="good")
    bad = _agree([0.1, -0.2, 0.3, 0.0, 0.2, -0.1, 0.1, 0.0], seed=2).assign(verdict="bad")
    same = good.assign(verdict="same", spearman=good["spearman"] + np.linspace(-0.01, 0.01, len(good)))
    tests = verdict_tests(pd.concat([bad, good, same]), ["kind", "model"], ["setting", "n_decoys"])
    pair = tests[(tests["verdict"] == "good") & (tests["other"] == "bad")].iloc[0]
    assert pair["settings"] == 8
    assert pair["difference"] == pytest.approx((good["spearman"] - bad["spearman"]).mean())
    assert pair["p"] == stats.wilcoxon(good["spearman"].to_numpy() - bad["spearman"].to_numpy()).pvalue
    raw = {f"{a}|{b}": p for a, b, p in zip(tests["verdict"], tests["other"], tests["p"])}
    assert dict(zip(raw, tests["p_holm"])) == pytest.approx(holm(raw))
    assert (
        pair["p_holm"]
        < 0.05
        < tests[(tests["verdict"].isin(["good", "same"])) & (tests["other"].isin(["good", "same"]))]["p_holm"].iloc[0]
    )


def test_each_model_is_ordered_alone_against_the_truth_metric_that_separates_and_failed_fits_are_kept_apart(tmp_path):
    """xor/4: every method that reads the MLP finds both true features (best_k 1.00), so the MLP's setting is judged on
    average precision, which separates them; the booster's methods are ordered alone, on AUROC where their average
    precision ties; mrmr reads no model and is ordered with the MLP it was judged on; the fold whose MLP did not learn
    is kept apart; RandomLogit skipped every cell and is named with the reason."""
    from synthbench.report import load_results
    from synthbench.report.parts import store_parts
    from synthbench.report.study.verdicts import verdict_validity
    from synthbench.runner.grid import Cell
    from synthbench.runner.store import CellResult, ResultStore

    def fit(kind: str, competence: float) -> dict:
        return {kind: {"test_accuracy": 0.9, "competence": competence, "train_seconds": 1.0}}

    mlp_ap = {"saliency": 0.95, "deeplift": 0.85, "integrated_gradients": 0.75, "mrmr": 0.6}
    rng, examples, consistent = np.random.default_rng(0), {}, {}
    gbm_auroc = {"gbm_gain": 0.9, "gbm_treeshap": 0.7, "gbm_feature_permutation": 0.5}
    with ResultStore(tmp_path / "s.sqlite") as db:
        for fold in range(4):
            mlp_fit = fit("mlp", 0.1 if fold == 3 else 0.9)  # fold 3's network did not learn
            for method, ap in {**mlp_ap, **gbm_auroc, "random": 0.05}.items():
                reads = "gbm" if method.startswith("gbm") else None if method in ("mrmr", "random") else "mlp"
                preset = {"model": "sparse_mlp"} if reads == "mlp" else {}
                model = mlp_fit if reads == "mlp" else fit("gbm", 0.9) if reads else None
                best_k = 1.0 if reads == "mlp" else ap
                # the booster's methods share one average precision: its setting is judged on AUROC
                precision = 0.8 if reads == "gbm" else ap + 0.01 * fold
                truth = {"best_k": best_k, "average_precision": precision, "auroc": ap}
                db.write(CellResult(Cell("xor", 150, 4, 0, 4, fold, method, **preset), "ok", scores=truth, model=model))
                # ROAD follows the truth on the MLP and reverses it on the booster
                judged = {"model": "sparse_mlp"} if reads != "gbm" else {}
                road = ap if reads != "gbm" else -ap
                on = mlp_fit if reads != "gbm" else model
                per_example = road + rng.normal(0, 0.2, 30)  # the same 30 examples per fold for every method
                morf = rng.uniform(size=30)
                lerf = morf + per_example  # a LeRF that grows with the MoRF (lower better): inconsistent orders
                db.write(
                    CellResult(
                        Cell("xor", 150, 4, 0, 4, fold, method, scorer="road", **judged),
                        "ok",
                        scores={"road_gap": road + 0.001 * fold},
                        model=on if method not in ("mrmr", "random") else None,
                        per_example={"road_gap": per_example, "road_morf": morf, "road_lerf": lerf},
                    )
                )
                if reads != "gbm" and fold < 3 and method != "random":
                    examples.setdefault(fold, []).append(per_example.astype(np.float32))
                    f32 = [v.astype(np.float32).astype(np.float64) for v in (morf, lerf)]
                    consistent.setdefault(fold, []).append(stats.spearmanr(-f32[0], f32[1])[0])
                if reads == "mlp":
                    db.write(
                        CellResult(
                            Cell("xor", 150, 4, 0, 4, fold, method, scorer="random_logit", **preset),
                            "skipped",
                            message="one logit: no other class to explain",
                        )
                    )
    validity = verdict_validity(store_parts(load_results(tmp_path / "s.sqlite", all_models=True)))
    settings = validity.settings.set_index(["model", "apart"])
    mlp = settings.loc[("sparse_mlp", False)]
    assert mlp["truth_metric"] == "average_precision" and mlp["folds"] == 3
    assert set(mlp["ranked"]) == {f"{m}@sparse_mlp" for m in ("saliency", "deeplift", "integrated_gradients", "mrmr")}
    assert mlp["spearman"] == pytest.approx(1.0)
    gbm = settings.loc[("gbm", False)]
    assert gbm["truth_metric"] == "auroc" and gbm["truth_spread"] == pytest.approx(0.4)
    assert set(gbm["ranked"]) == set(gbm_auroc) and gbm["spearman"] == pytest.approx(-1.0)
    assert settings.loc[("sparse_mlp", True)]["folds"] == 1  # the failed fit, apart
    summary = validity.summary.set_index(["verdict", "model", "apart"])
    assert summary.loc[("road `road_gap`", "gbm", False), "spearman"] == pytest.approx(-1.0)
    # reliability: the methods' rankings across the examples of each fold where the MLP learned, controls left out
    from synthbench.report.study.reliability import inter_rater_alpha

    reliability = validity.reliability.set_index(["model", "apart"]).loc[("sparse_mlp", False)]
    assert reliability["methods"] == 4 and reliability["folds"] == 3 and reliability["examples"] == 30
    want = np.mean([inter_rater_alpha(np.stack(v, axis=1)) for v in examples.values()])
    assert reliability["alpha"] == pytest.approx(want)
    assert summary.loc[("road `road_gap`", "sparse_mlp", False), "alpha"] == pytest.approx(want)
    # internal consistency: MoRF against its declared variant LeRF per example, each oriented higher-better
    within = validity.consistency.set_index(["model", "apart"]).loc[("sparse_mlp", False)]
    assert within["pair"] == "road_morf ~ road_lerf"
    assert within["consistency"] == pytest.approx(np.mean([np.mean(v) for v in consistent.values()]))
    assert within["consistency"] < 0  # the two orders disagree here, as built
    skipped = validity.summary[validity.summary["verdict"].str.startswith("random_logit")].iloc[0]
    assert (
        skipped["settings"] == 0 and "no method's value to rank: 12 of 12 cells skipped (one logit" in skipped["reason"]
    )


def test_a_verdict_without_a_ground_truth_beside_it_is_named_with_the_reason_and_nothing_fails(tmp_path):
    from synthbench.report import build_report, load_results
    from synthbench.report.parts import store_parts
    from synthbench.report.study.verdicts import verdict_validity
    from synthbench.runner.grid import Cell
    from synthbench.runner.store import CellResult, ResultStore

    mlp = {"mlp": {"test_accuracy": 0.95, "competence": 0.9, "train_seconds": 1.0}}
    with ResultStore(tmp_path / "s.sqlite") as db:
        for method in ("saliency", "deeplift", "integrated_gradients"):
            cell = Cell("xor", 150, 4, 0, 3, 0, method, scorer="road", model="sparse_mlp")
            db.write(CellResult(cell, "ok", scores={"road_gap": 0.5}, model=mlp))
    results = load_results(tmp_path / "s.sqlite")
    validity = verdict_validity(store_parts(results))
    row = validity.summary.iloc[0]
    assert row["verdict"] == "road `road_gap`" and row["reason"] == "no ground truth beside it on the same cells"
    assert "no ground truth beside it on the same cells" in build_report(results).markdown


def test_the_precision_sentence_counts_the_intervals_within_the_target_and_names_the_wider():
    from synthbench.report.study.section import precision_lines

    summary = pd.DataFrame(
        {"verdict": ["road", "roar", "mprt"], "model": ["mlp", "mlp", ""], "half_width": [0.1, 0.4, np.nan]}
    )
    line = precision_lines(summary)[0]
    assert "1 of 2 verdicts' mean agreement is known to ±0.15 or better; wider: roar (mlp, ±0.40)." in line
    assert precision_lines(summary.head(1))[0].endswith("±0.15 or better.")
    assert precision_lines(summary.tail(1)) == []


def test_the_reliability_figure_draws_a_mean_outside_its_bootstrap_interval():
    """A percentile bootstrap interval over settings need not hold the mean (a skewed resample distribution): the
    figure draws the side beyond it as none instead of failing."""
    from synthbench.report.figures import reliability_validity

    summary = pd.DataFrame(
        {
            "verdict": ["kar", "road", "mprt"],
            "kind": ["tabular"] * 3,
            "model": ["gbm"] * 3,
            "spearman": [0.8, 0.2, -0.3],
            "spearman_lo": [-0.77, 0.1, -0.5],
            "spearman_hi": [0.79, 0.5, 0.0],
            "alpha": [0.1, 0.2, 0.3],
            "alpha_lo": [0.0, 0.25, 0.2],
            "alpha_hi": [0.2, 0.3, 0.4],
            "mc": [np.nan] * 3,
            "mc_lo": [np.nan] * 3,
            "mc_hi": [np.nan] * 3,
        }
    )
    fig = reliability_validity(summary)
    assert len(fig.axes[0].containers) == 3


def test_a_verdict_run_at_several_settings_is_named_by_the_options_that_differ():
    from synthbench.report.parts import explained_rows, setting_difference

    assert (explained_rows("test"), explained_rows("test:100")) == ("test rows", "first 100 test rows")

    capped = '{"epochs": 300, "fit": 0.95, "max_epochs": 600}'
    full = '{"epochs": 300, "fit": 0.95, "max_epochs": 2400}'
    assert setting_difference(capped, [capped, full]) == "max_epochs=600"
    assert setting_difference(full, {capped, full, ""}) == "epochs=300, fit=0.95, max_epochs=2400"  # vs defaults
    assert setting_difference('{"fractions": [0.5]}', ['{"fractions": [0.2, 0.8]}']) == "fractions=[0.5]"
    assert setting_difference(full, [full]) == full  # nothing differs: the setting itself
    assert setting_difference("not json", ["{}"]) == "not json"


def _split_half_by_hand(values: np.ndarray) -> float:
    """The mean Spearman rho between the two halves' method means over every split of the folds (each split once),
    stepped up by Spearman-Brown: scipy on each split, nothing shared with the implementation."""
    import itertools

    folds = len(values)
    rhos = []
    for first in itertools.combinations(range(folds), folds // 2):
        second = [f for f in range(folds) if f not in first]
        if 0 in first and len(first) == len(second):
            continue  # the same split as its mirror
        rhos.append(stats.spearmanr(values[list(first)].mean(axis=0), values[second].mean(axis=0))[0])
    r = float(np.mean(rhos))
    return max(2 * r / (1 + r), -1.0)


def test_split_half_reliability_is_the_spearman_brown_step_up_of_the_halves_mean_agreement():
    from synthbench.report.study.validity import split_half_reliability

    rng = np.random.default_rng(5)
    for folds in (2, 3, 6, 7):
        values = np.arange(6.0) * 0.3 + rng.normal(0, 1.0, size=(folds, 6))
        got = split_half_reliability(values, np.random.default_rng(0))
        assert got == pytest.approx(_split_half_by_hand(values), abs=1e-12), folds
    # beyond MAX_SPLITS splits (16 folds: 6435) it draws 500 of them: reproducible, close to all of them
    values = np.arange(6.0) * 0.2 + rng.normal(0, 1.0, size=(16, 6))
    drawn = split_half_reliability(values, np.random.default_rng(1))
    assert drawn == split_half_reliability(values, np.random.default_rng(1))
    assert drawn == pytest.approx(_split_half_by_hand(values), abs=0.03)
    assert np.isnan(split_half_reliability(values[:1], rng))  # one fold: no halves
    assert np.isnan(split_half_reliability(values[:, :2], rng))  # two methods: no ordering to rank
    assert np.isnan(split_half_reliability(np.ones((4, 5)), rng))  # no half separates the methods
    opposite = np.array([[0.0, 1, 2, 3], [3, 2, 1, 0]])  # the two folds order the methods oppositely
    assert split_half_reliability(opposite, rng) == -1.0


def test_split_half_reliability_is_near_one_for_a_stable_ordering_and_near_zero_for_noise():
    from synthbench.report.study.validity import split_half_reliability

    rng = np.random.default_rng(7)
    stable = [split_half_reliability(np.arange(8.0) + rng.normal(0, 0.3, size=(6, 8)), rng) for _ in range(50)]
    noise = [split_half_reliability(rng.normal(size=(6, 8)), rng) for _ in range(300)]
    assert min(stable) > 0.95
    # Spearman-Brown is monotone, so the median of noise is the step-up of a median rho near 0 (its mean lies below:
    # the step-up is concave)
    assert abs(np.median(noise)) < 0.1 and np.percentile(noise, 90) < 0.75


def test_the_agreement_is_corrected_for_both_orderings_unreliability():
    from synthbench.report.study.validity import attenuation_corrected, split_half_reliability

    assert attenuation_corrected(0.5, 0.8, 0.5) == pytest.approx(0.5 / np.sqrt(0.4))
    assert np.isnan(attenuation_corrected(0.5, 0.0, 0.9)) and np.isnan(attenuation_corrected(0.5, 0.9, np.nan))
    assert np.isnan(attenuation_corrected(np.nan, 0.9, 0.9))
    paired = _paired(noise=3.0)
    got = rank_agreement(paired, "lower", "higher", controls=["random"]).iloc[0]
    wide = paired[paired["method"] != "random"].pivot_table(index="fold", columns="method", values=["truth", "verdict"])
    truth = split_half_reliability(wide["truth"].to_numpy(), np.random.default_rng(0))
    verdict = split_half_reliability(-wide["verdict"].to_numpy(), np.random.default_rng(0))
    assert got["truth_split_half"] == pytest.approx(truth) and got["truth_split_half"] > 0.9
    assert got["verdict_split_half"] == pytest.approx(verdict) and got["verdict_split_half"] < got["truth_split_half"]
    assert got["spearman_corrected"] == pytest.approx(got["spearman"] / np.sqrt(truth * verdict))


def test_a_setting_whose_truth_orders_the_methods_unreliably_is_counted_but_left_out_of_the_mean():
    from synthbench.report.study.validity import reliable_truth, validity_table

    rng = np.random.default_rng(2)
    rows = []
    for s, truth_noise in enumerate([0.05, 0.05, 0.05, 5.0, 5.0]):
        for fold in range(6):
            for i, m in enumerate("abcdef"):
                truth = i + rng.normal(0, truth_noise)
                rows.append((f"s{s}", 100, fold, m, truth, i + rng.normal(0, 0.5)))
    paired = pd.DataFrame(rows, columns=["setting", "n_decoys", "fold", "method", "truth", "verdict"])
    agree = rank_agreement(paired, "higher", "higher").assign(verdict="v")
    assert list(reliable_truth(agree)) == [True, True, True, False, False]
    got = validity_table(agree, ["verdict"]).iloc[0]
    assert got["settings"] == 3 and got["of"] == 5 and got["unreliable"] == 2
    assert got["spearman"] == pytest.approx(agree["spearman"].iloc[:3].mean())
    assert got["spearman_corrected"] == pytest.approx(agree["spearman_corrected"].iloc[:3].mean())
    every = validity_table(agree, ["verdict"], min_truth_reliability=None).iloc[0]
    assert every["settings"] == 5 and every["unreliable"] == 0


def test_the_ladder_s_rungs_are_ranked_against_their_known_order_and_kept_out_of_the_methods(tmp_path):
    """A verdict that scores less noise higher orders the rungs as built (ladder rho +1), one that scores it lower
    reverses them (-1); the rungs never enter the ordering of the methods set beside the truth."""
    from synthbench.methods.ladder import LADDER_SHARES, rung_name
    from synthbench.report import load_results
    from synthbench.report.parts import store_parts
    from synthbench.report.study.verdicts import verdict_agreement, verdict_validity
    from synthbench.runner.grid import Cell
    from synthbench.runner.store import CellResult, ResultStore

    gbm = {"gbm": {"test_accuracy": 0.9, "competence": 0.9, "train_seconds": 1.0}}
    truth = {"gbm_treeshap": 0.9, "gbm_gain": 0.7, "gbm_feature_ablation": 0.5, "gbm_feature_permutation": 0.3}
    rungs = {rung_name("gbm_treeshap", s): s for s in LADDER_SHARES}
    with ResultStore(tmp_path / "s.sqlite") as db:
        for fold in range(4):
            for method, value in [*truth.items(), *((m, 0.9 - s) for m, s in rungs.items()), ("random", 0.05)]:
                share = rungs.get(method, 1.0 if method == "random" else None)
                for scorer, metric, score in (
                    ("ground_truth", "average_precision", value + 0.01 * fold),
                    ("road", "road_gap", value + 0.02 * fold),  # follows the truth and the ladder
                    # lower is better: more noise, less accuracy left, ranked better: the ladder reversed
                    ("roar", "roar_accuracy", (-share if share is not None else -value) + 0.01 * fold),
                ):
                    judged = {"judged": "gbm"} if method == "random" and scorer != "ground_truth" else {}
                    db.write(
                        CellResult(
                            Cell("xor", 150, 4, 0, 4, fold, method, scorer=scorer, **judged),
                            "ok",
                            scores={metric: score},
                            chance={},
                            model=None if method == "random" else gbm,
                        )
                    )
    parts = store_parts(load_results(tmp_path / "s.sqlite"))
    for row in verdict_agreement(parts).itertuples():
        assert not set(row.ranked) & set(rungs)
    validity = verdict_validity(parts)
    ladder = validity.summary.set_index("verdict")["ladder"]
    road = next(v for v in ladder.index if v.startswith("road"))
    roar = next(v for v in ladder.index if v.startswith("roar"))
    assert ladder[road] == pytest.approx(1.0) and ladder[roar] == pytest.approx(-1.0)
    assert set(validity.ladder["methods"]) == {5}  # four rungs and the random control


def test_the_page_opens_on_the_answer_which_verdicts_follow_the_truth_which_reverse_it_and_how_sure():
    from synthbench.report.study.section import answer_lines

    summary = pd.DataFrame(
        {
            "verdict": ["road", "roar", "kar", "mprt"],
            "kind": "tabular",
            "model": "gbm",
            "spearman": [0.6, -0.5, 0.1, np.nan],
            "spearman_lo": [0.3, -0.8, -0.4, np.nan],
            "spearman_hi": [0.8, -0.2, 0.5, np.nan],
            "ladder": [1.0, np.nan, 0.2, np.nan],
        }
    )
    (text,) = answer_lines(summary)[:1]
    assert text.startswith("**The answer.**") and "of 4 verdicts" in text
    assert "1 follow the truth (their 95 % interval above 0): road +0.60 [+0.30, +0.80], ladder +1.00" in text
    assert "1 reverse it (interval below 0): roar -0.50 [-0.80, -0.20]." in text
    assert "1 cannot be told from no agreement (interval across 0): kar +0.10 [-0.40, +0.50], ladder +0.20" in text
    assert "1 have no value here (the table says why): mprt." in text


def test_where_the_data_carry_a_per_example_truth_the_methods_are_ordered_by_it(tmp_path):
    """switch has a per-example truth: its setting is ordered by local_tpr_at_k (which separates the maps), not by
    the global average precision (which ties them); xor has none and keeps average precision."""
    from synthbench.report import load_results
    from synthbench.report.parts import store_parts
    from synthbench.report.study.verdicts import verdict_agreement
    from synthbench.runner.grid import Cell
    from synthbench.runner.store import CellResult, ResultStore

    gbm = {"gbm": {"test_accuracy": 0.9, "competence": 0.9, "train_seconds": 1.0}}
    local = {"gbm_treeshap": 0.9, "gbm_feature_ablation": 0.6, "gbm_feature_permutation": 0.3}
    with ResultStore(tmp_path / "s.sqlite") as db:
        for dataset, n_decoys in (("switch", 4), ("xor", 4)):
            for fold in range(3):
                for method, value in local.items():
                    truth = {"average_precision": 1.0, "best_k": 1.0}
                    if dataset == "switch":
                        truth["local_tpr_at_k"] = value + 0.01 * fold
                    else:
                        truth["average_precision"] = value + 0.01 * fold
                    for scorer, scores in (("ground_truth", truth), ("road", {"road_gap": value})):
                        db.write(
                            CellResult(
                                Cell(dataset, 150, n_decoys, 0, 3, fold, method, scorer=scorer),
                                "ok",
                                scores=scores,
                                chance={},
                                model=gbm,
                            )
                        )
    agree = verdict_agreement(store_parts(load_results(tmp_path / "s.sqlite"))).set_index("setting")
    assert agree.loc["switch", "truth_metric"] == "local_tpr_at_k" and agree.loc["switch", "spearman"] == 1.0
    assert agree.loc["xor", "truth_metric"] == "average_precision"


def test_a_verdict_at_two_settings_shows_both_validities_their_paired_difference_and_whether_it_moves():
    from synthbench.report.study.section import options_lines
    from synthbench.report.study.validity import validity_table, verdict_tests
    from synthbench.report.study.verdicts import option_effects

    def verdict(rhos, seed, name, option, scorer="roar"):
        agree = _agree(rhos, folds=4, spread=0.2, seed=seed)
        return agree.assign(verdict=name, option=option, scorer=scorer, metric=f"{scorer}_x", apart=False)

    mean = verdict([0.9] * 8, 1, 'roar (replacement="train_mean")', 'replacement="train_mean"')
    imputed = verdict([-0.6] * 8, 2, 'roar (replacement="imputed")', 'replacement="imputed"')
    alike = verdict([0.9] * 8, 1, 'roar (repeats=2)', "repeats=2")  # the same draws as the mean fill's
    alone = verdict([0.3] * 8, 3, "road", "", scorer="road")  # one setting only: no row
    settings = pd.concat([mean, imputed, alike, alone], ignore_index=True)
    summary = validity_table(settings, ["verdict", "kind", "model", "apart"])
    tests = verdict_tests(settings, ["kind", "model"], ["setting", "n_decoys"])  # as verdict_validity makes them
    got = option_effects(summary, settings, tests).set_index("option")
    assert list(got.index) == ['replacement="imputed"', "repeats=2"]
    assert (got["base"] == 'replacement="train_mean"').all() and (got["verdict"] == "roar `roar_x`").all()
    row, first = got.loc['replacement="imputed"'], summary.set_index("verdict").loc[mean["verdict"].iloc[0]]
    assert (row["base_rho"], row["base_lo"], row["base_hi"]) == (
        first["spearman"],
        first["spearman_lo"],
        first["spearman_hi"],
    )
    diff = imputed["spearman"].to_numpy() - mean["spearman"].to_numpy()
    assert row["settings"] == 8 and row["difference"] == pytest.approx(diff.mean())
    assert row["p"] == pytest.approx(stats.wilcoxon(diff).pvalue)
    assert row["moves"] and not got.loc["repeats=2", "moves"]  # far apart; the same agreement
    lines = options_lines(got.reset_index())
    assert "1 of 2 move" in lines[0] and lines[2].count("| yes ") == 1 and lines[2].count("| no ") == 1
