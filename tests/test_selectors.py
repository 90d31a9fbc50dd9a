"""Concrete autoencoder, FsNet, DeepPINK and the knockoff constructions."""

import numpy as np
import pytest
import torch
from conftest import fold_of, tiny_dataset

import synthbench.methods.selectors as sel  # registers the methods
from synthbench.datasets import Dataset
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.selection.knockoffs import (
    equicorrelated_s,
    gaussian_knockoffs,
    looks_uniform,
    make_knockoffs,
    uniform_knockoffs,
)

SELECTORS = ["concrete_autoencoder", "fsnet", "deeppink"]


@pytest.fixture(scope="module")
def easy_fold():
    return fold_of(tiny_dataset(p=8, n=300))


def _run(name, data):
    return run_method(get_method(name), data, SharedModels(data))


@pytest.mark.parametrize("name", SELECTORS)
def test_registered_not_default_and_needs_nothing(name):
    spec = get_method(name)
    assert spec.needs_for("tabular") == () and spec.inputs == ("tabular",) and spec.default is False


@pytest.mark.parametrize("name", SELECTORS)
def test_shape_finite_nonnegative_deterministic_and_ranks_the_relevant_feature_first(name, easy_fold):
    a, b = _run(name, easy_fold), _run(name, easy_fold)
    assert a.scores.shape == (easy_fold.n_features,)
    assert np.all(np.isfinite(a.scores)) and np.all(a.scores >= 0)
    np.testing.assert_array_equal(a.scores, b.scores)
    if name != "fsnet":  # FsNet cannot tell i.i.d. columns apart: see the test after this one
        assert np.argmax(a.scores) == np.flatnonzero(easy_fold.relevant)[0]


def test_fsnet_ranks_the_relevant_features_first_by_their_histograms():
    """FsNet predicts each feature's selection logits from its histogram, so on i.i.d. columns
    (``easy_fold``) it only sees sampling noise and its scores tie to 1e-3. Here the three relevant
    columns have marginals of their own (arcsine, bell, skewed) among 17 uniform ones; told the true
    k (``n_select=3``), its k-run must select exactly them: they rank first, a whole tier (``2 *
    tier + max probability``) above the rest. A random ranking puts them first with probability
    1 / C(20, 3) = 1 / 1140."""
    g = np.random.default_rng(0)
    n, p = 300, 20
    shaped = np.stack([g.beta(0.5, 0.5, n), g.beta(4, 4, n), g.beta(4, 1.5, n)], axis=1) * 2 - 1
    X = np.concatenate([shaped, g.uniform(-1, 1, (n, p - 3))], axis=1).astype(np.float32)
    z = (X[:, :3] - X[:, :3].mean(axis=0)) / X[:, :3].std(axis=0)
    y = (z.sum(axis=1) > 0).astype(np.int64)
    relevant = np.zeros(p, dtype=bool)
    relevant[:3] = True
    data = fold_of(Dataset(X, y, relevant, None, "shaped", {"p": p}, 0))
    spec = get_method("fsnet")
    scores = spec.fn(data, SharedModels(data), data.rng("method", "fsnet"), **{**spec.params, "n_select": 3})
    rel = np.flatnonzero(data.relevant)
    assert set(np.argsort(-scores)[:3]) == set(rel), scores
    assert scores[rel].min() > np.delete(scores, rel).max() + 1.0, scores


def test_seed_changes_the_result(easy_fold):
    models = SharedModels(easy_fold)
    spec = get_method("deeppink")
    a = spec.fn(easy_fold, models, np.random.default_rng(0), **spec.params)
    b = spec.fn(easy_fold, models, np.random.default_rng(1), **spec.params)
    assert not np.array_equal(a, b)


def test_temperature_schedule_endpoints_and_monotone():
    t = sel.temperature_schedule(500, 10.0, 0.01)
    assert t.shape == (500,) and t[0] == 10.0 and t[-1] == 0.01
    assert np.all(np.diff(t) < 0)
    np.testing.assert_allclose(np.diff(np.log(t)), np.log(0.001) / 499)  # exponential
    assert sel.temperature_schedule(1).tolist() == [10.0]


def test_fit_concrete_uses_the_whole_schedule():
    g = np.random.default_rng(0)
    X = g.uniform(-1, 1, (100, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    fit = sel.fit_concrete(X, y, 3, rng=np.random.default_rng(0), epochs=3, batch_size=32)
    assert len(fit.temperatures) == sel.n_steps(100, 3, 32) == 12
    assert fit.temperatures[0] == 10.0 and fit.temperatures[-1] == 0.01
    assert fit.probs.shape == (3, 5) and fit.selected.shape == (3,)
    np.testing.assert_allclose(fit.probs.sum(axis=1), 1.0)


def test_gumbel_softmax_weights_rows_sum_to_one_and_hard_is_argmax():
    import torch

    logits = torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, 0.0]])
    w = sel.gumbel_softmax_weights(logits, 0.5, torch.Generator().manual_seed(0))
    torch.testing.assert_close(w.sum(dim=1), torch.ones(2))
    hard = sel.gumbel_softmax_weights(logits, 0.5, None, hard=True)
    assert hard.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]


def test_tiered_importance_orders_k_run_then_2k_additions_then_probability():
    probs_k = np.array([[0.1, 0.6, 0.1, 0.1, 0.1]])  # selects 1
    probs_2k = np.array([[0.1, 0.5, 0.2, 0.1, 0.1], [0.05, 0.05, 0.05, 0.8, 0.05]])  # selects 1, 3
    imp = sel.tiered_importance(probs_k, probs_2k)
    assert list(np.argsort(-imp)[:3]) == [1, 3, 2]
    assert imp[1] > imp[3] > imp[2] > imp[0] >= 0


def test_k_larger_than_p_is_handled():
    data = fold_of(tiny_dataset(p=3, n=90))
    for name in ["concrete_autoencoder", "fsnet"]:
        assert _run(name, data).scores.shape == (3,)


def test_histogram_embedding_shape_and_standardisation():
    X = np.random.default_rng(0).uniform(-1, 1, (200, 6))
    emb = sel.histogram_embedding(X, 20)
    assert emb.shape == (6, 20) and np.all(np.isfinite(emb))
    np.testing.assert_allclose(emb.mean(axis=0), 0.0, atol=1e-5)


def test_deeppink_l1_penalty_shrinks_the_first_layer():
    g = np.random.default_rng(123)  # a data seed different from the knockoff seed below
    X = g.uniform(-1, 1, (200, 10)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    fits = [
        sel.fit_deeppink(X, y, knockoffs="uniform", epochs=30, rng=np.random.default_rng(0), l1=lam)
        for lam in (0.0, 0.01, 0.05)
    ]
    mass = [np.abs(f.first_layer).sum() for f in fits]
    assert [f.l1 for f in fits] == [0.0, 0.01, 0.05]
    assert mass[0] > mass[1] > mass[2] and mass[2] < 0.8 * mass[0]
    auto = sel.fit_deeppink(X, y, knockoffs="uniform", epochs=1, rng=np.random.default_rng(0), l1="auto")
    assert auto.l1 == pytest.approx(0.05 * np.sqrt(2 * np.log(10) / 200))


def test_deeppink_statistic_prefers_the_feature_over_its_knockoff():
    g = np.random.default_rng(123)
    X = g.uniform(-1, 1, (300, 6)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    fit = sel.fit_deeppink(X, y, knockoffs="uniform", rng=np.random.default_rng(0))
    assert fit.knockoffs == "uniform"
    assert np.argmax(fit.statistics) == 0 and fit.statistics[0] > 0


# --------------------------------------------------------------------------- knockoffs


def test_gaussian_knockoffs_satisfy_the_swap_covariance():
    g = np.random.default_rng(0)
    p, n = 4, 60000
    A = g.normal(size=(p, p))
    sigma = A @ A.T / p + np.eye(p) * 0.5
    X = g.multivariate_normal(np.zeros(p), sigma, size=n)
    Xk = gaussian_knockoffs(X, np.random.default_rng(1), mu=np.zeros(p), sigma=sigma)
    sd = np.sqrt(np.diag(sigma))
    s = 0.999 * equicorrelated_s(sigma / np.outer(sd, sd)) * sd**2
    joint = np.cov(np.hstack([X, Xk]).T)
    tol = 0.05 * np.abs(sigma).max()
    np.testing.assert_allclose(joint[p:, p:], sigma, atol=tol)  # cov(X~) = Sigma
    np.testing.assert_allclose(joint[:p, p:], sigma - np.diag(s), atol=tol)  # cov(X, X~) = Sigma - diag(s)
    assert s.min() > 0.05


def test_gaussian_knockoffs_with_estimated_covariance_and_p_larger_than_n():
    g = np.random.default_rng(0)
    X = g.normal(size=(30, 50))
    Xk = gaussian_knockoffs(X, np.random.default_rng(1))
    assert Xk.shape == X.shape and np.all(np.isfinite(Xk))
    one = gaussian_knockoffs(X[:, :1], np.random.default_rng(1))  # p = 1: an independent redraw
    assert one.shape == (30, 1) and np.all(np.isfinite(one))


def test_uniform_knockoffs_are_independent_with_the_same_marginals():
    g = np.random.default_rng(0)
    X = g.uniform(-1, 1, (20000, 3))
    Xk = uniform_knockoffs(X, np.random.default_rng(1), low=-1.0, high=1.0)
    assert Xk.min() >= -1 and Xk.max() <= 1
    np.testing.assert_allclose(Xk.mean(axis=0), 0.0, atol=0.03)
    np.testing.assert_allclose(Xk.var(axis=0), 1 / 3, atol=0.02)
    corr = np.corrcoef(np.hstack([X, Xk]).T)
    np.testing.assert_allclose(corr, np.eye(6), atol=0.03)
    assert looks_uniform(Xk)


def test_auto_knockoffs_pick_uniform_only_for_uniform_looking_data():
    g = np.random.default_rng(0)
    U = g.uniform(-1, 1, (300, 5))
    assert looks_uniform(U) and make_knockoffs(U, g)[1] == "uniform"
    N = np.clip(g.normal(scale=0.4, size=(300, 5)), -1, 1)  # inside [-1, 1] but not uniform
    assert not looks_uniform(N) and make_knockoffs(N, g)[1] == "gaussian"
    assert make_knockoffs(U * 2, g)[1] == "gaussian"  # outside [-1, 1]
    with pytest.raises(ValueError, match="knockoffs"):
        make_knockoffs(U, g, "bogus")


def test_the_2023_deeppink_network_and_statistic_are_the_papers():
    """src/deeppink.py at 06afd2e: pair weights start at 0.1, biases at 0; W = (w1 v)^2 - (w1~ v)^2."""
    from synthbench.methods.deeppink_2023 import PairedDeepPink
    from synthbench.models.mlp import MLPConfig, build_seeded_mlp

    g = torch.Generator().manual_seed(0)
    net = PairedDeepPink(build_seeded_mlp(5, MLPConfig(), g), 5, g).eval()
    assert torch.all(net.pair_weight == 0.1) and torch.all(net.pair_bias == 0) and torch.all(net.feature_bias == 0)
    with torch.no_grad():
        net.pair_weight.copy_(torch.randn(5, 2, generator=g))
        net.pair_bias.copy_(torch.randn(5, generator=g))
    pairs = torch.randn(7, 5, 2, generator=g)
    a = pairs[:, :, 0] * net.pair_weight[:, 0] + pairs[:, :, 1] * net.pair_weight[:, 1] + net.pair_bias
    torch.testing.assert_close(net(pairs), net.mlp(a * net.feature_weight[:, 0] + net.feature_bias))
    linears = [m.weight.detach().double().numpy() for m in net.mlp if isinstance(m, torch.nn.Linear)]
    chain = (linears[2] @ linears[1] @ linears[0]).reshape(-1)
    v = net.feature_weight.detach().double().numpy()[:, 0] * chain
    w1 = net.pair_weight.detach().double().numpy()
    np.testing.assert_allclose(net.statistics(), (w1[:, 0] * v) ** 2 - (w1[:, 1] * v) ** 2, rtol=1e-12)
    spec = get_method("deeppink_2023")
    assert spec.params["training"] == "passemiers2023"  # the 2023 loop: noisy validation, final weights kept


def test_the_2023_gaussian_knockoffs_have_the_papers_swap_covariance_and_are_affine_equivariant():
    from synthbench.selection.knockoffs import gaussian_knockoffs_2023

    g = np.random.default_rng(0)
    A = g.normal(size=(4, 4))
    X = g.multivariate_normal(np.arange(4.0), A @ A.T + np.eye(4), size=40_000)
    Xt = gaussian_knockoffs_2023(X, np.random.default_rng(1), eps=0.0)
    C = np.cov(X, rowvar=False)
    sigma = 0.8 * np.diag(np.diag(C)) + 0.2 * C
    S = np.diag(np.diag(sigma))
    B = np.eye(4) - np.linalg.solve(sigma, S)  # X_tilde = mu + (X - mu) B + noise of covariance V
    V = 2 * S - S @ np.linalg.solve(sigma, S)
    joint = np.cov(np.hstack([X, Xt]), rowvar=False)
    scale = np.sqrt(np.outer(np.diag(C), np.diag(C)))
    # Built for the shrunk covariance, not the data's: the swap property holds for sigma only.
    np.testing.assert_allclose(joint[:4, 4:] / scale, C @ B / scale, atol=0.02)
    np.testing.assert_allclose(joint[4:, 4:] / scale, (B.T @ C @ B + V) / scale, atol=0.02)
    np.testing.assert_allclose(sigma @ (np.eye(4) - np.linalg.solve(sigma, S)), sigma - S, atol=1e-12)
    # Per-column affine maps commute with the construction (so the paper's "knockoffs, then
    # standardise" equals "standardise, then knockoffs" draw for draw).
    m, d = X.mean(axis=0), X.std(axis=0)
    np.testing.assert_allclose(
        gaussian_knockoffs_2023((X - m) / d, np.random.default_rng(1), eps=0.0), (Xt - m) / d, atol=1e-8
    )


def test_auto_2023_knockoffs_use_the_papers_gaussian_construction_off_the_uniform_box():
    g = np.random.default_rng(0)
    assert make_knockoffs(g.uniform(-1, 1, size=(500, 3)), g, "auto_2023")[1] == "uniform"
    assert make_knockoffs(g.normal(size=(500, 3)), g, "auto_2023")[1] == "gaussian_2023"
