"""Method-specific checks (the battery every registered method must pass is tests/test_battery.py)."""

import numpy as np
import pytest
from conftest import fold_of, tiny_dataset

from synthbench import datasets
from synthbench.methods import default_methods, get_method, method_names, register_method, registry, run_method
from synthbench.models import SharedModels
from synthbench.protocol import MethodOutput

ALL = [n for n in method_names() if "tabular" in get_method(n).inputs]
IMAGES = [n for n in method_names() if "image" in get_method(n).inputs]


_SHARED: dict[int, tuple] = {}


def run(name, data):
    """Run ``name`` on ``data``, training each model kind once per fold across the whole module."""
    if id(data) not in _SHARED:
        _SHARED[id(data)] = (data, SharedModels(data))  # keep data alive so its id is not reused
    return run_method(get_method(name), data, _SHARED[id(data)][1])


@pytest.fixture(scope="module")
def xor_fold():
    return fold_of(datasets.make("xor", n_samples=240, n_decoys=6, seed=1))


@pytest.fixture(scope="module")
def shapes_fold():
    return fold_of(datasets.make("shapes", n_samples=96, n_decoys=2, seed=1, size=16))


def test_a_method_refuses_inputs_it_does_not_take(shapes_fold, xor_fold):
    with pytest.raises(ValueError, match="does not accept image inputs"):
        run("rf", shapes_fold)
    with pytest.raises(ValueError, match="does not accept tabular inputs"):
        run("sobel", xor_fold)


def test_random_control_depends_on_the_seed_and_fold():
    a = run("random", fold_of(tiny_dataset(p=50, seed=0)))
    b = run("random", fold_of(tiny_dataset(p=50, seed=1)))
    c = run("random", fold_of(tiny_dataset(p=50, seed=0), fold=1))
    assert not np.array_equal(a.scores, b.scores) and not np.array_equal(a.scores, c.scores)


def test_informed_methods_beat_chance_on_an_easy_rule():
    data = fold_of(tiny_dataset(p=20, n=300))
    # lrp_zplus is left out: the z+ rule assumes non-negative layer inputs, and these are in
    # [-1, 1], so on the first layer it ranks by positive weights rather than by use.
    neural = [n for n in ALL if get_method(n).needs_for("tabular") == ("mlp",) and n != "lrp_zplus"]
    for name in ["rf", "rf_permutation", "treeshap", "mi", "anova", "relief", "mrmr", "mrmr_pymrmr", *neural]:
        assert np.argmax(np.abs(run(name, data).scores)) == np.flatnonzero(data.relevant)[0], name


def test_forest_is_trained_once_and_shared(xor_fold):
    models = SharedModels(xor_fold)
    for name in ["rf", "treeshap", "rf_permutation"]:
        run_method(get_method(name), xor_fold, models)
    assert models.trainings == 1
    assert set(models.info["forest"]) >= {"test_accuracy", "test_auroc", "train_seconds"}


def test_treeshap_local_values_sum_to_the_prediction(xor_fold):
    models = SharedModels(xor_fold)
    out = run_method(get_method("treeshap"), xor_fold, models)
    forest = models.get("forest")
    proba = forest.predict_proba(xor_fold.X_explain)[:, 1]
    # Local accuracy: f(x) = E[f] + sum of SHAP values, with the same E[f] for every row.
    offset = proba - out.local.sum(axis=1)
    assert np.ptp(offset) < 1e-6
    np.testing.assert_allclose(out.scores, np.abs(out.local).mean(axis=0))


def test_treeshap_all_rows_averages_over_the_training_and_held_out_rows(xor_fold):
    import shap

    models = SharedModels(xor_fold)
    out = run_method(get_method("treeshap_all_rows"), xor_fold, models)
    rows = np.concatenate([xor_fold.X_train, xor_fold.X_test])
    values = np.asarray(shap.TreeExplainer(models.get("forest")).shap_values(rows, check_additivity=False))[:, :, 1]
    np.testing.assert_allclose(out.scores, np.abs(values).mean(axis=0), rtol=1e-12)
    assert out.local is None and not np.allclose(out.scores, run("treeshap", xor_fold).scores)


def test_mrmr_method_matches_pymrmr_method(xor_fold):
    np.testing.assert_array_equal(run("mrmr", xor_fold).scores, run("mrmr_pymrmr", xor_fold).scores)


def test_default_methods_are_registered():
    assert set(default_methods()) <= set(ALL) | set(IMAGES) and "sobel" in default_methods()
    assert {"random", "gbm_treeshap", "gbm_gain", "mi", "anova", "mrmr"} <= set(default_methods())
    assert not {"rf", "treeshap"} & set(default_methods())  # the forest learns too little by default


def test_malformed_outputs_are_rejected(tiny_fold):
    for bad, match in [
        (np.ones(2), "shape"),
        (np.array([np.nan, 1, 1, 1]), "NaN"),
        (MethodOutput(np.ones(4), np.ones((1, 4))), "local attributions"),
    ]:
        with (
            registry.METHODS.temporarily("bad", registry.MethodSpec("bad", lambda d, m, r, v=bad: v, "bad")),
            pytest.raises(ValueError, match=match),
        ):
            run("bad", tiny_fold)


def test_registering_twice_or_with_unknown_needs_fails():
    with pytest.raises(ValueError, match="already registered"):
        register_method("rf", description="dup")(lambda d, m, r: None)
    with pytest.raises(ValueError, match="unknown model kinds"):
        register_method("needs_a_vit", description="x", needs=("vit",))(lambda d, m, r: None)
    with pytest.raises(ValueError, match="input kinds"):
        register_method("on_audio", description="x", inputs=("audio",))(lambda d, m, r: None)
    with pytest.raises(KeyError, match="valid names"):
        get_method("nope")
