"""The ground-truth scorer: which metrics apply, stable tie streams, bound validation."""

import dataclasses

import numpy as np
import pytest
from conftest import fold_of

from synthbench import datasets
from synthbench.protocol import MethodOutput
from synthbench.scoring import GroundTruthScorer, get_scorer
from synthbench.scoring.truth import metrics as M


@pytest.fixture(scope="module")
def switch_fold():
    return fold_of(datasets.make("switch", n_samples=90, n_decoys=4, seed=3))


def test_local_metrics_need_local_truth_and_local_output(switch_fold):
    scorer = get_scorer("ground_truth")
    flat = MethodOutput(np.zeros(switch_fold.n_features))
    assert set(scorer.score(flat, switch_fold, "m")) == set(M.names("global"))
    local = MethodOutput(np.zeros(switch_fold.n_features), np.ones(switch_fold.X_explain.shape))
    assert set(scorer.score(local, switch_fold, "m")) == set(M.METRICS)
    xor = fold_of(datasets.make("xor", n_samples=90, n_decoys=4, seed=3))
    assert set(scorer.score(MethodOutput(np.zeros(6), np.ones(xor.X_explain.shape)), xor, "m")) == set(
        M.names("global")
    )


def test_tie_streams_depend_on_metric_name_not_on_the_metric_list(switch_fold):
    tied = MethodOutput(np.zeros(switch_fold.n_features))
    full = GroundTruthScorer().score(tied, switch_fold, "m")
    alone = GroundTruthScorer(metrics={"best_k": M.METRICS["best_k"]}).score(tied, switch_fold, "m")
    assert alone["best_k"] == full["best_k"]
    other_method = GroundTruthScorer().score(tied, switch_fold, "other")
    assert other_method != full  # a different cell breaks ties differently


def test_values_outside_declared_bounds_are_refused(switch_fold, monkeypatch):
    broken = dataclasses.replace(M.get("best_k"), fn=lambda s, r, g: 1.5)
    monkeypatch.setitem(M.METRICS, "best_k", broken)
    with pytest.raises(ValueError, match="outside its declared bounds"):
        GroundTruthScorer().score(MethodOutput(np.zeros(switch_fold.n_features)), switch_fold, "m")


def test_chance_covers_every_metric_with_truth(switch_fold):
    chance = GroundTruthScorer().chance(switch_fold)
    assert set(chance) == set(M.METRICS)
    k, p = switch_fold.relevant.sum(), switch_fold.n_features
    assert chance["best_k"] == pytest.approx(k / p)
    with pytest.raises(KeyError, match="valid names"):
        get_scorer("no_such_scorer")
