"""Scorers: what a method's output on one fold is worth, each with its own declared metrics.

The package sits above :mod:`synthbench.methods` and :mod:`synthbench.models` (a scorer may
rerun a method or train models) and below the runner. Registered scorers:

* ``ground_truth`` (:mod:`~synthbench.scoring.ground_truth`): rankings and per-instance maps
  against the dataset's known relevant features (:mod:`~synthbench.scoring.metrics`).
* ``road`` (:mod:`~synthbench.scoring.road`): the explained model's accuracy as the inputs ranked
  first (or last) are imputed (remove and debias).
* ``roar``, ``kar`` (:mod:`~synthbench.scoring.retrain`): the test accuracy of models retrained
  with the inputs ranked first replaced (remove and retrain), or those ranked last (keep and retrain).
* ``randomisation``, ``smprt``, ``emprt`` (:mod:`~synthbench.scoring.randomisation`): how much the
  maps change as the explained model's layers are re-drawn (model-parameter randomisation).
* ``data_randomisation`` (:mod:`~synthbench.scoring.data_randomisation`): how much the maps
  change when every model is retrained on permuted labels.
* ``random_logit`` (:mod:`~synthbench.scoring.random_logit`): how much a map changes when another
  class is explained.
* ``fragility`` (:mod:`~synthbench.scoring.fragility`): how far label-preserving perturbations,
  random and adversarial, move the maps, and off the ground truth.
"""

from synthbench.scoring.base import (SCORERS, Curve, Scorer, Scores, SkipCell, configure_scorer, explained_kind, explained_model,
                                     get_metric, get_scorer,
                                     register_scorer, scorer_names, scorer_options)
from synthbench.scoring.ground_truth import GROUND_TRUTH, GroundTruthScorer
from synthbench.scoring.metrics import Metric
from synthbench.scoring.road import ROAD, RoadScorer
from synthbench.scoring.retrain import KAR, ROAR, RetrainScorer
from synthbench.scoring.randomisation import EMPRT, RANDOMISATION, SMPRT, RandomisationScorer
from synthbench.scoring.random_logit import RANDOM_LOGIT, RandomLogitScorer
from synthbench.scoring.data_randomisation import DATA_RANDOMISATION, DataRandomisationScorer
from synthbench.scoring.fragility import FRAGILITY, FragilityScorer

__all__ = ["Scorer", "Scores", "Curve", "SCORERS", "Metric", "GroundTruthScorer", "GROUND_TRUTH", "RoadScorer",
           "ROAD", "RetrainScorer", "ROAR", "KAR", "RandomisationScorer", "RANDOMISATION", "SMPRT", "EMPRT", "SkipCell",
           "RandomLogitScorer", "RANDOM_LOGIT", "DataRandomisationScorer", "DATA_RANDOMISATION",
           "FragilityScorer", "FRAGILITY", "explained_kind", "explained_model",
           "configure_scorer", "scorer_options", "get_scorer", "get_metric", "register_scorer", "scorer_names"]
