"""A binary network with one logit per class (``screened_mlp_softmax``): the random-logit check judges the tables'
network there, and the one-logit presets keep their ids."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from synthbench.methods import get_method, run_method
from synthbench.methods.recipe import explained_targets, single_logit
from synthbench.models import SharedModels
from synthbench.models.mlp import MLPConfig, check_config
from synthbench.models.presets import mlp_config
from synthbench.protocol import cell_fold
from synthbench.scoring.base import SkipCell
from synthbench.scoring.randomisation.random_logit import RANDOM_LOGIT


@pytest.fixture(scope="module")
def fold():
    return cell_fold("xor", n_samples=300, seed=0, n_folds=3, fold=0, n_decoys=4)[0]


def test_the_softmax_preset_has_a_logit_per_class_and_its_maps_explain_each_row_s_label(fold):
    models = SharedModels(fold, preset="screened_mlp_softmax")
    mlp = models.get("mlp")
    logits = mlp.module(torch.as_tensor(fold.X_explain)).detach().double()
    assert mlp.n_outputs == 2 and logits.shape == (len(fold.y_explain), 2) and not single_logit(mlp, fold)
    np.testing.assert_allclose(mlp.predict_proba(fold.X_explain), torch.softmax(logits, dim=1).numpy(), atol=1e-6)
    assert models.info["mlp"]["competence"] > 0.8  # it learns xor as the one-logit screened network does
    np.testing.assert_array_equal(explained_targets("label", mlp, fold, fold.X_explain), fold.y_explain)


def test_random_logit_judges_the_softmax_network_and_skips_the_one_logit_one(fold):
    spec = get_method("saliency")
    softmax = SharedModels(fold, preset="screened_mlp_softmax")
    scores = RANDOM_LOGIT.score(run_method(spec, fold, softmax), fold, spec, softmax)
    value = scores["random_logit_spearman_abs"]
    assert np.isfinite(value) and -1.0 <= value <= 1.0
    one = SharedModels(fold, preset="screened_mlp")
    with pytest.raises(SkipCell, match="one output"):
        RANDOM_LOGIT.score(run_method(spec, fold, one), fold, spec, one)


def test_one_logit_configs_keep_their_ids_and_other_heads_are_refused():
    assert "binary_logits" not in MLPConfig().to_dict()  # the one-logit presets' cell ids are unchanged
    assert mlp_config("screened_mlp_softmax").to_dict()["binary_logits"] == 2
    with pytest.raises(ValueError, match="binary_logits must be 1"):
        check_config(MLPConfig(binary_logits=3))
