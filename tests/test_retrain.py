"""Remove and retrain (ROAR) and keep and retrain (KAR): masks, replacement, retraining, and a known truth."""

from __future__ import annotations

import numpy as np
import pytest

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput, dataset_folds
from synthbench.scoring import get_scorer
from synthbench.scoring.ranking import rank
from synthbench.scoring.removal.imputation import imputer
from synthbench.scoring.removal.retrain import RetrainScorer, replace_by_mean


@pytest.fixture(scope="module")
def xor_fold():
    ds = datasets.make("xor", n_samples=500, n_decoys=6, seed=0)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=3, seed=0)[0])
    return data, SharedModels(data)


def test_roar_replaces_the_top_and_kar_the_bottom_units_by_the_training_mean():
    rng = np.random.default_rng(0)
    X = rng.random((5, 3, 4, 4)).astype(np.float32)
    data = FoldData(X, np.zeros(5, int), X, np.zeros(5, int), X, np.zeros(5, int), None, None, 0, 0)
    order = rank(rng.random((5, 48)), rng)
    mean = X.mean(axis=(0, 2, 3))[:, None, None]
    fill = RetrainScorer()._filler(data)
    roar = RetrainScorer(repeats=1)._changed(X, order, 0.3, fill, data, rng)
    kar = RetrainScorer(name="kar", keep=True, repeats=1)._changed(X, order, 0.3, fill, data, rng)
    replaced_roar, replaced_kar = roar != X, kar != X
    for replaced, units in ((replaced_roar, order[:, :14]), (replaced_kar, order[:, -14:])):
        flat = replaced.reshape(5, -1)  # floor(0.3 * 48) = 14 ranked first (ROAR) or last (KAR)
        assert (flat.sum(axis=1) == 14).all() and flat[np.arange(5)[:, None], units].all()
    channel = np.broadcast_to(np.arange(3)[None, :, None, None], X.shape)
    np.testing.assert_allclose(roar[replaced_roar], mean[channel[replaced_roar], 0, 0], rtol=1e-6)
    pixels = RetrainScorer(repeats=1, unit="pixel")._changed(X, rank(rng.random((5, 16)), rng), 0.5, fill, data, rng)
    assert ((pixels != X).sum(axis=1) % 3 == 0).all()  # whole pixels: all three channels or none
    np.testing.assert_array_equal(replace_by_mean(X, np.zeros(X.shape, bool), mean), X)


@pytest.mark.parametrize("kind", ["image", "tabular"])
def test_the_imputed_fill_is_roads_imputation_of_the_same_units(kind):
    rng = np.random.default_rng(1)
    X = rng.random((6, 2, 5, 5) if kind == "image" else (6, 7)).astype(np.float32)
    data = FoldData(X, np.zeros(6, int), X, np.zeros(6, int), X, np.zeros(6, int), None, None, 0, 0)
    scorer = RetrainScorer(repeats=1, fill="imputed", fill_noise=0.05)
    order = rank(rng.random((6, X[0].size)), rng)
    changed = scorer._changed(X, order, 0.5, scorer._filler(data), data, np.random.default_rng(7))
    removed = changed != X
    assert changed.dtype == np.float32 and (removed.reshape(6, -1).sum(axis=1) == X[0].size // 2).all()
    road = imputer(kind, X, noise=0.05)(X, removed, np.random.default_rng(7))
    np.testing.assert_allclose(changed, road, rtol=1e-6)  # ROAD's imputation, noise and stream of the same units
    mean = RetrainScorer()._changed(X, order, 0.5, RetrainScorer()._filler(data), data, np.random.default_rng(7))
    assert np.abs(changed - mean)[removed].min() > 0  # no removed element left at the training mean


def test_the_fill_is_in_the_cell_id_only_when_it_is_not_the_mean():
    assert "fill_noise" not in RetrainScorer().params_for("tabular")
    imputed = RetrainScorer(fill="imputed").params_for("image")
    assert imputed["replacement"] == "imputed" and imputed["fill_noise"] == 0.01


def test_a_known_ranking_drops_roar_to_chance_and_keeps_kar_high(xor_fold):
    data, models = xor_fold
    truth = MethodOutput(data.relevant.astype(float) + 0.01 * np.arange(data.n_features))  # the two xor features first
    spec = get_method("random")
    roar = RetrainScorer(fractions=(0.25,), repeats=2).score(truth, data, spec, models)  # floor(0.25 * 8) = 2
    kar = RetrainScorer(name="kar", keep=True, fractions=(0.75,), repeats=2).score(truth, data, spec, models)
    clean = roar.curves["roar"].values[0]
    assert (clean > 0.9).all() and np.array_equal(clean, kar.curves["kar"].values[0])
    assert (roar.curves["roar"].values[1] < 0.65).all()  # both relevant features gone: about a coin flip
    assert (kar.curves["kar"].values[1] > 0.85).all()  # floor(0.75 * 8) = 6 replaced, only they kept: xor learnt
    for r in range(2):  # t = 0 is the fold's own replicate r
        assert clean[r] == np.mean(models.get("mlp", replicate=r).predict(data.X_test) == data.y_test)
    again = RetrainScorer(fractions=(0.25,), repeats=2).score(truth, data, spec, models)
    np.testing.assert_array_equal(again.curves["roar"].values, roar.curves["roar"].values)


def test_retraining_on_unchanged_data_reproduces_the_folds_replicate(xor_fold):
    data, models = xor_fold
    fresh = models.train_on("mlp", data, replicate=1)
    np.testing.assert_array_equal(
        fresh.predict_proba(data.X_test), models.get("mlp", replicate=1).predict_proba(data.X_test)
    )


def test_the_random_control_redrawn_per_epoch_gets_a_fresh_mask_each_epoch(xor_fold, monkeypatch):
    data, models = xor_fold
    calls = []
    train_many_on = models.train_many_on

    def spy(kind, requests, training=None):
        calls.extend(r.epoch_inputs for r in requests)
        return train_many_on(kind, requests, training)

    monkeypatch.setattr(models, "train_many_on", spy)
    spec = get_method("random")
    output = run_method(spec, data, models)
    scorer = RetrainScorer(fractions=(0.25,), repeats=1, random_masks="epoch")
    first = scorer.score(output, data, spec, models)
    inputs = calls[0]
    masks = [inputs(e) != data.X_train for e in range(3)]
    for m in masks:  # tables ranked globally: the same floor(0.25 * 8) = 2 columns of every row, redrawn each epoch
        assert (m.sum(axis=1) == 2).all() and (m == m[0]).all()
    assert not np.array_equal(masks[0], masks[1]) or not np.array_equal(masks[1], masks[2])
    np.testing.assert_array_equal(inputs(1), inputs(1))  # each epoch's draw is seeded
    again = scorer.score(output, data, spec, models)
    np.testing.assert_array_equal(again.curves["roar"].values, first.curves["roar"].values)
    fixed = RetrainScorer(fractions=(0.25,), repeats=1).score(output, data, spec, models)
    assert fixed.curves["roar"].values[0] == first.curves["roar"].values[0]  # the clean models are shared
    calls.clear()
    RetrainScorer(fractions=(0.25,), repeats=1, random_masks="epoch").score(
        run_method(get_method("rf"), data, models), data, get_method("rf"), models
    )
    assert calls == [None]  # only the random control is redrawn
    with pytest.raises(ValueError, match="trains without epochs"):
        models.train_on("forest", data, epoch_inputs=inputs)


def test_roar_and_kar_share_the_methods_maps_of_every_row(monkeypatch):
    from synthbench.scoring.removal import retrain

    ds = datasets.make("shapes", n_samples=60, seed=0, size=16, n_decoys=1)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=2, seed=0)[0])
    models = SharedModels(data)
    runs = []
    real = retrain.run_method
    monkeypatch.setattr(retrain, "run_method", lambda *a: runs.append(a[0].name) or real(*a))
    spec = get_method("sobel")
    output = run_method(spec, data, models)
    for name, keep in (("roar", False), ("kar", True)):
        values = RetrainScorer(name=name, keep=keep, fractions=(0.5,), repeats=1).score(output, data, spec, models)
        assert values.curves[name].values.shape == (2, 1)
    assert runs == ["sobel"]  # the train + test maps are drawn once for both scorers


def test_a_method_whose_model_cannot_be_retrained_is_refused_before_anything_runs(tmp_path, capsys):
    from synthbench.run import main

    store = tmp_path / "r.sqlite"
    grid = [
        "--datasets",
        "xor",
        "--decoys",
        "2",
        "--n-samples",
        "120",
        "--folds",
        "2",
        "--jobs",
        "1",
        "--plugin",
        "fixed_model_methods",
        "--methods",
        "explains_fixed,random",
        "--store",
        str(store),
        "--quiet",
    ]
    assert main([*grid, "--scorer", "ground_truth,kar"]) == 2
    err = capsys.readouterr().err
    assert "explains a 'fixed_stub' model, which cannot be retrained" in err and len(err.strip().splitlines()) == 1
    assert not store.exists()
    assert main([*grid, "--scorer", "ground_truth,road"]) == 0  # scorers that do not retrain take it


def test_local_rankings_explain_the_training_rows_too(xor_fold):
    data, models = xor_fold
    spec = get_method("gradient")
    out = run_method(spec, data, models)
    scorer = RetrainScorer(fractions=(0.25,), repeats=1, ranking="local")
    values = scorer.score(out, data, spec, models)
    assert set(values) == {"roar_accuracy"} and values.curves["roar"].values.shape == (2, 1)
    assert (
        RetrainScorer(ranking="local", repeats=1).score(MethodOutput(out.scores), data, get_method("mrmr"), models)
        == {}
    )  # mrmr has no per-row maps


def test_roar_and_kar_are_registered_with_their_declared_metrics():
    assert get_scorer("roar").metrics["roar_accuracy"].direction == "lower"
    assert get_scorer("kar").metrics["kar_accuracy"].direction == "higher"
    assert get_scorer("roar").params_for("image")["unit"] == "element"
    assert get_scorer("kar").params_for("tabular") == {
        "fractions": [0.1, 0.3, 0.5, 0.7, 0.9],
        "repeats": 5,
        "signed": False,
        "replacement": "train_mean",
        "random_masks": "fixed",
        "ranking": "global",
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"repeats": 0}, "at least 1"),
        ({"repeats": 1.5}, "whole number"),
        ({"fractions": (0.5, 1.0)}, "strictly between 0 and 1"),
        ({"unit": "patch"}, "unit must be one of"),
        ({"random_masks": "batch"}, "random_masks must be one of"),
        ({"fill": "zero"}, "fill must be one of train_mean, imputed"),
        ({"fill_noise": -1.0}, "fill_noise must be non-negative"),
    ],
)
def test_bad_retrain_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RetrainScorer(**kwargs)


def test_roar_and_kar_from_the_command_line_with_scorer_options(tmp_path, capsys):
    from synthbench.report import build_report, load_results
    from synthbench.run import main
    from synthbench.runner.leaderboard import leaderboard
    from synthbench.runner.store import ResultStore

    store = tmp_path / "r.sqlite"
    grid = [
        "--datasets",
        "xor",
        "--decoys",
        "2",
        "--n-samples",
        "160",
        "--folds",
        "2",
        "--jobs",
        "1",
        "--methods",
        "rf,random",
        "--scorer-option",
        "fractions=0.5",
        "--quiet",
        "--store",
        str(store),
    ]
    assert main([*grid, "--scorer", "roar,kar,ground_truth", "--scorer-option", "repeats=2"]) == 0
    assert "mean roar_accuracy over folds" in capsys.readouterr().out
    with ResultStore(store, readonly=True) as db:
        curves, cells = db.curves(), db.cells()
    assert set(curves["curve"]) == {"roar", "kar"} and sorted(curves["x"].unique()) == [0.0, 0.5]
    assert set(curves["replicate"]) == {0, 1}
    assert '"repeats": 2' in cells.loc[cells["scorer"] == "roar", "scorer_params"].iloc[0]
    md = build_report(load_results(store)).markdown
    assert "## roar leaderboard" in md and "## kar beside the ground truth" in md
    # another setting of the same scorer is another result, kept apart in the store, leaderboard and report (roar
    # alone runs again: what follows reads roar's results)
    assert main([*grid, "--scorer", "roar", "--scorer-option", "repeats=1"]) == 0
    with ResultStore(store, readonly=True) as db:
        board = leaderboard(db.scores(), "roar_accuracy", catalogue=db.catalogue())
    # rf, and random judged on the MLP preset the grid explains (the CLI's default) and on the forest rf explains,
    # x 2 settings, + a chance row per model
    assert {i for i in board.index if i.startswith("rf [roar {")} and len(board) == 8
    assert {"chance@screened_mlp", "chance@forest"} <= set(board.index)
    assert len([i for i in board.index if i.startswith("random@forest [roar {")]) == 2
    md = build_report(load_results(store)).markdown
    assert md.count("## roar leaderboard") == 2


@pytest.mark.parametrize(
    "option, message",
    [
        ("repeats=0", "repeats must be a whole number of at least 1"),
        ("fractions=0.1,1.5", "fractions must lie strictly between 0 and 1"),
        ("keep=true", "takes the option(s) keep"),
        ("repeats", "--scorer-option takes NAME=VALUE"),
        ("channel_aggregation=median", "channel_aggregation must be one of"),
    ],
)
def test_bad_scorer_options_are_one_line_exit_2_and_write_nothing(tmp_path, capsys, option, message):
    from synthbench.run import main

    store = tmp_path / "r.sqlite"
    code = main(
        [
            "--datasets",
            "xor",
            "--methods",
            "random",
            "--scorer",
            "roar,kar,ground_truth",
            "--scorer-option",
            option,
            "--store",
            str(store),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not store.exists()
