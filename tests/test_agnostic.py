"""The model-agnostic methods (KernelSHAP, LIME, held-out permutation, split count): what their packages compute,
on the output the other methods of the model explain."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from synthbench.methods import agnostic

W = np.array([3.0, -2.0, 1.0, 0.0])


def _linear(w: np.ndarray):
    return lambda X: np.asarray(X, dtype=np.float64) @ w + 0.5


class _Linear(torch.nn.Module):
    """Logits ``x @ W.T`` (one column per output)."""

    def __init__(self, weights: np.ndarray) -> None:
        super().__init__()
        self.weights = torch.as_tensor(weights, dtype=torch.float32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weights.T


def _model(weights: np.ndarray, classes: int) -> SimpleNamespace:
    return SimpleNamespace(module=_Linear(weights), device="cpu", classes_=np.arange(classes))


def test_kernel_shap_is_the_exact_shapley_value_of_a_linear_output_against_its_background():
    """For f(x) = w.x + b, the Shapley value of feature j against a background is w_j (x_j - mean background_j);
    with 4 features the package enumerates every coalition, so KernelSHAP is exact."""
    rng = np.random.default_rng(0)
    X, background = rng.normal(size=(7, 4)), rng.normal(size=(20, 4))
    got = agnostic.kernel_shap_values(_linear(W), X, background, seed=3)
    np.testing.assert_allclose(got, W * (X - background.mean(axis=0)), atol=1e-8)
    # 12 features: the package's default regularisation keeps at most 10 of them per row, seeded
    w12, X12 = rng.normal(size=12), rng.normal(size=(3, 12))
    sparse = agnostic.kernel_shap_values(_linear(w12), X12, rng.normal(size=(10, 12)), seed=3, nsamples=200)
    assert ((sparse != 0).sum(axis=1) <= 10).all()
    again = agnostic.kernel_shap_values(_linear(w12), X12, rng.normal(size=(10, 12)), seed=3, nsamples=200)
    assert again.shape == sparse.shape


def test_kernel_shap_draws_from_its_seed_and_leaves_numpys_global_generator_as_it_was():
    rng = np.random.default_rng(1)
    w, X, background = rng.normal(size=14), rng.normal(size=(2, 14)), rng.normal(size=(8, 14))
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    one = agnostic.kernel_shap_values(_linear(w), X, background, seed=5, nsamples=60, l1_reg=False)
    assert np.array_equal(np.random.get_state()[1], before)
    same = agnostic.kernel_shap_values(_linear(w), X, background, seed=5, nsamples=60, l1_reg=False)
    other = agnostic.kernel_shap_values(_linear(w), X, background, seed=6, nsamples=60, l1_reg=False)
    assert np.array_equal(one, same) and not np.array_equal(one, other)


def test_lime_weighs_the_features_as_the_linear_output_uses_them_and_is_seeded():
    """On f(x) = w.x with independent features of one scale, LIME's mean |weight| orders the features as |w| does,
    the unused feature last and far below; each weight's sign is the effect of the row's own quartile."""
    rng = np.random.default_rng(2)
    X_train, X = rng.normal(size=(300, 4)), rng.normal(size=(30, 4))
    got = agnostic.lime_values(_linear(W), X, X_train, seed=4, num_samples=1000)
    mean = np.abs(got).mean(axis=0)
    assert list(np.argsort(-mean)) == [0, 1, 2, 3] and mean[3] < 0.25 * mean[2]
    top = X[:, 0] > np.quantile(X_train[:, 0], 0.75)  # rows in feature 0's top quartile: w_0 > 0 lifts them
    assert (got[top, 0] > 0).all()
    assert np.array_equal(got, agnostic.lime_values(_linear(W), X, X_train, seed=4, num_samples=1000))
    assert not np.array_equal(got, agnostic.lime_values(_linear(W), X, X_train, seed=5, num_samples=1000))


def test_a_binary_model_s_single_output_and_each_row_s_own_label_with_more_classes():
    """The explained output is the one logit of a binary model; with three classes, each row's own label's."""
    rng = np.random.default_rng(4)
    X_train, X = rng.normal(size=(40, 4)), rng.normal(size=(9, 4))
    weights = rng.normal(size=(3, 4))
    data = SimpleNamespace(X_explain=X, y_explain=np.arange(9) % 3, kind="tabular", X_train=X_train)
    background = X_train[:10]
    explain = lambda f, rows: agnostic.kernel_shap_values(f, rows, background, seed=0)  # noqa: E731
    got = agnostic._per_target(explain, _model(weights, 3), data)
    want = weights[data.y_explain] * (X - background.mean(axis=0))
    np.testing.assert_allclose(got, want, atol=1e-5)  # float32 logits
    binary = agnostic._per_target(explain, _model(weights[:1], 2), data)
    np.testing.assert_allclose(binary, weights[0] * (X - background.mean(axis=0)), atol=1e-5)


@pytest.fixture(scope="module")
def booster_fold():
    from synthbench.models import SharedModels
    from synthbench.protocol import setting_folds

    fold = setting_folds("xor", n_samples=400, seed=0, n_folds=2, n_decoys=10)[0]
    return fold, SharedModels(fold)


def test_held_out_permutation_and_split_count_read_the_booster_as_trained(booster_fold):
    """Split counts are LightGBM's, zero on the columns the booster's screening dropped; permuting a column the
    booster does not read changes no held-out prediction (0 exactly), and the relevant columns lose the most."""
    from synthbench.methods import get_method, run_method

    fold, models = booster_fold
    booster = models.get("gbm")
    splits = run_method(get_method("gbm_split_count"), fold, models).scores
    np.testing.assert_array_equal(splits, booster.booster.feature_importance(importance_type="split"))
    unread = np.setdiff1d(np.arange(fold.X_train.shape[1]), booster.features)
    assert len(unread) and (splits[unread] == 0).all()
    drop = run_method(get_method("gbm_held_out_permutation"), fold, models).scores
    assert (drop[unread] == 0).all()
    assert set(np.argsort(-drop)[:2]) == set(np.flatnonzero(fold.relevant))
