"""MetaQuantus' meta-consistency of a verdict (Hedström et al., TMLR 2023): its criteria as the paper and its code
define them, the scorer that measures them, and the report that sets them beside validity and reliability."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from synthbench.report.study.reliability import iec_resilience
from synthbench.scoring.meta_consistency import _wilcoxon_p, perturbed_model


def test_intra_consistency_is_the_wilcoxon_p_value_one_where_nothing_moved():
    """MetaQuantus' sanity estimators: one whose scores never move is perfectly resilient (IAC_NR = p = 1) and not
    reactive at all (IAC_AR = 1 - p = 0); one whose scores always shift is the reverse."""
    rng = np.random.default_rng(0)
    q = rng.uniform(size=200)
    assert _wilcoxon_p(q, q.copy(), stats) == 1.0
    shifted = q - 1000.0 - rng.normal(size=200)
    assert _wilcoxon_p(q, shifted, stats) < 1e-10
    noisy = q + rng.normal(0, 1e-3, 200)
    want = stats.wilcoxon(q, noisy, zero_method="zsplit", alternative="two-sided").pvalue
    assert _wilcoxon_p(q, noisy, stats) == pytest.approx(want)
    assert _wilcoxon_p(np.array([np.nan]), np.array([1.0]), stats) != _wilcoxon_p(q, q, stats)  # no pair: NaN


def test_inter_consistency_under_minor_noise_is_the_share_of_unchanged_ranks():
    """IEC_NR counts, over the counted examples and the methods, a method keeping its rank among the methods: 1 for
    unchanged values, 1/3 for three methods whose order reverses (the middle one keeps its place)."""
    before = np.array([[0.1, 0.5], [0.2, 0.6], [0.3, 0.7]])  # (methods, examples)
    counted = np.array([True, True])
    assert iec_resilience(before, before + 0.01, counted) == 1.0
    assert iec_resilience(before, before[::-1], counted) == pytest.approx(1 / 3)
    assert np.isnan(iec_resilience(before, before, np.array([False, False])))
    swapped = before.copy()
    swapped[:, 1] = swapped[::-1, 1]  # only the second example reverses; the first is not counted
    assert iec_resilience(before, swapped, np.array([False, True])) == pytest.approx(1 / 3)


def test_a_perturbed_model_multiplies_each_parameter_by_seeded_noise_around_one():
    import torch

    from synthbench.models.randomise import sequential_layers

    class Model:
        def __init__(self):
            self.module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))

    model = Model()
    names = [layer.name for layer in sequential_layers(model.module, lambda layer, g: None)]
    weight = model.module[0].weight.detach().clone()
    small, again = perturbed_model(model, names, 0.001, seed=3), perturbed_model(model, names, 0.001, seed=3)
    assert torch.equal(model.module[0].weight, weight)  # the original is left alone
    ratio = (small.module[0].weight / weight).detach()
    assert torch.equal(small.module[0].weight, again.module[0].weight)  # seeded
    assert 0 < (ratio - 1).abs().max() < 0.01 and abs(float((ratio - 1).std()) - 0.001) < 0.0005
    assert not torch.equal(perturbed_model(model, names, 2.0, seed=3).module[2].bias, model.module[2].bias)


def test_a_verdict_that_never_moves_is_resilient_and_not_reactive():
    """MetaQuantus' ``Estimator_Same``: a verdict whose per-example values ignore the model. Under minor model noise
    the network keeps (nearly) every prediction, so the examples count, and nothing moves: IAC_NR = 1; under
    disruptive noise nothing moves either: IAC_AR = 0 and no example got worse, IEC_AR = 0."""
    from synthbench.methods import get_method
    from synthbench.methods.registry import run_method
    from synthbench.models import SharedModels
    from synthbench.scoring import SCORERS, Scorer, Scores, configure_scorer
    from synthbench.scoring.truth.metrics import Metric
    from synthbench.testing import CheckData

    class Same(Scorer):
        name = "same"
        metrics = {"same": Metric("same", "higher", "a constant per example", kinds=("tabular",))}

        def score(self, output, data, spec, models):
            values = np.linspace(0, 1, len(data.X_explain))
            return Scores({"same": float(values.mean())}, per_example={"same": values})

    fold = CheckData().fold("tabular")
    models = SharedModels(fold)
    spec = get_method("saliency")
    with SCORERS.temporarily("same", Same()):
        meta = configure_scorer("meta_consistency", {"verdict": "same", "perturbations": 2})
        got = meta.score(run_method(spec, fold, models), fold, spec, models)
    assert got["meta_iac_nr"] == 1.0 and got["meta_iac_ar"] == 0.0 and got["meta_iec_ar"] == 0.0
    assert got["meta_kept_minor_0"] > 0.95 and got["meta_kept_minor_1"] > 0.95  # minor noise keeps predictions
    assert set(got.per_example) == {
        "meta_unperturbed",
        "meta_minor_0",
        "meta_minor_1",
        "meta_kept_minor_0",
        "meta_kept_minor_1",
    }


def test_meta_consistency_from_the_command_line_to_the_report(tmp_path):
    """ROAD judged by MetaQuantus on xor: each method's cell carries IAC and IEC under model noise; the report
    computes IEC_NR across the fold's methods and MC, and sets MC beside ROAD's validity and reliability."""
    from synthbench.report import build_report, load_results
    from synthbench.report.parts import store_parts
    from synthbench.report.study.verdicts import verdict_validity
    from synthbench.run import main

    store = tmp_path / "r.sqlite"
    args = ["--datasets", "xor", "--decoys", "6", "--n-samples", "300", "--folds", "2", "--jobs", "1"]
    args += ["--methods", "saliency,integrated_gradients,guided_backprop,anova,random", "--model", "sparse_mlp"]
    args += ["--scorer", "ground_truth,road,meta_consistency", "--scorer-option", "perturbations=2", "--quiet"]
    assert main([*args, "--store", str(store)]) == 0
    results = load_results(store, all_models=True)
    validity = verdict_validity(store_parts(results))
    assert not any(validity.settings["verdict"].str.startswith("meta_consistency"))  # not a verdict of the methods
    meta = validity.meta.iloc[0]
    assert meta["verdict"] == "road `road_gap`" and meta["folds"] >= 1
    for criterion in ("iac_nr", "iac_ar", "iec_nr", "iec_ar"):
        assert 0.0 <= meta[criterion] <= 1.0, criterion
    assert meta["mc"] == pytest.approx(np.mean([meta[c] for c in ("iac_nr", "iac_ar", "iec_nr", "iec_ar")]))
    road = validity.summary.set_index("verdict").loc["road `road_gap`"]
    assert road["mc"] == pytest.approx(validity.meta["mc"].mean())
    trust = build_report(results).markdown.split("## Which verdict to trust")[1]
    assert "meta-consistency MC [95 % CI]" in trust and f"{road['mc']:.2f}" in trust
