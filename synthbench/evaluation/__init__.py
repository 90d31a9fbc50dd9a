"""Evaluation protocol (folds, column permutations) and scorers."""

from synthbench.evaluation.protocol import Fold, FoldData, make_folds, seed_stream
from synthbench.evaluation.scorers import GroundTruthScorer, MethodOutput, Scorer

__all__ = ["Fold", "FoldData", "make_folds", "seed_stream", "MethodOutput", "Scorer", "GroundTruthScorer"]
