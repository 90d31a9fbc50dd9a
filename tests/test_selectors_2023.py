"""The 2023 benchmark's concrete autoencoder and FSNet, checked against their definitions; the 2023
variants of LassoNet, DeepPINK and CancelOut find the relevant features of an easy rule."""

import functools
import math

import numpy as np
import pytest
import torch
from conftest import fold_of, tiny_dataset

import synthbench.methods.selectors_2023 as s23
from synthbench.datasets import Dataset
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.models.layers import GaussianNoise, SeededDropout
from synthbench.scoring import GroundTruthScorer


@pytest.fixture(scope="module")
def easy_fold():
    return fold_of(tiny_dataset(p=6, n=240))


def test_cae_temperatures_follow_the_packages_per_step_decay():
    t = s23.cae_temperatures(1000, 10.0, 0.01)
    alpha = math.exp(math.log(0.01 / 10.0) / 1000)
    assert t.shape == (1000,) and t[0] == pytest.approx(10.0 * alpha) and t[-1] == pytest.approx(0.01)
    np.testing.assert_allclose(t[1:] / t[:-1], alpha)
    assert [s23.cae_batch_size(n) for n in (100, 833, 4095, 4096, 50_000)] == [16, 16, 16, 16, 195]
    with pytest.raises(ValueError):
        s23.cae_temperatures(0)


def test_cae_network_is_the_papers_keras_model():
    g = torch.Generator().manual_seed(0)
    net = s23._CAE2023(p=3000, n_neurons=40, generator=g)
    kinds = [type(m) for m in net.head]
    assert kinds == [
        GaussianNoise,
        torch.nn.Linear,
        SeededDropout,
        torch.nn.LeakyReLU,
        torch.nn.Linear,
        SeededDropout,
        torch.nn.LeakyReLU,
        torch.nn.Linear,
    ]
    assert [m.negative_slope for m in net.head if isinstance(m, torch.nn.LeakyReLU)] == [0.2, 0.2]
    assert net.head[0].sigma == 0.1 and [m.rate for m in net.head if isinstance(m, SeededDropout)] == [0.2, 0.2]
    dense = [m for m in net.head if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in dense] == [(40, 32), (32, 32), (32, 1)]
    assert all(torch.all(m.bias == 0) for m in dense)
    for m in dense:  # Glorot-uniform
        bound = math.sqrt(6.0 / (m.in_features + m.out_features))
        assert m.weight.abs().max() <= bound
    # keras' glorot_normal: truncated at two deviations of the unscaled normal, variance 2 / (fan_in + fan_out)
    w = net.logits.detach().double()
    std = math.sqrt(2.0 / 3040)
    assert w.std().item() == pytest.approx(std, rel=0.02)
    assert w.abs().max().item() <= 2 * std / 0.87962566103423978 + 1e-9
    net.eval()
    x = torch.randn(5, 3000, generator=g)
    with torch.no_grad():  # evaluation: the argmax columns feed the head, output in (0, 1)
        chosen = x[:, net.logits.argmax(dim=1)]
        np.testing.assert_allclose(net(x).numpy(), torch.sigmoid(net.head(chosen)).reshape(-1).numpy(), rtol=1e-6)


def test_seeded_dropout_is_inverted_dropout_from_its_generator():
    d = SeededDropout(0.2)
    x = torch.ones(200_000)
    d.generator = torch.Generator().manual_seed(1)
    a = d(x)
    assert set(torch.unique(a).tolist()) == {0.0, 1.25}
    assert (a == 0).double().mean().item() == pytest.approx(0.2, abs=0.005)
    d.generator = torch.Generator().manual_seed(1)
    assert torch.equal(a, d(x))
    assert torch.equal(d.eval()(x), x)


def test_cae_2023_is_told_the_true_k_and_scores_its_2k_run_for_best_2k(easy_fold, monkeypatch):
    calls = []
    real = s23.fit_cae_2023

    def spy(Xs, ys, n_neurons, *, epochs, **kw):
        calls.append((n_neurons, epochs))
        return real(Xs, ys, n_neurons, epochs=2, **kw)

    monkeypatch.setattr(s23, "fit_cae_2023", spy)
    out = run_method(get_method("concrete_autoencoder_2023"), easy_fold, SharedModels(easy_fold))
    assert calls == [(1, 300), (2, 30)]  # k = 1 relevant feature: a k-run of 300 epochs, a 2k-run of 30
    assert set(out.scores) <= {0.0, 1.0} and out.scores.sum() == 1
    assert set(out.scores_2k) <= {0.0, 1.0} and 1 <= out.scores_2k.sum() <= 2


def test_cae_2023_finds_an_easy_feature_more_often_than_chance_and_is_deterministic(easy_fold):
    def fit(seed: int) -> np.ndarray:
        (selected,) = s23.fit_cae_2023(
            [easy_fold.X_train], [easy_fold.y_train], 1, epochs=100, lr=1e-3, rngs=[np.random.default_rng(seed)]
        )
        return selected

    np.testing.assert_array_equal(fit(0), fit(0))
    hits = sum(np.flatnonzero(easy_fold.relevant)[0] in fit(seed) for seed in range(8))
    # One neuron over 6 columns picks the relevant one with probability 1/6 by chance: P(hits >= 4) = 0.03.
    assert hits >= 4


def test_fsnet_histogram_matrix_is_counts_times_centres_standardised_globally():
    X = np.random.default_rng(0).normal(size=(500, 4))
    U = s23.histogram_matrix_2023(X, n_bins=30)
    raw = np.stack(
        [
            np.histogram(X[:, j], 30)[0] * 0.5 * (np.histogram(X[:, j], 30)[1][:-1] + np.histogram(X[:, j], 30)[1][1:])
            for j in range(4)
        ]
    )
    np.testing.assert_allclose(U, (raw - raw.mean()) / raw.std(), rtol=1e-5, atol=1e-6)
    assert U.shape == (4, 30) and U.dtype == np.float32


def test_fsnet_temperature_runs_from_just_below_10_to_0_01():
    assert s23.fsnet_temperature(0, 2000) == pytest.approx(10 * 0.001 ** (1 / 2000))
    assert s23.fsnet_temperature(1999, 2000) == pytest.approx(0.01)


def test_fsnet_network_is_the_papers():
    g = torch.Generator().manual_seed(0)
    U = torch.as_tensor(s23.histogram_matrix_2023(np.random.default_rng(1).normal(size=(50, 7))))
    classifier = torch.nn.Sequential(torch.nn.Linear(3, 1))
    net = s23._FSNet2023(U, 3, classifier, g)
    assert net.selector_weight.shape == (30, 3) and net.reconstruction_weight.shape == (3, 30)
    net.temperature, net.gumbel_generator = 0.7, torch.Generator().manual_seed(5)
    x = torch.randn(4, 7, generator=g)
    logit, recon = net(x)
    u = 1e-5 + (1 - 2e-5) * torch.rand((7, 3), generator=torch.Generator().manual_seed(5))
    M = torch.softmax((U @ net.selector_weight - torch.log(-torch.log(u))) / 0.7, dim=0)
    torch.testing.assert_close(logit, classifier(x @ M).reshape(-1))
    torch.testing.assert_close(recon, x @ M @ net.reconstruction_weight @ U.T)
    imp = net.importances()
    np.testing.assert_allclose(imp, torch.softmax(U @ net.selector_weight, 0).mean(1).detach().numpy(), rtol=1e-6)
    assert imp.sum() == pytest.approx(1.0)


def test_fsnet_2023_uses_min_2k_p_neurons_and_its_importances_for_both_metrics(easy_fold, monkeypatch):
    calls = []
    real = s23.fit_fsnet_2023

    def spy(Xs, ys, n_neurons, **kw):
        calls.append(n_neurons)
        return real(Xs, ys, n_neurons, **{**kw, "epochs": 30})

    monkeypatch.setattr(s23, "fit_fsnet_2023", spy)
    a = run_method(get_method("fsnet_2023"), easy_fold, SharedModels(easy_fold))
    b = run_method(get_method("fsnet_2023"), easy_fold, SharedModels(easy_fold))
    assert calls == [2, 2] and a.scores_2k is None
    np.testing.assert_array_equal(a.scores, b.scores)
    assert np.all(a.scores >= 0) and a.scores.sum() == pytest.approx(1.0)


def test_the_2023_selectors_refuse_a_dataset_without_relevant_features(easy_fold):
    from dataclasses import replace

    empty = replace(easy_fold, relevant=np.zeros_like(easy_fold.relevant))
    with pytest.raises(ValueError, match="true k"):
        get_method("fsnet_2023").fn(empty, SharedModels(empty), np.random.default_rng(0))


def test_best_2k_reads_the_separate_2k_ranking(easy_fold):
    from synthbench.protocol import MethodOutput

    p = easy_fold.n_features
    relevant = np.flatnonzero(easy_fold.relevant)[0]
    wrong = np.zeros(p)
    wrong[(relevant + 1) % p] = 1.0
    right = np.zeros(p)
    right[relevant] = 1.0
    scorer = GroundTruthScorer()
    both = scorer.score(MethodOutput(wrong, scores_2k=right).validate(p, len(easy_fold.y_explain)), easy_fold, "m")
    plain = scorer.score(MethodOutput(wrong).validate(p, len(easy_fold.y_explain)), easy_fold, "m")
    assert both["best_k"] == plain["best_k"] == 0.0 and both["auroc"] == plain["auroc"]
    assert both["best_2k"] == 1.0 and plain["best_2k"] < 1.0
    with pytest.raises(ValueError, match="scores_2k of shape"):
        MethodOutput(wrong, scores_2k=right[:-1]).validate(p, 1)
    with pytest.raises(ValueError, match="NaN or inf scores_2k"):
        MethodOutput(wrong, scores_2k=right * np.nan).validate(p, 1)


@pytest.fixture(scope="module")
def linear_fold():
    """20 uniform columns and ``y = [x0 + x1 + x2 > 0]``: three relevant features, each with a strong
    marginal signal, among 17 of noise (fold 0 of 3: 200 training rows)."""
    g = np.random.default_rng(0)
    X = g.uniform(-1, 1, size=(300, 20)).astype(np.float32)
    y = (X[:, :3].sum(axis=1) > 0).astype(np.int64)
    relevant = np.zeros(20, dtype=bool)
    relevant[:3] = True
    return fold_of(Dataset(X, y, relevant, None, "linear", {"p": 20}, 0))


#: The 2023 variants registered beside the package's defaults, with the parameters changed for
#: time: LassoNet's path runs hundreds of lambda steps, 5 epochs a step instead of 30 here
#: (architecture, batches, lambda start, tolerance and the package's importances are the variant's).
EASY_2023 = {
    "lassonet_2023": {"n_iters": (30, 5)},
    "deeppink_2023": {},
    "cancelout_sigmoid_2023": {},
    "cancelout_softmax_2023": {},
}


@pytest.mark.parametrize("name", list(EASY_2023))
def test_the_2023_variants_rank_the_three_relevant_features_of_twenty_first(name, linear_fold):
    """The three relevant features score strictly above all 17 others; a random ranking puts them
    first with probability 1 / C(20, 3) = 1 / 1140. (Measured over dataset seeds 0-7: LassoNet and the
    sigmoid CancelOut pass on all 8, the unpenalised softmax CancelOut on 7 and DeepPINK on 6; seed 0
    is one all four pass on. The weaker two are the 2023 benchmark's own settings, not broken code.)"""
    spec = get_method(name)
    out = spec.fn(
        linear_fold, SharedModels(linear_fold), linear_fold.rng("method", name), **{**spec.params, **EASY_2023[name]}
    )
    scores = np.asarray(out)
    rel = np.flatnonzero(linear_fold.relevant)
    assert scores.shape == (20,)
    assert scores[rel].min() > np.delete(scores, rel).max(), (name, np.argsort(-scores)[:6], rel)


@pytest.mark.parametrize(
    "name", ["fsnet_2023", "concrete_autoencoder_2023", "deeppink_2023", "cancelout_sigmoid_2023", "cancelout_softmax"]
)
def test_the_2023_selectors_train_a_setting_s_folds_as_one_batch_each_as_alone(name, tmp_path, monkeypatch):
    """With siblings and a disk cache, the first fold to ask trains every fold's networks as one batch of the loop
    and the others read their parts; each fold's output is the one it computes alone, to the bit (the stacked
    networks' members depend on their own slices only). A scorer's other stream computes alone. (The CancelOuts,
    the 2023 one and synthbench's, train the same way.)"""
    import dataclasses

    import synthbench.methods.deeppink_2023 as dp
    import synthbench.methods.embedded as em
    from synthbench.methods.registry import method_rng
    from synthbench.models import Siblings, TrainSettings
    from synthbench.protocol import setting_folds

    monkeypatch.setattr(s23, "fit_fsnet_2023", functools.partial(s23.fit_fsnet_2023, epochs=4))
    monkeypatch.setattr(s23, "CAE_RUNS", CAE_RUNS_SMALL)
    batches: list[int] = []
    for module in (s23, dp, em):
        real = module.fit_networks

        def counted(members, *args, real=real, **kwargs):
            batches.append(len(members))
            return real(members, *args, **kwargs)

        monkeypatch.setattr(module, "fit_networks", counted)

    def folds():
        return setting_folds("xor", n_samples=120, seed=0, n_folds=3, n_decoys=3)

    spec = get_method(name)
    settings = TrainSettings(cache_dir=str(tmp_path))
    sharing = [SharedModels(f, settings, siblings=Siblings("xor, 120 rows", folds)) for f in folds()]
    together = [spec.fn(m._data, m, method_rng(spec, m._data), **spec.params) for m in sharing]
    runs = len(CAE_RUNS_SMALL) if name == "concrete_autoencoder_2023" else 1
    assert batches == [3] * runs
    alone = [spec.fn(f, SharedModels(f), method_rng(spec, f), **spec.params) for f in folds()]
    assert batches == [3] * runs + [1] * 3 * runs
    for t, a in zip(together, alone, strict=True):
        for got, want in zip(_arrays(t), _arrays(a), strict=True):
            np.testing.assert_array_equal(got, want)
    fold = sharing[0]._data
    spec.fn(fold, sharing[0], method_rng(spec, fold, ("another stream",)), **spec.params)
    spec.fn(dataclasses.replace(fold), sharing[0], method_rng(spec, fold), **spec.params)
    assert batches == [3] * runs + [1] * 5 * runs


CAE_RUNS_SMALL = ((1, 4), (2, 2))


def _arrays(out) -> list[np.ndarray]:
    return [np.asarray(out)] if not hasattr(out, "scores") else [out.scores, out.scores_2k]


def test_a_stacked_network_holds_its_own_objective():
    from synthbench.models.loop import Member, fit_networks
    from synthbench.models.presets import mlp_config

    g = torch.Generator().manual_seed(0)
    net = s23._CAE2023(p=4, n_neurons=2, generator=g)
    X, y = np.zeros((20, 4), dtype=np.float32), np.arange(20) % 2
    config = mlp_config("passemiers2023").train
    with pytest.raises(ValueError, match="its own objective"):
        fit_networks([Member(net, X, y, g, loss=lambda m, xb, yb, step: xb.sum())], config=config, device="cpu")
