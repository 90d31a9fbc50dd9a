"""Scorers: what a method's output on one fold is worth, each with its own declared metrics.

The package sits above :mod:`synthbench.methods` and :mod:`synthbench.models` (a scorer may
rerun a method or train models) and below the runner. Registered scorers:

* ``ground_truth`` (:mod:`~synthbench.scoring.ground_truth`): rankings and per-instance maps
  against the dataset's known relevant features (:mod:`~synthbench.scoring.metrics`).
"""

from synthbench.scoring.base import Scorer, get_metric, get_scorer, register_scorer, scorer_names
from synthbench.scoring.ground_truth import GROUND_TRUTH, GroundTruthScorer
from synthbench.scoring.metrics import Metric

__all__ = ["Scorer", "Metric", "GroundTruthScorer", "GROUND_TRUTH", "get_scorer", "get_metric", "register_scorer",
           "scorer_names"]
