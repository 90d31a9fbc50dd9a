"""Localisation metrics against Quantus 0.6, their chance levels, and image methods on the fold's CNN against captum."""

from __future__ import annotations

import numpy as np
import pytest
import quantus
import torch

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.methods.neural import patch_mask
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput, dataset_folds
from synthbench.runner.grid import Cell
from synthbench.scoring import get_scorer
from synthbench.scoring.truth import localisation as L


def _maps_and_masks(n=12, h=10, w=10, seed=0):
    rng = np.random.default_rng(seed)
    maps = rng.random((n, h, w)) ** 3  # tie-free, skewed
    masks = np.zeros((n, h, w), dtype=bool)
    for i in range(n):
        r, c = rng.integers(0, h - 3), rng.integers(0, w - 3)
        masks[i, r : r + rng.integers(2, 4), c : c + rng.integers(2, 4)] = True
        maps[i][masks[i]] += rng.random() * 0.5  # some maps favour their mask
    return maps, masks


def _quantus(metric, maps, masks):
    x = np.zeros((len(maps), 1, *maps.shape[1:]))
    return np.array(
        metric(
            model=None,
            x_batch=x,
            y_batch=np.zeros(len(maps), dtype=int),
            a_batch=maps[:, None],
            s_batch=masks[:, None].astype(float),
        ),
        dtype=float,
    )


@pytest.mark.parametrize("shape", [(10, 10), (6, 9)])
def test_every_localisation_metric_equals_quantus(shape):
    maps, masks = _maps_and_masks(h=shape[0], w=shape[1])
    rng = np.random.default_rng(1)
    k = L.top_k(shape[0] * shape[1])
    references = {
        "mass_accuracy": quantus.RelevanceMassAccuracy(disable_warnings=True),
        "rank_accuracy": quantus.RelevanceRankAccuracy(disable_warnings=True),
        "pointing_game": quantus.PointingGame(disable_warnings=True),
        "map_auroc": quantus.AUC(disable_warnings=True),
        "top_k_intersection": quantus.TopKIntersection(k=k, disable_warnings=True),
    }
    assert set(references) == set(L.LOCALISATION_METRICS)
    for name, reference in references.items():
        ours = L.LOCALISATION_METRICS[name](maps, masks, rng)
        np.testing.assert_allclose(ours, _quantus(reference, maps, masks).mean(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_a_perfect_map_scores_the_top_and_random_maps_score_chance():
    _, masks = _maps_and_masks(n=400, h=12, w=12, seed=2)
    rng = np.random.default_rng(3)
    perfect = masks * (1 + 1e-3 * rng.random(masks.shape))  # all relevance on the mask, no ties inside it
    for name, metric in L.LOCALISATION_METRICS.items():
        lo, hi = metric.bounds(masks)
        value = metric(perfect, masks, rng)
        assert value == pytest.approx(hi, abs=1e-12), name
        random = metric(rng.random(masks.shape), masks, rng)
        assert random == pytest.approx(metric.chance(masks), abs=0.03), name
        constant = metric(np.ones(masks.shape), masks, rng)  # ties: broken at random, never by position
        assert constant == pytest.approx(metric.chance(masks), abs=0.05), name
        assert lo <= random <= hi


def test_channel_aggregation_and_bad_maps():
    a = np.array([[[[1.0, -2.0]], [[-3.0, 0.5]]]])  # (1, 2, 1, 2)
    np.testing.assert_allclose(L.aggregate_channels(a), [[[4.0, 2.5]]])
    np.testing.assert_allclose(L.aggregate_channels(a, "max_abs"), [[[3.0, 2.0]]])
    with pytest.raises(ValueError, match="unknown channel aggregation"):
        L.aggregate_channels(a, "mean")
    masks = np.array([[[True, False]]])
    with pytest.raises(ValueError, match="non-negative"):
        L.mass_accuracy(-np.ones((1, 1, 2)), masks, np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-empty mask"):
        L.rank_accuracy(np.ones((1, 1, 2)), ~masks & masks, np.random.default_rng(0))


@pytest.fixture(scope="module")
def shapes_fold():
    ds = datasets.make("shapes", n_samples=240, n_decoys=3, seed=0)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=4, seed=0)[0])
    return data, SharedModels(data, preset="cnn")


def test_the_ground_truth_scorer_reads_image_maps_against_the_masks(shapes_fold):
    data, models = shapes_fold
    scorer = get_scorer("ground_truth")
    spec = get_method("saliency")
    out = run_method(spec, data, models)
    values = scorer.score(out, data, spec, models)
    assert set(values) == set(L.LOCALISATION_METRICS) and set(scorer.chance(data)) == set(values)
    maps, masks = L.aggregate_channels(out.local), L.pixel_masks(data.relevant_local)
    for name, value in values.items():
        assert value == L.LOCALISATION_METRICS[name](maps, masks, data.rng("ties", "saliency", name))
    assert values["map_auroc"] > 0.8 and values["pointing_game"] > 0.5  # a CNN that learned looks at the signal
    # global scores alone have nothing to be scored against on images
    assert scorer.score(MethodOutput(out.scores), data, spec, models) == {}
    cell = Cell("shapes", 240, 3, 0, 4, 0, "saliency", model="cnn")
    assert cell.config()["scorer_params"] == {"channel_aggregation": "sum_abs"}
    assert "scorer_params" not in Cell("xor", 100, 3, 0, 2, 0, "saliency").config()


def test_image_methods_on_the_folds_cnn_equal_captum(shapes_fold):
    """In float64 on both sides: in float32 the CNN's sums and max-pooling near-ties fall the other way on another
    CPU's kernels (integrated gradients differed from captum on 294 of 184,320 elements on an AMD EPYC)."""
    from captum.attr import LRP, FeatureAblation, GuidedBackprop, InputXGradient, IntegratedGradients, Saliency
    from captum.attr._utils.lrp_rules import EpsilonRule
    from conftest import assert_float64_close, differs_beyond_float64_tolerance, in_float64

    data32, models = shapes_fold
    cnn, data = in_float64(models.get("cnn"), data32)
    x = torch.as_tensor(data.X_explain)
    y = torch.as_tensor(data.y_explain)
    assert cnn.module(x).shape == (len(y), 2)  # one logit per class: each image explains its own label
    mask = torch.as_tensor(patch_mask(data.input_shape, 4))
    flatten = next(m for m in cnn.module if isinstance(m, torch.nn.Flatten))
    flatten.rule = EpsilonRule()  # captum has no default rule for Flatten; epsilon there is the identity
    try:
        refs = {
            "gradient": Saliency(cnn.module).attribute(x, target=y, abs=False),
            "saliency": Saliency(cnn.module).attribute(x, target=y),
            "input_x_gradient": InputXGradient(cnn.module).attribute(x, target=y),
            "integrated_gradients": IntegratedGradients(cnn.module).attribute(x, target=y, n_steps=25),
            "guided_backprop": GuidedBackprop(cnn.module).attribute(x, target=y),
            "lrp_epsilon": LRP(cnn.module).attribute(x, target=y),
            "feature_ablation": FeatureAblation(cnn.module).attribute(x, target=y, feature_mask=mask),
        }
    finally:
        if hasattr(flatten, "rule"):  # captum removes the rules it attached itself
            del flatten.rule
    outs = {name: run_method(get_method(name), data, models, model=cnn).local for name in refs}
    for name, ref in refs.items():
        assert_float64_close(outs[name], ref, name)
    # The tolerance still catches a real error: a wrong baseline, a missing multiply by the inputs.
    shifted = IntegratedGradients(cnn.module).attribute(x, target=y, n_steps=25, baselines=0.05)
    assert differs_beyond_float64_tolerance(outs["integrated_gradients"], shifted)
    assert differs_beyond_float64_tolerance(outs["input_x_gradient"], refs["gradient"])
    # The fold's own float32 model: a forward-only method (no pooling tie decides a gradient's path) gives the
    # float64 map to float32 precision, and every method scores |map| averaged over the rows.
    out = run_method(get_method("feature_ablation"), data32, models)
    scale = np.abs(outs["feature_ablation"]).max()
    np.testing.assert_allclose(out.local, outs["feature_ablation"], rtol=0, atol=1e-4 * scale)
    np.testing.assert_allclose(out.scores, np.abs(out.local).mean(axis=0), rtol=1e-6)


def test_image_parameters_are_declared_per_kind_and_recorded():
    ig = get_method("integrated_gradients")
    assert ig.params_for("tabular") == {"n_steps": 50} and ig.params_for("image") == {"n_steps": 25}
    sg = get_method("smoothgrad_sq")
    assert sg.params_for("image") == {"n_samples": 15, "noise_level": 0.15, "per_feature": False}
    assert Cell("shapes", 100, 2, 0, 2, 0, "integrated_gradients", model="cnn").method_params == {"n_steps": 25}
    assert get_method("sobel").inputs == ("image",) and "image" in get_method("random").inputs
    assert get_method("rf").inputs == ("tabular",)
