"""Embedded feature selection methods: LassoNet, CancelOut, Deep Lasso and bootstrap ensembles."""

import numpy as np
import pytest
import torch
from conftest import fold_of, tiny_dataset

import synthbench.methods.embedded as E  # registers the methods
from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels

NAMES = ["lassonet", "cancelout_sigmoid", "cancelout_softmax", "deep_lasso"]
NEURAL = ["cancelout_sigmoid", "cancelout_softmax", "deep_lasso"]


@pytest.fixture(scope="module")
def orange_fold():
    return fold_of(datasets.make("orange_skin", n_samples=240, n_decoys=6, seed=0))


@pytest.fixture(scope="module")
def easy_fold():
    return fold_of(tiny_dataset(p=8, n=300))


def run(name, data, **params):
    spec = get_method(name)
    return np.asarray(spec.fn(data, SharedModels(data), data.rng("method", name), **{**spec.params, **params}))


def test_registered_not_default_and_needing_no_model():
    for name in NAMES:
        spec = get_method(name)
        assert not spec.default and spec.needs_for("tabular") == ()
    for name in NEURAL:
        assert get_method(name).params["ensemble"] == 1


@pytest.mark.parametrize("name", NAMES)
def test_shape_finiteness_and_determinism(name, orange_fold):
    models = SharedModels(orange_fold)
    a = run_method(get_method(name), orange_fold, models).scores
    b = run_method(get_method(name), orange_fold, models).scores
    assert a.shape == (orange_fold.n_features,) and np.all(np.isfinite(a))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_ranks_the_relevant_feature_first_on_an_easy_rule(name, easy_fold):
    scores = run(name, easy_fold)
    assert np.argmax(scores) == np.flatnonzero(easy_fold.relevant)[0]


def test_global_torch_generator_is_left_alone(easy_fold):
    state = torch.random.get_rng_state()
    run("lassonet", easy_fold)
    run("cancelout_sigmoid", easy_fold)
    assert torch.equal(state, torch.random.get_rng_state())


# --- LassoNet: from path to finite scores ------------------------------------------------------


def test_path_scores_replace_inf_and_break_ties():
    leave = np.array([2.0, np.inf, 1.0, 2.0, np.inf, 0.0, 1.0])
    tb = np.array([0.3, 0.1, 0.5, 0.7, 0.9, 0.0, 0.5])
    s = E.path_scores(leave, tb, multiplier=1.5)
    assert np.all(np.isfinite(s))
    # Never leaving beats every finite lambda; among them the larger tie-break wins.
    assert s[4] > s[1] > s[3] > s[0] > s[2] == s[6] > s[5]
    # inf -> 1.5 * 2; the tie-break adds less than half the smallest gap between lambdas (1).
    np.testing.assert_allclose(s[[1, 4]], 3.0 + 0.5 * np.array([0.1, 0.9]) / 0.9)
    assert np.all(np.abs(s - np.where(np.isinf(leave), 3.0, leave)) <= 0.5)
    # A later leave wins whatever the tie-break.
    assert (
        E.path_scores(np.array([1.0, 1.001]), np.array([100.0, 0.0]))[1]
        > E.path_scores(np.array([1.0, 1.001]), np.array([100.0, 0.0]))[0]
    )


def test_path_scores_edge_cases():
    np.testing.assert_array_equal(E.path_scores(np.array([np.inf, np.inf]), np.array([0.0, 0.0])), [1.0, 1.0])
    np.testing.assert_array_equal(E.path_scores(np.array([3.0]), np.array([0.0])), [3.0])
    with pytest.raises(ValueError):
        E.path_scores(np.array([np.nan]), np.array([0.0]))
    with pytest.raises(ValueError):
        E.path_scores(np.array([1.0]), np.array([0.0]), multiplier=1.0)


def test_lassonet_leave_lambdas_match_the_package(easy_fold, monkeypatch):
    from lassonet import LassoNetClassifier

    seen = {}
    original = LassoNetClassifier.path

    def spy(self, *args, **kwargs):
        hist = original(self, *args, **kwargs)
        seen["imp"] = self.feature_importances_.numpy().astype(np.float64)
        return hist

    monkeypatch.setattr(LassoNetClassifier, "path", spy)
    leave, norm = E.fit_lassonet(easy_fold.X_train, easy_fold.y_train, 3, **get_method("lassonet").params)
    np.testing.assert_allclose(leave, seen["imp"], rtol=1e-6)  # the package stores float32
    assert np.all(norm > 0)


# --- penalties ---------------------------------------------------------------------------------


def test_cancelout_gates_start_equal():
    sig, soft = E.CancelOutGate(5, "sigmoid"), E.CancelOutGate(5, "softmax")
    np.testing.assert_allclose(sig.gates().detach().numpy(), 1 / (1 + np.exp(-4.0)), rtol=1e-6)
    np.testing.assert_allclose(soft.gates().detach().numpy(), 1.0, rtol=1e-6)
    gate = E.CancelOutGate(4, "sigmoid")
    with torch.no_grad():
        gate.weight.copy_(torch.tensor([1.0, -2.0, 3.0, 0.0]))
    w = np.array([1.0, -2.0, 3.0, 0.0]) / 4
    expected = -2.0 * np.var(w, ddof=1) + 0.5 * np.abs(w).sum()
    assert float(E.cancelout_penalty(gate.weight, 2.0, 0.5).detach()) == pytest.approx(expected, rel=1e-6)


def test_the_2023_cancelout_gates_and_penalty_are_the_papers():
    """src/cancelout.py at 06afd2e: weights start at 1, an unscaled softmax, a signed sum in the penalty."""
    sig = E.CancelOutGate(5, "sigmoid", init=1.0)
    soft = E.CancelOutGate(5, "softmax", init=1.0, scaled=False)
    np.testing.assert_allclose(sig.gates().detach().numpy(), 1 / (1 + np.exp(-1.0)), rtol=1e-6)
    np.testing.assert_allclose(soft.gates().detach().numpy(), 1 / 5, rtol=1e-6)
    with torch.no_grad():
        sig.weight.copy_(torch.tensor([1.0, -2.0, 3.0, 0.0, -1.0]))
    w = np.array([1.0, -2.0, 3.0, 0.0, -1.0]) / 5
    signed = float(E.cancelout_penalty(sig.weight, 0.2, 0.1, signed=True).detach())
    assert signed == pytest.approx(-0.2 * np.var(w, ddof=1) + 0.1 * w.sum(), rel=1e-6)
    for name, params in [
        ("cancelout_sigmoid_2023", {"lambda_var": 0.2, "signed_l1": True}),
        ("cancelout_softmax_2023", {"lambda_var": 0.0, "lambda_l1": 0.0, "softmax_scaled": False}),
    ]:
        spec = get_method(name)
        assert {k: spec.params[k] for k in params} == params and spec.params["training"] == "passemiers2023"
        assert spec.params["gate_lr"] is None  # the gate trains in the network's Adam group, as there


def test_a_gate_without_its_own_learning_rate_trains_with_the_network(easy_fold):
    X, y = easy_fold.X_train, easy_fold.y_train
    common = dict(activation="sigmoid", lambda_var=0.0, lambda_l1=0.0, init=1.0)
    ((own, _),) = E.fit_cancelout([X], [y], [0], gate_lr=0.05, **common)
    ((shared, _),) = E.fit_cancelout([X], [y], [0], gate_lr=None, **common)
    # At the network's 5e-4 a gate weight barely moves from 1; at its own 0.05 it moves far more.
    start = 1 / (1 + np.exp(-1.0))
    assert np.abs(shared - start).max() < np.abs(own - start).max()


@pytest.mark.parametrize("activation", ["sigmoid", "softmax"])
def test_cancelout_penalty_is_applied(activation, easy_fold):
    def gates(lambda_var, lambda_l1):
        ((values, _),) = E.fit_cancelout(
            [easy_fold.X_train],
            [easy_fold.y_train],
            [0],
            activation=activation,
            lambda_var=lambda_var,
            lambda_l1=lambda_l1,
            gate_lr=0.01,
        )
        return values

    plain = gates(0.0, 0.0)
    assert not np.array_equal(plain, gates(1.0, 0.1))
    # A strong L1 pull on the raw weights drags every sigmoid gate towards sigmoid(0) = 0.5.
    if activation == "sigmoid":
        assert np.abs(gates(0.0, 50.0) - 0.5).mean() < np.abs(plain - 0.5).mean()


def test_deep_lasso_penalty_changes_the_model(easy_fold):
    X, y = easy_fold.X_train, easy_fold.y_train
    plain = E.fit_deep_lasso(X, y, 0, lam=0.0)
    penalised = E.fit_deep_lasso(X, y, 0, lam=0.1)
    assert not torch.equal(plain[1].weight, penalised[1].weight)
    # What the penalty targets, the summed input-gradient norms of the loss, comes out smaller.
    g0 = E.input_gradient_norms(plain, X, y, torch.device("cpu"))
    g1 = E.input_gradient_norms(penalised, X, y, torch.device("cpu"))
    assert g1.sum() < g0.sum()


def test_deep_lasso_penalty_value():
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], requires_grad=True)
    loss = (x[:, 0] * 2.0 + x[:, 1] ** 2).mean()
    # dL/dx = [[1, 2], [1, -1]] (column 0: 2/2; column 1: 2 x / 2)
    value = E.deep_lasso_penalty(x, loss, 0.5)
    assert float(value.detach()) == pytest.approx(0.5 * (np.sqrt(2.0) + np.sqrt(5.0)), rel=1e-6)
    value.backward()  # differentiable through the gradient (create_graph=True)
    assert x.grad is not None and torch.all(torch.isfinite(x.grad))


# --- ensembles ---------------------------------------------------------------------------------


def test_bootstrap_ensemble_averages_members_with_derived_seeds(orange_fold):
    calls = []

    def fit(d, seed):
        calls.append((d.X_train.shape, seed))
        return d.X_train.mean(axis=0).astype(np.float64)

    rng = np.random.default_rng(5)
    got = E.bootstrap_ensemble(fit, orange_fold, rng, 3)
    seeds = E.ensemble_seeds(np.random.default_rng(5), 3)
    n = orange_fold.X_train.shape[0]
    expected = np.mean([orange_fold.X_train[E.bootstrap_indices(n, s)].mean(axis=0) for s in seeds], axis=0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert [c[1] for c in calls] == seeds and all(c[0] == orange_fold.X_train.shape for c in calls)
    single = E.bootstrap_ensemble(fit, orange_fold, np.random.default_rng(5), 1)
    np.testing.assert_allclose(single, orange_fold.X_train.mean(axis=0), rtol=1e-5, atol=1e-6)  # no resampling
    with pytest.raises(ValueError):
        E.ensemble_seeds(rng, 0)


@pytest.mark.parametrize("name", ["cancelout_sigmoid", "deep_lasso"])
def test_ensemble_of_three_is_the_mean_of_three_runs_by_hand(name):
    orange_fold = fold_of(datasets.make("orange_skin", n_samples=150, n_decoys=2, seed=2))
    spec = get_method(name)
    one = run(name, orange_fold)
    three = run(name, orange_fold, ensemble=3)
    assert not np.array_equal(one, three)
    seeds = E.ensemble_seeds(orange_fold.rng("method", name), 3)
    n = orange_fold.X_train.shape[0]
    members = []
    for s in seeds:
        rows = E.bootstrap_indices(n, s)
        X, y = orange_fold.X_train[rows], orange_fold.y_train[rows]
        if name == "deep_lasso":
            module = E.fit_deep_lasso(X, y, s, lam=spec.params["lam"])
            members.append(
                E.input_gradient_norms(module, orange_fold.X_explain, orange_fold.y_explain, torch.device("cpu"))
            )
        else:
            members.append(
                E.fit_cancelout(
                    [X],
                    [y],
                    [s],
                    activation="sigmoid",
                    lambda_var=spec.params["lambda_var"],
                    lambda_l1=spec.params["lambda_l1"],
                    gate_lr=spec.params["gate_lr"],
                )[0][0]
            )
    np.testing.assert_allclose(three, np.mean(members, axis=0), rtol=1e-12)
