"""Scorers: what a method's output on one fold is worth, each with its own declared metrics.

The package sits above :mod:`synthbench.methods` and :mod:`synthbench.models` (a scorer may
rerun a method or train models) and below the runner. Registered scorers:

* ``ground_truth`` (:mod:`~synthbench.scoring.truth.ground_truth`): rankings and per-instance maps
  against the dataset's known relevant features (:mod:`~synthbench.scoring.truth.metrics`).
* ``road`` (:mod:`~synthbench.scoring.removal.road`): the explained model's accuracy as the inputs ranked
  first (or last) are imputed (remove and debias).
* ``roar``, ``kar`` (:mod:`~synthbench.scoring.removal.retrain`): the test accuracy of models retrained
  with the inputs ranked first replaced (remove and retrain), or those ranked last (keep and retrain).
* ``randomisation``, ``smprt``, ``emprt`` (:mod:`~synthbench.scoring.randomisation.model`): how much the
  maps change as the explained model's layers are re-drawn (model-parameter randomisation).
* ``data_randomisation`` (:mod:`~synthbench.scoring.randomisation.data`): how much the maps
  change when every model is retrained on permuted labels.
* ``random_logit`` (:mod:`~synthbench.scoring.randomisation.random_logit`): how much a map changes when another
  class is explained.
* ``fragility`` (:mod:`~synthbench.scoring.fragility.scorer`): how far label-preserving perturbations,
  random and adversarial, move the maps, and off the ground truth.
* ``meta_consistency`` (:mod:`~synthbench.scoring.meta_consistency`): MetaQuantus' criteria of another verdict,
  how it stays put under minor perturbations of the model (or inputs) and reacts to disruptive ones.
"""

from synthbench.scoring.base import (
    SCORERS,
    Abilities,
    Curve,
    Scorer,
    Scores,
    SkipCell,
    configure_scorer,
    explained_kind,
    explained_model,
    get_metric,
    get_scorer,
    register_scorer,
    scorer_names,
    scorer_options,
)
from synthbench.scoring.truth.ground_truth import GROUND_TRUTH, GroundTruthScorer
from synthbench.scoring.truth.metrics import Metric
from synthbench.scoring.removal.road import ROAD, RoadScorer
from synthbench.scoring.removal.retrain import KAR, ROAR, RetrainScorer
from synthbench.scoring.randomisation.model import EMPRT, RANDOMISATION, SMPRT, RandomisationScorer
from synthbench.scoring.randomisation.random_logit import RANDOM_LOGIT, RandomLogitScorer
from synthbench.scoring.randomisation.data import DATA_RANDOMISATION, DataRandomisationScorer
from synthbench.scoring.fragility.scorer import FRAGILITY, FragilityScorer
from synthbench.scoring.meta_consistency import META_CONSISTENCY, MetaConsistencyScorer

__all__ = [
    "Scorer",
    "Abilities",
    "Scores",
    "Curve",
    "SCORERS",
    "Metric",
    "SkipCell",
    "GroundTruthScorer",
    "GROUND_TRUTH",
    "RoadScorer",
    "ROAD",
    "RetrainScorer",
    "ROAR",
    "KAR",
    "RandomisationScorer",
    "RANDOMISATION",
    "SMPRT",
    "EMPRT",
    "RandomLogitScorer",
    "RANDOM_LOGIT",
    "DataRandomisationScorer",
    "DATA_RANDOMISATION",
    "FragilityScorer",
    "FRAGILITY",
    "MetaConsistencyScorer",
    "META_CONSISTENCY",
    "explained_kind",
    "explained_model",
    "configure_scorer",
    "scorer_options",
    "get_scorer",
    "get_metric",
    "register_scorer",
    "scorer_names",
]
