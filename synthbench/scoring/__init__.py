"""Scorers: what a method's output on one fold is worth, each with its own declared metrics.

The package sits above :mod:`synthbench.methods` and :mod:`synthbench.models` (a scorer may
rerun a method or train models) and below the runner. Registered scorers:

* ``ground_truth`` (:mod:`~synthbench.scoring.ground_truth`): rankings and per-instance maps
  against the dataset's known relevant features (:mod:`~synthbench.scoring.metrics`).
* ``road`` (:mod:`~synthbench.scoring.road`): the explained model's accuracy as the inputs ranked
  first (or last) are imputed (remove and debias).
"""

from synthbench.scoring.base import (Curve, Scorer, Scores, explained_model, get_metric, get_scorer, register_scorer,
                                     scorer_names)
from synthbench.scoring.ground_truth import GROUND_TRUTH, GroundTruthScorer
from synthbench.scoring.metrics import Metric, MetricInfo
from synthbench.scoring.road import ROAD, RoadScorer

__all__ = ["Scorer", "Scores", "Curve", "Metric", "MetricInfo", "GroundTruthScorer", "GROUND_TRUTH", "RoadScorer",
           "ROAD", "explained_model", "get_scorer", "get_metric", "register_scorer", "scorer_names"]
