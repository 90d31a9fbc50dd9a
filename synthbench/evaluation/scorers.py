"""Scorers turn a method's output on one fold into named metric values.

A scorer is anything with a ``name``, the ``metrics`` it reports and a
``score(output, data, method) -> dict[str, float]`` method. :class:`GroundTruthScorer` compares
with the generator's truth; a retraining scorer (ROAR: remove the top-ranked features and
retrain) or a model-randomisation scorer implements the same protocol with its own metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from synthbench import metrics as M
from synthbench.evaluation.protocol import FoldData

__all__ = ["MethodOutput", "Scorer", "GroundTruthScorer", "SCORERS", "get_scorer"]


@dataclass(frozen=True, eq=False)
class MethodOutput:
    """What a method returns for one fold.

    Attributes
    ----------
    scores : float (p,), one importance per (permuted) feature; higher ``|score|`` = more important
    local : float (n_explain, p) or None, per-instance attributions of the explained rows
    scores_2k : float (p,) or None, a second global ranking that only metrics declaring
        ``reads_2k_ranking`` (``best_2k``) read. Set by the 2023 reproductions whose k and 2k
        selections came from separate runs (the paper's concrete autoencoder); None means those
        metrics read ``scores`` like every other.
    """

    scores: np.ndarray
    local: np.ndarray | None = None
    scores_2k: np.ndarray | None = None

    def validate(self, n_features: int, n_explain: int) -> MethodOutput:
        """Return a float64 copy after checking shapes and finiteness; raise ValueError otherwise."""
        s = _global_scores(self.scores, n_features, "scores")
        s_2k = None if self.scores_2k is None else _global_scores(self.scores_2k, n_features, "scores_2k")
        local = None
        if self.local is not None:
            local = np.asarray(self.local, dtype=np.float64)
            if local.shape != (n_explain, n_features):
                raise ValueError(f"method returned local attributions of shape {local.shape}, expected ({n_explain}, {n_features})")
            if not np.all(np.isfinite(local)):
                raise ValueError("method returned NaN or inf local attributions")
        return MethodOutput(s, local, s_2k)


def _global_scores(values: np.ndarray, n_features: int, what: str) -> np.ndarray:
    s = np.asarray(values, dtype=np.float64)
    if s.shape != (n_features,):
        raise ValueError(f"method returned {what} of shape {s.shape}, expected ({n_features},)")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"method returned NaN or inf {what}")
    return s


class Scorer(Protocol):
    """Protocol every scorer implements.

    ``models`` is the fold's :class:`~synthbench.models.SharedModels`: a randomisation scorer
    asks it for the trained model and reruns ``method`` on a randomised copy; a retraining
    scorer (ROAR) trains anew on ``data`` without the top-ranked features.
    """

    name: str

    def score(self, output: MethodOutput, data: FoldData, method: str, models: Any) -> dict[str, float]:
        """Metric values for ``method`` on one fold; random draws come from ``data.rng(...)``."""
        ...

    def chance(self, data: FoldData) -> dict[str, float]:
        """Each metric's expected value for a uniformly random ranking on this fold."""
        ...


def get_scorer(name: str) -> Scorer:
    """The scorer registered as ``name``; the error lists the valid names."""
    try:
        return SCORERS[name]
    except KeyError:
        raise KeyError(f"unknown scorer {name!r}; valid names: {', '.join(SCORERS)}") from None


@dataclass(frozen=True)
class GroundTruthScorer:
    """Compares a ranking with the dataset's known relevant features.

    Global metrics always apply; local ones apply when the dataset has per-instance truth and
    the method returned per-instance attributions. Ties are broken with a stream derived from
    the cell (seed, fold, method) and the metric's name, so adding a metric changes no other.
    """

    name: str = "ground_truth"
    metrics: tuple[str, ...] = tuple(M.METRICS)

    def metric_names(self, data: FoldData, output: MethodOutput) -> list[str]:
        has_local = data.relevant_local is not None and output.local is not None
        return [m for m in self.metrics if M.get(m).scope == "global" or has_local]

    def score(self, output: MethodOutput, data: FoldData, method: str, models: Any = None) -> dict[str, float]:
        """Every applicable metric; raises ValueError if one falls outside its declared bounds."""
        values = {}
        for name in self.metric_names(data, output):
            metric = M.get(name)
            stream = data.rng("ties", method, name)
            if metric.scope == "global":
                ranking = output.scores_2k if metric.reads_2k_ranking and output.scores_2k is not None else output.scores
                truth, value = data.relevant, metric(ranking, data.relevant, stream)
            else:
                truth, value = data.relevant_local, metric(output.local, data.relevant_local, stream)
            lo, hi = metric.bounds(truth)
            if not (lo - 1e-9 <= value <= hi + 1e-9) and value == value:
                raise ValueError(f"{name} = {value} outside its declared bounds [{lo}, {hi}]")
            values[name] = value
        return values

    def chance(self, data: FoldData) -> dict[str, float]:
        """Each metric's expected value under a random ranking, for this fold's truth."""
        out = {}
        for name in self.metrics:
            metric = M.get(name)
            truth = data.relevant if metric.scope == "global" else data.relevant_local
            if truth is not None:
                out[name] = metric.chance(truth)
        return out


#: Scorers by name; a cell's ``scorer`` field names one of these.
SCORERS: dict[str, Scorer] = {"ground_truth": GroundTruthScorer()}
