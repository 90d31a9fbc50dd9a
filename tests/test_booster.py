"""The shared gradient-boosted trees (LightGBM): native TreeSHAP against shap, determinism, its methods and verdicts."""

import numpy as np

from synthbench.protocol import cell_fold


def test_the_booster_treeshap_equals_shaps_own_algorithm_binary_and_multiclass():
    import shap

    from synthbench.models.booster import train_gbm

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 6)).astype(np.float32)
    for y in ((X[:, 0] * X[:, 1] > 0).astype(np.int64), np.digitize(X[:, 2], [-0.3, 0.3]).astype(np.int64)):
        model = train_gbm(X, y, seed=0)
        # shap.TreeExplainer on a LightGBM booster would call the same pred_contrib; its own C++ TreeSHAP runs on
        # the trees it parses from the booster's dump
        # (LightGBM interleaves the K trees of each round: class c's trees are every K-th from c)
        parsed = shap.TreeExplainer(model.booster).model.trees
        K = len(model.classes_) if len(model.classes_) > 2 else 1
        reference = np.stack([shap.TreeExplainer(parsed[c::K]).shap_values(X[:40]) for c in range(K)], axis=1)
        mine = model.contributions(X[:40])
        np.testing.assert_allclose(mine, reference[:, 0] if K == 1 else reference, atol=1e-6)
        if mine.ndim == 2:  # exact: the contributions and the expected value add up to the raw score
            expected = np.asarray(model.booster.predict(X[:40], pred_contrib=True))[:, -1]
            np.testing.assert_allclose(mine.sum(axis=1) + expected, model.raw_scores(X[:40]), atol=1e-6)


def test_the_booster_methods_recover_xor_and_interventional_shap_adds_up():
    from synthbench.methods import get_method, run_method
    from synthbench.models import SharedModels

    data, _ = cell_fold("xor", n_samples=600, seed=0, n_folds=3, fold=0, n_decoys=8)
    models = SharedModels(data)
    relevant = set(np.flatnonzero(data.relevant))
    for name in ("gbm_treeshap", "gbm_gain", "gbm_feature_ablation", "gbm_treeshap_interventional"):
        out = run_method(get_method(name), data, models)
        assert set(np.argsort(-np.abs(out.scores))[:2]) == relevant, name
    out = run_method(get_method("gbm_treeshap_interventional"), data, models)
    booster = models.get("gbm")
    background = data.X_train[
        np.sort(data.rng("method", "gbm_treeshap_interventional").choice(len(data.X_train), 100, replace=False))
    ]
    expected = booster.raw_scores(background).mean()
    np.testing.assert_allclose(out.local.sum(axis=1) + expected, booster.raw_scores(data.X_explain), atol=1e-5)


def test_the_booster_is_deterministic_under_a_seed_and_stops_early_on_training_rows_only():
    from synthbench.models.booster import train_gbm

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 10)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    a, b = train_gbm(X, y, seed=5), train_gbm(X, y, seed=5, n_jobs=2)
    assert a.n_rounds == b.n_rounds and np.array_equal(a.raw_scores(X), b.raw_scores(X))  # whatever the threads
    assert a.n_rounds < a.config.n_estimators and a.booster.current_iteration() == a.n_rounds
    assert len(a.validation_indices) == 80 and a.validation_indices.max() < 400


def test_the_controls_are_judged_on_the_booster_and_every_verdict_that_can_judge_a_tree_takes_it(tmp_path, capsys):
    from synthbench.run import main
    from synthbench.runner.grid import GridSpec
    from synthbench.runner.store import ResultStore

    grid = GridSpec(("xor",), ("gbm_gain", "random", "input"), (4,), 160, 2, scorers=("road",))
    assert {(c.method, c.judged) for c in grid.cells()} >= {("random", "gbm"), ("input", "gbm"), ("gbm_gain", None)}
    store = tmp_path / "r.sqlite"
    scorers = "ground_truth,road,roar,kar,data_randomisation,fragility"
    assert (
        main(
            [
                "--datasets",
                "xor",
                "--decoys",
                "4",
                "--n-samples",
                "160",
                "--folds",
                "2",
                "--jobs",
                "1",
                "--methods",
                "gbm_treeshap,random",
                "--scorer",
                scorers,
                "--scorer-option",
                "fractions=0.5",
                "--scorer-option",
                "repeats=1",
                "--scorer-option",
                "max_examples=4",
                "--scorer-option",
                "eps=0.1",
                "--quiet",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    capsys.readouterr()
    with ResultStore(store, readonly=True) as db:
        cells = db.cells()
    assert (cells["status"] == "ok").all(), cells.loc[cells["status"] != "ok", "message"].tolist()
    treeshap = cells[cells["method"] == "gbm_treeshap"]
    assert set(treeshap["scorer"]) == set(scorers.split(","))
    judged = treeshap.loc[treeshap["scorer"] != "ground_truth", "judged_model"]
    assert (judged == "gbm").all()
    assert "gbm" in set(cells.loc[(cells["method"] == "random") & (cells["scorer"] == "road"), "judged"])


def test_the_screening_keeps_the_truth_reads_only_what_it_chose_and_is_recorded_with_the_fold():
    import pytest

    from synthbench.models import SharedModels
    from synthbench.models.booster import GBMConfig, train_gbm

    data, _ = cell_fold("ring", n_samples=600, seed=0, n_folds=3, fold=0, n_decoys=200)
    models = SharedModels(data)
    booster = models.get("gbm")
    relevant = np.flatnonzero(data.relevant)
    assert set(relevant) <= set(booster.features) and len(booster.features) < 20  # the decoys went, the truth stayed
    counts = [n for n, _ in booster.screening]
    assert counts[0] == data.X_train.shape[1] and counts[-1] == 1 and counts == sorted(counts, reverse=True)
    best = max(score for _, score in booster.screening)
    assert dict(booster.screening)[len(booster.features)] == best  # the kept round is the best on validation
    dropped = np.setdiff1d(np.arange(data.X_train.shape[1]), booster.features)
    assert (booster.gain()[dropped] == 0).all() and (booster.contributions(data.X_explain)[:, dropped] == 0).all()
    np.testing.assert_array_equal(
        booster.module.inputs_read, booster.features
    )  # the perturbation methods skip the rest
    info = models.info["gbm"]
    assert info["inputs_read"] == booster.features.tolist() and len(info["screening"]) == len(counts)
    # screened, it learns what the unscreened booster misses on this table
    plain = train_gbm(data.X_train, data.y_train, config=GBMConfig(screen_keep=0), seed=0)
    assert plain.screening == () and len(plain.features) == data.X_train.shape[1]
    held_out = [np.mean(m.predict(data.X_test) == data.y_test) for m in (booster, plain)]
    assert held_out[0] > held_out[1] + 0.05 and held_out[0] > 0.85, held_out
    # the histogram bins reach LightGBM: fewer bins, another booster
    coarse = train_gbm(data.X_train, data.y_train, config=GBMConfig(screen_keep=0, max_bin=7), seed=0)
    assert "[max_bin: 63]" in plain.booster.model_to_string() and "[max_bin: 7]" in coarse.booster.model_to_string()
    assert not np.array_equal(coarse.raw_scores(data.X_test), plain.raw_scores(data.X_test))
    for bad in (1.0, -0.5, 2):
        with pytest.raises(ValueError, match="screen_keep"):
            train_gbm(data.X_train, data.y_train, config=GBMConfig(screen_keep=bad), seed=0)
    with pytest.raises(ValueError, match="screen_budget"):
        train_gbm(data.X_train, data.y_train, config=GBMConfig(screen_budget=-1), seed=0)


def test_a_screening_round_on_n_inputs_boosts_at_most_its_budget_over_n_rounds(monkeypatch):
    import math

    import lightgbm

    from synthbench.models.booster import GBMConfig, train_gbm

    data, _ = cell_fold("ring", n_samples=300, seed=0, n_folds=3, fold=0, n_decoys=60)
    asked, train = [], lightgbm.train

    def spied(params, train_set, num_boost_round, **options):
        asked.append(num_boost_round)
        return train(params, train_set, num_boost_round=num_boost_round, **options)

    monkeypatch.setattr(lightgbm, "train", spied)
    booster = train_gbm(data.X_train, data.y_train, config=GBMConfig(screen_budget=3000), seed=0)
    counts = [n for n, _ in booster.screening]
    assert asked == [min(1000, math.ceil(3000 / n)) for n in counts] and asked[0] == 49 and asked[-1] == 1000
    asked.clear()
    train_gbm(data.X_train, data.y_train, config=GBMConfig(screen_budget=0), seed=0)
    assert set(asked) == {1000}  # no budget: every round may boost n_estimators


def test_the_booster_on_every_input_reads_every_column_where_the_screened_one_drops_most():
    """gbm_full trains once on every input (no screening rounds): its gain and TreeSHAP can weigh any column, so its
    methods' orderings have something to rank, where the screened booster gives the columns it dropped exactly 0."""
    from synthbench.methods import get_method, run_method
    from synthbench.models import SharedModels
    from synthbench.protocol import setting_folds

    fold = setting_folds("xor", n_samples=600, seed=0, n_folds=2, n_decoys=10)[0]
    models = SharedModels(fold)
    screened, full = models.get("gbm"), models.get("gbm_full")
    p = fold.X_train.shape[1]
    assert list(full.features) == list(range(p)) and full.screening == () and len(screened.features) < p
    gains = {k: run_method(get_method(f"{k}_gain"), fold, models).scores for k in ("gbm", "gbm_full")}
    assert (gains["gbm_full"] > 0).sum() > (gains["gbm"] > 0).sum()
    assert set(np.argsort(-gains["gbm_full"])[:2]) == set(np.flatnonzero(fold.relevant))  # it learned xor
    assert models.info["gbm_full"]["competence"] > 0.8
