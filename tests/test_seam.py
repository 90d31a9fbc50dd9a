"""The seam "run this method on that model": recipes readable from specs, methods run on supplied models."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from conftest import fold_of

from synthbench.attribution import attribute
from synthbench.datasets import make
from synthbench.methods import AttributionRecipe, get_method, method_names, run_method
from synthbench.models import SharedModels


@pytest.fixture(scope="module")
def fold():
    data = fold_of(make("xor", n_samples=240, n_decoys=4, seed=3))
    models = SharedModels(data)
    models.get("mlp")
    return data, models


def _first_linear(module: torch.nn.Module) -> torch.nn.Linear:
    return next(m for m in module.modules() if isinstance(m, torch.nn.Linear))


def test_every_neural_method_declares_its_recipe_and_others_none():
    with_recipe = [n for n in method_names() if get_method(n).recipe is not None]
    assert {"saliency", "integrated_gradients", "guided_backprop_captum", "deeplift_nomul", "smoothgrad_ig"} <= set(
        with_recipe
    )
    for name in with_recipe:
        spec = get_method(name)
        assert all(spec.explains(kind) in ("mlp", "cnn", "gbm", "gbm_full") for kind in spec.inputs), name
    assert get_method("rf").recipe is None and get_method("mrmr").recipe is None
    # what makes each 2023 variant itself is readable: function, parameters, target rule
    gbp = get_method("guided_backprop_captum")
    assert (gbp.recipe.function, gbp.params_for("tabular"), gbp.recipe.target) == (
        "guided_backprop",
        {"rules_on": "relu_only"},
        "label",
    )
    assert get_method("integrated_gradients_nomul").params_for("tabular")["multiply_by_inputs"] is False
    assert get_method("smoothgrad_ig").recipe.function == "smoothgrad"
    assert get_method("smoothgrad_ig").params_for("image")["base"] == "integrated_gradients"


@pytest.mark.parametrize(
    "name", ["saliency", "integrated_gradients", "smoothgrad", "feature_permutation", "guided_backprop_captum"]
)
def test_the_seam_on_the_folds_own_model_gives_the_identical_map(fold, name):
    data, models = fold
    spec = get_method(name)
    own = run_method(spec, data, models)
    seam = run_method(spec, data, models, model=copy.deepcopy(models.get("mlp")))
    np.testing.assert_array_equal(seam.local, own.local)
    np.testing.assert_array_equal(seam.scores, own.scores)


def test_the_seam_explains_the_model_it_is_given(fold):
    data, models = fold
    own = models.get("mlp")
    keep = 2  # the only input column the altered model still reads
    altered = copy.deepcopy(own)
    with torch.no_grad():
        first = _first_linear(altered.module)
        first.weight[:, np.arange(data.n_features) != keep] = 0.0
    for name in ("saliency", "input_x_gradient", "integrated_gradients", "deeplift"):
        out = run_method(get_method(name), data, models, model=altered)
        assert np.all(out.local[:, np.arange(data.n_features) != keep] == 0), name
        assert np.abs(out.local[:, keep]).sum() > 0, name
    with torch.no_grad():
        first.weight.zero_()
    zero = run_method(get_method("saliency"), data, models, model=altered)
    assert np.all(zero.local == 0)
    # the fold's own model is untouched, and the next plain run explains it again
    assert models.get("mlp") is own
    assert np.abs(run_method(get_method("saliency"), data, models).local).sum() > 0


def test_a_substituted_view_shares_the_other_models_and_keeps_its_own_memo(fold):
    data, models = fold
    stand_in = copy.deepcopy(models.get("mlp"))
    view = models.with_model("mlp", stand_in)
    assert view.get("mlp") is stand_in and models.get("mlp") is not stand_in
    forest = view.get("forest")
    assert models.get("forest") is forest  # trained once, shared with the fold
    models.shared(("maps", "x"), lambda: "fold's")
    assert view.shared(("maps", "x"), lambda: "view's") == "view's"
    assert view.with_model("forest", "other").get("mlp") is stand_in
    with pytest.raises(KeyError, match="unknown model kind 'nope'"):
        models.with_model("nope", stand_in)


def test_a_tree_method_runs_on_a_supplied_forest_and_model_free_methods_refuse_one(fold):
    data, models = fold
    spec = get_method("treeshap")
    np.testing.assert_array_equal(
        run_method(spec, data, models, model=models.get("forest")).scores, run_method(spec, data, models).scores
    )
    with pytest.raises(ValueError, match="explains no single model"):
        run_method(get_method("mrmr"), data, models, model=models.get("mlp"))


def test_the_one_verb_explains_other_inputs_differentiably_and_refuses_maps_that_are_not(fold):
    from synthbench.scoring.reexplain import explain_again

    data, models = fold
    trained = models.get("mlp")
    spec = get_method("input_x_gradient")
    x = torch.as_tensor(data.X_explain).clone().requires_grad_(True)
    a = explain_again(spec, data, models, inputs=x, differentiable=True)
    np.testing.assert_array_equal(a.detach().numpy(), run_method(spec, data, models).local)  # the cell's stream
    # a LeakyReLU MLP is piecewise linear: d(sum x * grad)/dx is the gradient itself
    (d,) = torch.autograd.grad(a.sum(), x)
    torch.testing.assert_close(d, attribute("gradient", trained.module, x.detach()), rtol=1e-5, atol=1e-6)
    assert d.abs().sum() > 0
    shifted = explain_again(spec, data, models, inputs=x.detach() + 0.5, differentiable=True)
    assert not torch.equal(shifted, a.detach())  # the inputs given are the inputs explained
    for name in ("feature_ablation", "mrmr"):  # no graph through a perturbation method; no map at all
        with pytest.raises(ValueError, match="not differentiable"):
            explain_again(get_method(name), data, models, inputs=x, differentiable=True)
    with pytest.raises(ValueError, match="no attribution recipe"):  # never silently explain the fold's rows instead
        explain_again(get_method("mrmr"), data, models, inputs=x.detach())


def test_target_rules_explain_the_label_or_the_prediction():
    data = fold_of(make("digits", n_samples=300, seed=0))
    models = SharedModels(data, preset="cnn")
    cnn = models.get("cnn")
    x = torch.as_tensor(data.X_explain)
    rng = np.random.default_rng(0)
    by_label = AttributionRecipe("gradient").explain(cnn, data, rng, {})
    by_prediction = AttributionRecipe("gradient", target="prediction").explain(cnn, data, rng, {})
    predicted = torch.as_tensor(cnn.predict(data.X_explain))
    torch.testing.assert_close(by_label, attribute("gradient", cnn.module, x, torch.as_tensor(data.y_explain)))
    torch.testing.assert_close(by_prediction, attribute("gradient", cnn.module, x, predicted))
    wrong = predicted != torch.as_tensor(data.y_explain)
    assert wrong.any()  # the two rules differ on the misclassified rows only
    differs = (by_label != by_prediction).flatten(1).any(dim=1)
    assert torch.equal(differs, wrong)
    with pytest.raises(ValueError, match="unknown target rule"):
        AttributionRecipe("gradient", target="random")
    with pytest.raises(KeyError, match="unknown attribution method"):
        AttributionRecipe("no_such_function")
