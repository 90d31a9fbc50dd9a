"""The grouped-input MLP (hinge basis, group penalty, successive halving) and the ``screened_mlp`` preset.

What is pinned: the basis as a dense layer equals its per-feature computation; halving keeps the
most important inputs, scores every round and chooses the best (the sparser on ties); a trained
screened network reads all columns with zero weights on the dropped ones, learns a ring that the
plain MLP presets cannot, trains the same twice, pickles, and is walked by the attribution kernels
exactly as captum walks it; the existing presets' cell ids are unchanged by the new fields.
"""

from __future__ import annotations

import math
import pickle
from dataclasses import replace

import numpy as np
import pytest
import torch
from captum.attr import LRP, DeepLift, IntegratedGradients, Saliency
from captum.attr._utils.lrp_rules import EpsilonRule
from conftest import assert_float64_close, fold_of, in_float64
from torch import nn

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels, TrainSettings
from synthbench.models.basis import (
    basis_layer,
    expand,
    group_columns,
    group_norms,
    hinge_knots,
)
from synthbench.models.loop import TrainConfig, fit_network
from synthbench.models.mlp import BASIS_LAYER, MLPConfig, mlp_layers, ranking_weight, train_mlp
from synthbench.models.presets import RUN_PRESETS, get_preset
from synthbench.models.screening import successive_halving, successive_halving_many


def test_the_basis_layer_equals_its_per_feature_expansion_and_groups_are_contiguous():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(50, 4)).astype(np.float32)
    knots = hinge_knots(X, 3)
    np.testing.assert_allclose(knots, np.quantile(X.astype(np.float64), [0.25, 0.5, 0.75], axis=0).T, rtol=1e-6)
    dense = torch.relu(basis_layer(knots, np.arange(4), 4)(torch.from_numpy(X))).detach().numpy()
    units = expand(X, knots)
    np.testing.assert_allclose(dense, units, rtol=1e-6, atol=1e-7)
    # the basis of columns 1 and 3 only: their units, nothing of columns 0 and 2
    part = basis_layer(knots[[1, 3]], np.array([1, 3]), 4)
    assert part.weight.shape == (10, 4) and not part.weight[:, [0, 2]].any()
    np.testing.assert_allclose(
        torch.relu(part(torch.from_numpy(X))).detach().numpy(),
        units[:, group_columns(np.array([1, 3]), 5)],
        rtol=1e-6,
        atol=1e-7,
    )
    # feature 2's units: relu(x), relu(-x), relu(x - q_k)
    cols = group_columns(np.array([2]), 5)
    np.testing.assert_array_equal(cols, [10, 11, 12, 13, 14])
    expected = np.column_stack(
        [np.maximum(X[:, 2], 0), np.maximum(-X[:, 2], 0)] + [np.maximum(X[:, 2] - q, 0) for q in knots[2]]
    )
    np.testing.assert_allclose(units[:, cols], expected, rtol=1e-6)
    assert not any(p.requires_grad for p in part.parameters())
    w = torch.zeros(3, 10)
    w[:, 5:10] = 2.0  # group 1 of two groups of 5
    np.testing.assert_allclose(group_norms(w, 5).numpy(), [0.0, np.sqrt(3 * 5 * 4.0)], rtol=1e-6)


def test_successive_halving_keeps_the_most_important_inputs_and_chooses_the_best_round():
    seen = []
    truth = {3, 7}

    def fit(features):
        seen.append(features.copy())
        importance = np.array([10.0 if f in truth else 1.0 / (1 + f) for f in features])
        score = 0.9 if set(features) == truth else (0.6 if truth <= set(features) else 0.5)
        return f"model on {features.tolist()}", score, importance

    chosen, record = successive_halving(fit, 10, 0.5)
    assert [n for n, _ in record] == [10, 5, 3, 2, 1]
    assert all(np.all(np.diff(f) > 0) for f in seen)  # ascending
    assert set(seen[1]) >= truth and set(seen[3]) == truth
    assert set(chosen.features) == truth and chosen.score == 0.9 and chosen.model == "model on [3, 7]"
    # ties go to the sparser round; NaN is the worst score
    chosen, _ = successive_halving(lambda f: (len(f), 1.0, np.ones(len(f))), 4, 0.5)
    assert chosen.model == 1
    chosen, _ = successive_halving(lambda f: (len(f), np.nan if len(f) == 1 else 0.2, np.ones(len(f))), 4, 0.5)
    assert chosen.model == 2
    for keep in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="keep"):
            successive_halving(fit, 10, keep)


def test_members_that_start_on_different_inputs_share_a_batch_where_their_input_counts_meet():
    batches = []

    def fit(members, features):
        assert len({len(f) for f in features}) == 1  # a batch reads one input count
        batches.append((members, len(features[0])))
        return [(len(f), float(len(f)), np.arange(len(f), 0, -1, dtype=float)) for f in features]

    starts = [np.arange(8), np.arange(10, 14), np.array([2, 5, 6, 9])]
    results = successive_halving_many(fit, starts, 0.5)
    assert batches == [([0], 8), ([0, 1, 2], 4), ([0, 1, 2], 2), ([0, 1, 2], 1)]  # the first meets the others at 4
    assert [[n for n, _ in record] for _, record in results] == [[8, 4, 2, 1], [4, 2, 1], [4, 2, 1]]
    assert results[1][0].features.tolist() == [10, 11, 12, 13]  # the widest round scored best: its own inputs
    with pytest.raises(ValueError, match="at least one input"):
        successive_halving_many(fit, [np.arange(3), np.arange(0)], 0.5)


def test_the_screening_starts_from_the_columns_that_vary_and_a_constant_column_changes_nothing():
    # remove-and-retrain sets the removed columns to one value: the screened network never reads them, and is the
    # network of the table without them
    data = fold_of(datasets.make("ring", n_samples=300, n_decoys=5, seed=2))
    config = replace(
        get_preset("screened_mlp").config,
        train=TrainConfig(max_epochs=20, patience=100, monitor="auroc", stopping="best", lr=2e-3, weight_decay=0.0),
    )
    constant = [1, 4]
    X = data.X_train.copy()
    X[:, constant] = 0.25
    varying = np.setdiff1d(np.arange(X.shape[1]), constant)
    with_constants = train_mlp(X, data.y_train, config=config, seed=4)
    without = train_mlp(X[:, varying], data.y_train, config=config, seed=4)
    assert [n for n, _ in with_constants.screening][0] == len(varying)
    np.testing.assert_array_equal(with_constants.features, varying[without.features])
    test = data.X_test.copy()
    test[:, constant] = 0.25
    np.testing.assert_array_equal(with_constants.predict_proba(test), without.predict_proba(test[:, varying]))


def test_a_round_ranks_its_inputs_on_its_last_weights_not_the_restored_best_ones():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = rng.integers(0, 2, size=120)  # nothing to learn: the best validation epoch comes early
    config = TrainConfig(max_epochs=25, patience=100, monitor="auroc", stopping="best", lr=1e-2)

    def fit(restore):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        return fit_network(
            net,
            X,
            y,
            config=replace(config, restore=restore),
            generator=torch.Generator().manual_seed(0),
            device=torch.device("cpu"),
            validation_rows=np.arange(30),
        )

    best, last = fit("best"), fit("last")
    assert best.best_epoch < 24 and last.last_state is None
    assert torch.equal(ranking_weight(best), last.module[0].weight)  # the last epoch's, to the bit
    assert not torch.equal(ranking_weight(best), best.module[0].weight)  # not the restored epoch's


def test_given_validation_rows_are_the_ones_held_out():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    rows = np.array([1, 5, 9, 30])
    net = nn.Sequential(nn.Linear(3, 1))
    result = fit_network(
        net,
        X,
        y,
        config=TrainConfig(max_epochs=2),
        generator=torch.Generator().manual_seed(0),
        device=torch.device("cpu"),
        validation_rows=rows,
    )
    np.testing.assert_array_equal(result.validation_indices, rows)
    with pytest.raises(ValueError, match="some but not all"):
        fit_network(
            net,
            X,
            y,
            config=TrainConfig(max_epochs=1),
            generator=torch.Generator().manual_seed(0),
            device=torch.device("cpu"),
            validation_rows=np.arange(40),
        )


def test_new_fields_enter_only_the_ids_of_configs_that_set_them():
    for name in ("passemiers2023", "passemiers2023_corrected", "sparse_mlp", "dense_mlp"):
        assert not {"basis_knots", "group_penalty", "screen_keep", "screen_budget"} & set(
            get_preset(name).config.to_dict()
        ), name
    flat = get_preset("screened_mlp").config.to_dict()
    assert (flat["basis_knots"], flat["group_penalty"], flat["screen_keep"], flat["screen_budget"]) == (
        6,
        1e-3,
        0.5,
        30_000,
    )
    assert MLPConfig.from_dict(flat) == get_preset("screened_mlp").config
    assert RUN_PRESETS == ("screened_mlp",)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"screen_keep": 1.5}, "screen_keep"),
        ({"basis_knots": -1}, "non-negative"),
        ({"basis_knots": 4, "noise_sigma": 0.1}, "noise"),
        ({"group_penalty": 1e-3}, "basis_knots > 0"),
        ({"screen_keep": 0.5}, "basis_knots > 0"),
        ({"screen_budget": -1}, "screen_budget"),
        ({"screen_budget": 100, "basis_knots": 2, "noise_sigma": 0.0}, "screen_budget"),
    ],
)
def test_a_grouped_config_that_cannot_train_is_refused(change, match):
    X = np.zeros((20, 3), dtype=np.float32)
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        train_mlp(X, y, config=MLPConfig(**change), seed=0)
    with pytest.raises(ValueError, match="l1_first_layer"):
        train_mlp(
            X, y, config=MLPConfig(basis_knots=2, noise_sigma=0.0, train=TrainConfig(l1_first_layer=1e-3)), seed=0
        )


@pytest.fixture(scope="module")
def ring_fold():
    data = fold_of(datasets.make("ring", n_samples=600, n_decoys=14, seed=3))
    config = get_preset("screened_mlp").config
    return data, config, train_mlp(data.X_train, data.y_train, config=config, seed=5)


def test_the_screened_mlp_learns_a_ring_among_decoys_and_reads_every_column(ring_fold):
    data, _, model = ring_fold
    truth = np.flatnonzero(data.relevant)
    np.testing.assert_array_equal(model.features, truth)
    assert [n for n, _ in model.screening] == [16, 8, 4, 2, 1]
    assert max(model.screening, key=lambda r: r[1])[0] == 2
    assert np.mean(model.predict(data.X_test) == data.y_test) > 0.9
    plain = train_mlp(data.X_train, data.y_train, config=get_preset("sparse_mlp").config, seed=5)
    assert np.mean(plain.predict(data.X_test) == data.y_test) < 0.8  # what the basis and the screening buy
    basis, first = model.module[1], model.module[3]
    assert basis.weight.shape == (2 * 8, data.X_train.shape[1]) and first.in_features == 2 * 8
    dropped = np.setdiff1d(np.arange(data.X_train.shape[1]), truth)
    assert not basis.weight[:, dropped].any()
    moved = data.X_test.copy()
    moved[:, dropped] = np.random.default_rng(0).uniform(-1, 1, size=(len(moved), len(dropped)))
    np.testing.assert_array_equal(model.predict_proba(moved), model.predict_proba(data.X_test))
    # no randomisation re-draws the fixed basis
    assert [layer.name for layer in mlp_layers(model)] == ["3", "5", "7"] and BASIS_LAYER == "1"


def test_a_screening_budget_caps_each_round_by_its_inputs_and_the_rounds_on_few_inputs_train_longest(ring_fold):
    data, config, model = ring_fold
    budget = replace(config, screen_budget=40)  # 16 inputs: 3 epochs, 8: 5, 4: 10, 2: 20, 1: 40 (patience is 100)
    capped = train_mlp(data.X_train, data.y_train, config=budget, seed=5)
    assert [n for n, _ in capped.screening] == [16, 8, 4, 2, 1]
    assert capped.epochs_run == math.ceil(40 / len(capped.features))
    assert model.epochs_run > 40  # unbudgeted, the same chosen round trains on to its own stopping
    assert budget.to_dict()["screen_budget"] == 40 and "screen_budget" not in replace(config, screen_budget=0).to_dict()


def test_the_screened_mlp_trains_the_same_twice_and_pickles(ring_fold):
    data, config, model = ring_fold
    again = train_mlp(data.X_train, data.y_train, config=config, seed=5)
    for a, b in zip(model.module.state_dict().values(), again.module.state_dict().values()):
        assert torch.equal(a, b)
    loaded = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(loaded.predict_proba(data.X_test), model.predict_proba(data.X_test))
    np.testing.assert_array_equal(loaded.features, model.features)


def test_attribution_kernels_walk_the_basis_as_captum_does():
    data = fold_of(datasets.make("xor", n_samples=240, n_decoys=6, seed=1))
    models = SharedModels(data, TrainSettings(), preset="screened_mlp")
    model = models.get("mlp")
    record = models.info["mlp"]  # what the screening chose is stored with the model's quality
    assert record["inputs_read"] == model.features.tolist() and len(record["screening"]) >= 3
    twin, data = in_float64(model, data)  # float64 on both sides: no ReLU kink decided by rounding
    mlp = twin.module
    assert {type(m) for m in mlp if isinstance(m, (nn.ReLU, nn.LeakyReLU))} == {nn.ReLU}
    x = torch.as_tensor(data.X_explain)
    view = nn.Sequential(*[m for m in mlp if isinstance(m, (nn.Linear, nn.ReLU))])
    try:
        for m in view:
            m.rule = EpsilonRule()
        lrp = LRP(view).attribute(x, target=0)
    finally:
        for m in view:
            if hasattr(m, "rule"):
                del m.rule
    refs = {
        "gradient": Saliency(mlp).attribute(x, target=0, abs=False),
        "integrated_gradients": IntegratedGradients(mlp).attribute(x, target=0, n_steps=50),
        "deeplift": DeepLift(mlp).attribute(x, target=0, baselines=0.0),
        "lrp_epsilon": lrp,
    }
    for name, ref in refs.items():
        assert_float64_close(run_method(get_method(name), data, models, model=twin).local, ref, name)


def test_the_basis_layer_by_gather_gives_the_dense_layers_bits_forward_and_backward():
    """BasisLinear evaluates its one non-zero per row by gather; forward values and input gradients
    are those of a plain nn.Linear with the same weights, bit for bit (a read subset and all inputs)."""
    from synthbench.models.basis import basis_layer, hinge_knots

    X = torch.from_numpy(np.random.default_rng(0).normal(size=(64, 40)).astype(np.float32))
    for read in (np.arange(40), np.array([1, 7, 30])):
        layer = basis_layer(hinge_knots(X.numpy()[:, read], 4), read, 40)
        dense = torch.nn.utils.skip_init(nn.Linear, 40, layer.out_features)  # no draw: the weights are copied
        dense.load_state_dict(layer.state_dict())
        assert torch.equal(layer(X), dense(X))
        grad = torch.randn(64, layer.out_features, generator=torch.Generator().manual_seed(1))
        xa, xb = X.clone().requires_grad_(True), X.clone().requires_grad_(True)
        assert torch.equal(*(torch.autograd.grad(f(x), x, grad)[0] for f, x in ((layer, xa), (dense, xb))))
