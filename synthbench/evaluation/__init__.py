"""Evaluation protocol (folds, column permutations) and scorers."""

from synthbench.evaluation.protocol import Fold, FoldData, make_folds, seed_stream
from synthbench.evaluation.scorers import SCORERS, GroundTruthScorer, MethodOutput, Scorer, get_scorer

__all__ = ["Fold", "FoldData", "make_folds", "seed_stream", "MethodOutput", "Scorer", "GroundTruthScorer", "SCORERS", "get_scorer"]
