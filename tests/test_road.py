"""The ROAD scorer: its imputations against Quantus 0.6 and scikit-learn, its curves against Quantus' ROAD."""

from __future__ import annotations

import numpy as np
import pytest

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput, dataset_folds
from synthbench.scoring import get_scorer
from synthbench.scoring.ranking import rank
from synthbench.scoring.removal.base import removal_masks
from synthbench.scoring.removal.imputation import GaussianImputer, impute_images
from synthbench.scoring.removal.road import RoadScorer


@pytest.mark.parametrize("channels", [1, 3])
def test_image_imputation_equals_quantus_noisy_linear_imputation(channels):
    from quantus.functions.perturb_func import noisy_linear_imputation

    rng = np.random.default_rng(0)
    x = rng.random((4, channels, 7, 9))
    pixels = rng.random((4, 1, 7, 9)) < 0.6  # the same pixels in every channel, as Quantus imputes them
    ours = impute_images(x, pixels, noise=0.0, rng=rng)
    for i in range(4):
        ref = noisy_linear_imputation(x[i], np.flatnonzero(pixels[i, 0]), noise=0.0)
        np.testing.assert_allclose(ours[i], ref, atol=1e-12)
    # per-element masks: each channel plane is imputed from its own neighbours, as Quantus does a one-channel image
    elements = rng.random(x.shape) < 0.5
    ours = impute_images(x, elements, noise=0.0, rng=rng)
    for i in range(4):
        for c in range(channels):
            ref = noisy_linear_imputation(x[i, c : c + 1], np.flatnonzero(elements[i, c]), noise=0.0)
            np.testing.assert_allclose(ours[i, c : c + 1], ref, atol=1e-12)


def test_image_imputation_noise_touches_only_the_removed_elements_with_the_declared_spread():
    rng = np.random.default_rng(1)
    x = rng.random((50, 1, 16, 16))
    removed = rng.random(x.shape) < 0.3
    clean = impute_images(x, removed, noise=0.0, rng=np.random.default_rng(2))
    noisy = impute_images(x, removed, noise=0.05, rng=np.random.default_rng(2))
    assert np.array_equal(noisy[~removed], x[~removed]) and np.array_equal(clean[~removed], x[~removed])
    residual = (noisy - clean)[removed]
    assert abs(residual.mean()) < 0.003 and abs(residual.std() - 0.05) < 0.003
    with pytest.raises(ValueError, match="keep at least one"):
        impute_images(x[:1], np.ones((1, 1, 16, 16), bool), rng=rng)
    # a mask of pixels (one system per image, its channels its right-hand sides) imputes what the same mask given
    # per element does (one system per plane), the noise drawn in the same order
    colour, pixels = rng.random((6, 3, 9, 8)), rng.random((6, 1, 9, 8)) < 0.4
    shared = impute_images(colour, pixels, noise=0.05, rng=np.random.default_rng(3))
    planes = impute_images(colour, np.repeat(pixels, 3, axis=1), noise=0.05, rng=np.random.default_rng(3))
    np.testing.assert_allclose(shared, planes, rtol=0, atol=1e-12)


def test_tabular_imputation_is_the_regression_of_the_removed_features_on_the_kept_ones():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5)) @ rng.standard_normal((5, 5)) + rng.standard_normal(5)
    rows = X[:30] + 0.1
    removed = np.zeros((30, 5), bool)
    removed[:15, [1, 3]] = True
    removed[15:, 0] = True
    ours = GaussianImputer(X, ridge=0.0).impute(rows, removed, noise=0.0, rng=rng)
    for r_idx, cols in ((slice(0, 15), [1, 3]), (slice(15, 30), [0])):
        kept = [j for j in range(5) if j not in cols]
        ref = LinearRegression().fit(X[:, kept], X[:, cols]).predict(rows[r_idx][:, kept])
        np.testing.assert_allclose(ours[r_idx][:, cols], ref, atol=1e-9)
        np.testing.assert_array_equal(ours[r_idx][:, kept], rows[r_idx][:, kept])


def test_removal_masks_take_the_floor_of_the_fraction_from_each_end_and_break_ties_at_random():
    keys = np.array([[5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    morf, lerf = removal_masks(rank(keys, np.random.default_rng(0)), 0.35)
    assert morf.tolist() == [[True, True, True] + [False] * 7]
    assert lerf.sum() == 3 and not lerf[0, :5].any()
    assert not removal_masks(rank(keys, np.random.default_rng(0)), 0.05)[1].any()  # floor(0.5) = 0
    draws = {tuple(np.flatnonzero(removal_masks(rank(keys, np.random.default_rng(s)), 0.35)[1][0])) for s in range(20)}
    assert len(draws) > 5  # the five tied zeros are taken in a random order


@pytest.fixture(scope="module")
def digits_fold():
    ds = datasets.make("digits", n_samples=600, seed=0)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=3, seed=0)[0])
    return data, SharedModels(data, preset="cnn")


def test_morf_curve_equals_quantus_road_on_the_folds_cnn(digits_fold):
    import quantus

    data, models = digits_fold
    spec = get_method("gradient")
    out = run_method(spec, data, models)
    scorer = RoadScorer(noise=0.0)
    scores = scorer.score(out, data, spec, models)
    cnn = models.get("cnn").module.float().eval()
    metric = quantus.ROAD(
        noise=0.0,
        percentages=[10, 30, 50, 70, 90],
        abs=False,
        normalise=False,
        disable_warnings=True,
        display_progressbar=False,
    )
    ref = metric(
        model=cnn,
        x_batch=data.X_explain,
        y_batch=data.y_explain,
        a_batch=np.abs(out.local),
        device="cpu",
        softmax=False,
        batch_size=len(data.y_explain),
    )  # Quantus averages its first batch only
    ref = ref if isinstance(ref, dict) else metric.evaluation_scores
    np.testing.assert_allclose(scores.curves["morf"].values[1:, 0], [ref[p] for p in (10, 30, 50, 70, 90)], atol=1e-12)
    assert scores.curves["morf"].values[0, 0] == np.mean(models.get("cnn").predict(data.X_explain) == data.y_explain)


def test_road_ranks_a_learned_models_gradient_above_the_random_control(digits_fold):
    data, models = digits_fold
    scorer = get_scorer("road")
    values = {}
    for name in ("gradient", "random"):
        spec = get_method(name)
        values[name] = scorer.score(run_method(spec, data, models), data, spec, models)
    assert set(values["gradient"]) == set(scorer.metrics) and set(values["gradient"].curves) == {"morf", "lerf"}
    assert abs(values["random"]["road_gap"]) < 0.1  # a random order removes alike from both ends
    assert values["gradient"]["road_gap"] > values["random"]["road_gap"] + 0.2
    assert values["gradient"]["road_morf"] < values["random"]["road_morf"]
    assert all(0.0 <= v <= 1.0 for k, v in values["gradient"].items() if k != "road_gap")
    again = scorer.score(run_method(get_method("gradient"), data, models), data, get_method("gradient"), models)
    assert dict(again) == dict(values["gradient"])  # same cell, same numbers


def test_tabular_road_with_global_and_local_rankings(xor_fold_models):
    data, models = xor_fold_models
    spec = get_method("gradient")
    out = run_method(spec, data, models)
    both = {r: RoadScorer(ranking=r).score(out, data, spec, models) for r in ("global", "local")}
    for values in both.values():
        assert values["road_gap"] > 0.1
    assert RoadScorer(ranking="local").score(MethodOutput(out.scores), data, spec, models) == {}
    assert RoadScorer().params_for("tabular")["ranking"] == "global" and "unit" in RoadScorer().params_for("image")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"fractions": (0.0, 0.5)}, "strictly between 0 and 1"),
        ({"fractions": (0.5, 1.2)}, "strictly between 0 and 1"),
        ({"fractions": (0.5, 0.3)}, "distinct and increasing"),
        ({"fractions": ()}, "at least one"),
        ({"unit": "patch"}, "unit must be one of"),
        ({"ranking": "both"}, "ranking must be one of"),
        ({"noise": -1.0}, "non-negative"),
    ],
)
def test_bad_road_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RoadScorer(**kwargs)


@pytest.fixture(scope="module")
def xor_fold_models():
    ds = datasets.make("xor", n_samples=600, n_decoys=6, seed=0)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=3, seed=0)[0])
    return data, SharedModels(data)


def test_road_beside_the_truth_from_the_command_line_stores_curves_resumes_and_reports(tmp_path, capsys):
    from synthbench.report import build_report, load_results
    from synthbench.run import main
    from synthbench.runner.store import ResultStore

    store = tmp_path / "r.sqlite"
    args = [
        "--datasets",
        "xor",
        "--decoys",
        "4",
        "--n-samples",
        "200",
        "--folds",
        "2",
        "--jobs",
        "1",
        "--methods",
        "gradient,rf,mrmr,random",
        "--model",
        "sparse_mlp",
        "--scorer",
        "road,ground_truth",
        "--quiet",
        "--store",
        str(store),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "mean road_gap over folds" in out and "18 cells run" in out  # the first scorer's headline by default
    assert "chance@forest" in out and "random@forest" in out  # the control also judged on the forest rf explains
    with ResultStore(store, readonly=True) as db:
        curves, cells = db.curves(), db.cells()
    road = cells[cells["scorer"] == "road"]
    assert set(curves["cell_id"]) == set(road["cell_id"]) and set(curves["curve"]) == {"morf", "lerf"}
    assert sorted(curves["x"].unique()) == [0.0, 0.1, 0.3, 0.5, 0.7, 0.9] and (curves["replicate"] == 0).all()
    assert main(args) == 0 and "0 cells run, 18 already" in capsys.readouterr().out  # resumed: nothing recomputed
    md = build_report(load_results(store)).markdown
    assert "## road leaderboard" in md and "## road curves" in md and "Spearman ρ (p)" in md
    assert "The chance columns are the `random` control's mean" in md and "At the last point (0.9)" in md
    free = road[road["method"].isin(["mrmr", "random"]) & road["judged"].isna()]  # explain no model: judged on the
    assert set(free["model_preset"]) == {"sparse_mlp"} and road.loc[road["method"] == "rf", "model_preset"].isna().all()
    # one the grid explains; the control (not the filter mrmr) also on the forest, beside rf
    assert road.loc[road["judged"].notna(), ["method", "judged"]].drop_duplicates().values.tolist() == [
        ["random", "forest"]
    ]
    beside = md.split("## road beside the ground truth")[1]
    row = next(line for line in beside.splitlines() if line.startswith("| random@sparse_mlp"))
    assert "–" not in row  # its one ground-truth cell per fold is paired with its verdict on sparse_mlp
