"""Fragility under label-preserving perturbations: surrogate, budget, attacks, measures, refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.models.surrogate import SmoothLeakyReLU, smooth_surrogate
from synthbench.protocol import FoldData, dataset_folds
from synthbench.scoring import SkipCell, configure_scorer
from synthbench.scoring.fragility import scorer as fragility_module
from synthbench.scoring.fragility.budget import Budget
from synthbench.scoring.fragility.scorer import _Cell, attack_access, parse_eps


@pytest.fixture(scope="module")
def xor_fold():
    ds = datasets.make("xor", n_samples=500, n_decoys=18, seed=0)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=3, seed=0)[0])
    return data, SharedModels(data, preset="sparse_mlp")


@pytest.fixture(scope="module")
def image_fold():
    from synthbench.testing import small_fold

    data = small_fold("image")
    return data, SharedModels(data)


def _scorer(**options):
    return configure_scorer("fragility", options)


def _score(scorer, name, data, models):
    spec = get_method(name)
    return scorer.score(run_method(spec, data, models), data, spec, models)


def test_the_surrogate_smooths_every_kink_keeps_the_weights_and_tends_to_the_network(xor_fold, image_fold):
    for data, models, kind, kink in ((*xor_fold, "mlp", nn.LeakyReLU), (*image_fold, "cnn", nn.ReLU)):
        model = models.get(kind)
        surrogate = smooth_surrogate(model, beta=10.0)
        assert not any(isinstance(m, (nn.ReLU, nn.LeakyReLU)) for m in surrogate.module.modules())
        assert any(isinstance(m, kink) for m in model.module.modules())  # the original is untouched
        for (name, a), (_, b) in zip(model.module.state_dict().items(), surrogate.module.state_dict().items()):
            torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
        x = torch.as_tensor(data.X_explain[:50])
        with torch.no_grad():
            exact = model.module(x)
            gaps = [
                float((smooth_surrogate(model, beta).module(x) - exact).abs().max()) for beta in (2.0, 20.0, 2000.0)
            ]
        assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-2 * float(exact.abs().max())


def test_the_smooth_leaky_relu_is_the_stated_formula():
    x = torch.linspace(-4, 4, 101)
    f = SmoothLeakyReLU(0.2, beta=3.0)(x)
    torch.testing.assert_close(f, 0.2 * x + 0.8 * torch.log1p(torch.exp(3.0 * x)) / 3.0)


def test_a_relu_networks_saliency_has_no_input_gradient_and_its_surrogates_has(image_fold):
    from synthbench.attribution import attribute

    data, models = image_fold
    model = models.get("cnn")
    grads = []
    for net in (model.module, smooth_surrogate(model, 10.0).module):
        x = torch.as_tensor(data.X_explain[:4]).requires_grad_(True)
        maps = attribute("saliency", net, x, torch.as_tensor(data.y_explain[:4]), create_graph=True)
        (g,) = torch.autograd.grad(maps.sum(), x, allow_unused=True)
        grads.append(0.0 if g is None else float(g.abs().max()))
    assert grads[0] == 0.0 and grads[1] > 0.0


def test_the_budget_bounds_each_feature_by_its_spread_and_images_by_their_range(xor_fold, image_fold):
    data, _ = xor_fold
    X = data.X_train.copy()
    X[:, 3] = 1.5  # a constant feature never moves
    tabular = Budget.for_fold(FoldData(**{**data.__dict__, "X_train": X}), 0.1, "linf")
    np.testing.assert_allclose(tabular.scale, X.std(axis=0), rtol=1e-6)
    x0 = torch.as_tensor(data.X_explain[:40])
    rng = np.random.default_rng(0)
    far = x0 + torch.as_tensor(rng.normal(0, 5, x0.shape), dtype=x0.dtype)
    scale = torch.as_tensor(tabular.scale)
    for moved in (tabular.project(x0, far), tabular.corner(x0, rng), tabular.uniform(x0, rng)):
        assert ((moved - x0).abs() <= 0.1 * scale + 1e-6).all()
        assert (moved[:, 3] == x0[:, 3]).all()
    corner = (tabular.corner(x0, rng) - x0)[:, scale > 0] / scale[scale > 0]
    torch.testing.assert_close(corner.abs(), torch.full_like(corner, 0.1))  # random signs, on the boundary
    uniform = (tabular.uniform(x0, rng) - x0)[:, scale > 0] / scale[scale > 0]
    assert abs(float(uniform.abs().mean()) - 0.05) < 0.005  # uniform in the cube: mean |z| = eps / 2
    l2 = Budget.for_fold(data, 0.5, "l2")
    for moved in (l2.project(x0, far), l2.corner(x0, rng), l2.uniform(x0, rng)):
        z = (moved - x0) / torch.as_tensor(l2.scale)
        assert (z.norm(dim=1) <= 0.5 + 1e-5).all()
    torch.testing.assert_close(
        (l2.corner(x0, rng) - x0).div(torch.as_tensor(l2.scale)).norm(dim=1), torch.full((40,), 0.5)
    )
    images, _ = image_fold
    budget = Budget.for_fold(images, 8 / 255, "linf")
    assert (budget.low, budget.high) == (float(images.X_train.min()), float(images.X_train.max()))
    x0 = torch.as_tensor(images.X_explain[:8])
    moved = budget.corner(x0, rng)
    assert ((moved - x0).abs() <= 8 / 255 + 1e-6).all()
    assert moved.min() >= budget.low and moved.max() <= budget.high
    with pytest.raises(ValueError, match="eps must be positive"):
        Budget(0.0, "linf", np.ones(3, np.float32))


def test_every_kept_perturbation_keeps_the_label_and_stays_in_the_budget(xor_fold):
    data, models = xor_fold
    scorer = _scorer(eps=(0.3,), iterations=20, max_examples=80)
    for name, gradient in (("saliency", True), ("deeplift", False)):
        spec = get_method(name)
        cell = _Cell(scorer, spec, data.first(80), models, models.get("mlp"))
        assert cell.gradient == gradient
        budget = Budget.for_fold(data, 0.3, "linf")
        for attack in ("random", "topk", "truth"):
            result = cell.attack(attack, budget)
            model = models.get("mlp")
            np.testing.assert_array_equal(model.predict(result.inputs), cell.labels)  # kept or original: same label
            assert (np.abs(result.inputs - cell.x0) <= 0.3 * budget.scale + 1e-5).all()
            np.testing.assert_array_equal(result.inputs[~result.kept], cell.x0[~result.kept])
            np.testing.assert_allclose(result.maps, cell.explain(result.inputs), rtol=1e-5, atol=1e-7)
            assert result.kept.mean() > 0.3, (name, attack)


def test_gradient_attacks_move_maps_further_than_the_random_baseline_and_off_the_truth(xor_fold):
    data, models = xor_fold
    values = _score(_scorer(eps=(0.3,), iterations=40, max_examples=100, samples=3), "saliency", data, models)
    assert values["fragility_topk_intersection"] < values["fragility_random_intersection"] - 0.05
    assert values["fragility_truth_truth_drop"] >= values["fragility_random_truth_drop"]
    assert values["fragility_truth_truth_auroc"] <= values["fragility_random_truth_auroc"]
    assert values["fragility_truth_before"] > 0.6  # per example, the sparse MLP's saliency mostly finds xor's features
    assert (
        values["fragility_truth_truth"] < values["fragility_truth_before"] - 0.05
    )  # and the truth attack moves it off
    for measure in ("max_sensitivity", "avg_sensitivity", "local_lipschitz"):
        assert values[f"fragility_{measure}"] > 0
    assert values["fragility_max_sensitivity"] >= values["fragility_avg_sensitivity"]


def test_values_are_at_the_largest_eps_with_a_curve_over_eps_and_the_same_on_a_rerun(xor_fold):
    data, models = xor_fold
    scorer = _scorer(eps=("1/20", 0.25), attacks=("random", "topk"), iterations=5, max_examples=40, samples=2)
    first = _score(scorer, "integrated_gradients", data, models)
    curve = first.curves["topk_intersection"]
    np.testing.assert_array_equal(curve.x, [0.05, 0.25])
    assert first["fragility_topk_intersection"] == curve.values[-1, 0]
    assert set(first.curves) >= {"random_intersection", "topk_success", "max_sensitivity", "local_lipschitz"}
    again = _score(scorer, "integrated_gradients", data, models)
    assert dict(first) == dict(again)
    assert "fragility_center_shift" not in first and "fragility_targeted_intersection" not in first


def test_methods_without_gradient_maps_are_searched_black_box(xor_fold, monkeypatch):
    assert attack_access(get_method("saliency"), "tabular") == "gradient"
    assert attack_access(get_method("smoothgrad"), "image") == "gradient"
    assert attack_access(get_method("deeplift"), "tabular") == "black-box"
    assert attack_access(get_method("treeshap"), "tabular") == "black-box"
    assert attack_access(get_method("random"), "tabular") == "black-box"
    assert attack_access(get_method("mrmr"), "tabular") == "none"
    assert attack_access(get_method("rf"), "tabular") == "none"
    data, models = xor_fold

    def refuse(*args, **kwargs):
        raise AssertionError("a gradient attack on a method without differentiable maps")

    monkeypatch.setattr(fragility_module, "gradient_attack", refuse)
    values = _score(
        _scorer(eps=(0.3,), attacks=("random", "topk"), search_steps=2, max_examples=20, samples=1),
        "treeshap",
        data,
        models,
    )
    assert 0 <= values["fragility_topk_intersection"] <= 1


def test_a_method_with_only_global_scores_is_skipped_with_the_reason(xor_fold):
    data, models = xor_fold
    with pytest.raises(SkipCell, match="global scores fitted on the training rows"):
        _score(_scorer(eps=(0.1,)), "mrmr", data, models)


def test_the_random_control_is_redrawn_for_each_perturbed_input(xor_fold):
    data, models = xor_fold
    values = _score(_scorer(eps=(0.1,), attacks=("random",), max_examples=200, samples=2), "random", data, models)
    k, p = int(data.k), data.n_features
    assert abs(values["fragility_random_intersection"] - k / p) < 0.05  # chance: a fresh map shares k / p of its top
    assert abs(values["fragility_random_spearman_abs"]) < 0.05
    # two independent U(0, 1) maps: E (a' - a)^2 = 1/6 and E a^2 = 1/3, so ||a' - a|| / ||a|| is about sqrt(1/2)
    assert abs(values["fragility_avg_sensitivity"] - np.sqrt(0.5)) < 0.05


def test_images_get_the_centre_of_mass_attack_within_their_range(image_fold):
    data, models = image_fold
    values = _score(
        _scorer(
            eps=("8/255",), attacks=("random", "center", "targeted", "truth"), iterations=3, max_examples=12, samples=2
        ),
        "saliency",
        data,
        models,
    )
    assert values["fragility_center_center_shift"] >= 0
    assert "fragility_truth_truth" in values and "fragility_truth_truth_auroc" not in values
    assert 0 <= values["fragility_center_success"] <= 1


def test_eps_reads_numbers_and_fractions():
    assert parse_eps("8/255") == (8 / 255,)
    assert parse_eps((0.2, "1/10")) == (0.1, 0.2)
    for bad, message in ((0, "positive"), (-0.1, "positive"), ("x", "numbers or fractions"), ((0.1, 0.1), "distinct")):
        with pytest.raises(ValueError, match=message):
            parse_eps(bad)


def test_the_command_line_refuses_bad_fragility_input_in_one_line(tmp_path, capsys):
    from synthbench.run import main

    store = tmp_path / "f.sqlite"
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
        "--store",
        str(store),
        "--quiet",
        "--scorer",
        "fragility",
        "--methods",
        "saliency",
    ]
    for option, message in (
        ("eps=0", "eps must be positive"),
        ("eps=-0.1,0.2", "eps must be positive"),
        ("attacks=center", "applies to image inputs only"),
        ("top_k=5", "top_k must be a share"),
        ("attacks=sideways", "attacks must be distinct names"),
        ("norm=l1", "norm must be one of"),
        ("iterations=-1", "iterations must be a whole number"),
    ):
        assert main([*grid, "--scorer-option", option]) == 2, option
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
        assert not store.exists()


def test_a_fragility_run_records_values_curves_and_skips(tmp_path):
    from synthbench.run import main
    from synthbench.runner.store import ResultStore

    store = tmp_path / "f.sqlite"
    assert (
        main(
            [
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
                "--store",
                str(store),
                "--quiet",
                "--scorer",
                "fragility",
                "--methods",
                "saliency,mrmr,random",
                "--model",
                "sparse_mlp",
                "--scorer-option",
                "eps=0.1,0.2",
                "--scorer-option",
                "iterations=3",
                "--scorer-option",
                "samples=2",
            ]
        )
        == 0
    )
    results = ResultStore(str(store))
    cells = results.cells().set_index("method")
    assert (cells.loc["mrmr", "status"] == "skipped").all()
    assert cells.loc["mrmr", "message"].str.contains("global scores").all()
    assert (cells.loc[["saliency", "random"], "status"] == "ok").all()
    scores = results.scores()
    assert {"fragility_topk_intersection", "fragility_truth_truth_drop"} <= set(scores["metric"])
    assert set(results.curves()["x"]) == {0.1, 0.2}


def test_an_image_fragility_run_reports_curves_per_eps_attacked_maps_and_trust(tmp_path):
    from synthbench.report.cli import main as report
    from synthbench.run import main

    store, out = tmp_path / "f.sqlite", tmp_path / "report"
    assert (
        main(
            [
                "--datasets",
                "shapes",
                "--decoys",
                "2",
                "--n-samples",
                "80",
                "--folds",
                "2",
                "--jobs",
                "1",
                "--store",
                str(store),
                "--quiet",
                "--scorer",
                "ground_truth,fragility",
                "--methods",
                "saliency,guided_backprop,random",
                "--scorer-option",
                "iterations=2",
                "--scorer-option",
                "samples=1",
                "--scorer-option",
                "search_steps=1",
                "--scorer-option",
                "attacks=random,topk,truth",
                "--scorer-option",
                "max_examples=8",
            ]
        )
        == 0
    )
    assert (
        report(["--store", str(store), "--out", str(out), "--all-models"]) == 0
    )  # a CNN of 80 images: below competence
    md = (out / "report.md").read_text()
    assert "Each curve's mean per method and eps:" in md
    assert "saliency@cnn @ 0.007843" in md and "saliency@cnn @ 0.03137" in md  # a row per method and eps
    assert "| shapes/2 random_intersection" in md and "shapes/2 truth_truth" in md
    assert "its map after the truth attack at the largest eps" in md
    assert (out / "part2_fragility_maps_shapes.png").exists()
    assert "fragility `fragility_topk_intersection`" in md.split("## Which verdict to trust")[1]


def test_sign_flips_count_the_original_top_k_elements_whose_sign_changed(xor_fold):
    """Every top-k element flipped: 1; the map unchanged, or only elements outside the top k flipped: 0; the top k
    flipped on half the examples: 0.5."""
    data, models = xor_fold
    cell = _Cell(
        _scorer(eps=(0.3,), iterations=2, max_examples=40),
        get_method("saliency"),
        data.first(40),
        models,
        models.get("mlp"),
    )
    maps = cell.maps0.astype(np.float64)
    top, size = cell.signed_top, np.abs(maps)
    assert (top.sum(axis=1) == cell.k).all()  # the top k by |a| of each example
    assert (np.where(top, size, np.inf).min(axis=1) >= np.where(top, -np.inf, size).max(axis=1)).all()
    assert cell._sign_flips(-maps) == 1.0 and cell._sign_flips(maps) == 0.0
    assert cell._sign_flips(np.where(cell.signed_top, maps, -maps)) == 0.0
    half = np.where(cell.signed_top & (np.arange(len(maps)) % 2 == 0)[:, None], -maps, maps)
    assert cell._sign_flips(half) == pytest.approx(0.5, abs=0.03)
