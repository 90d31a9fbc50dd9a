"""Successive halving of a model's inputs on its own importances, the round chosen on validation.

A network trained on a table with hundreds of decoy columns and a thousand rows fits the decoys
and learns nothing (Grinsztajn, Oyallon & Varoquaux, NeurIPS 2022: MLPs are not robust to
uninformative features). A group penalty on the first layer ranks the columns well even when
the network itself is still near chance, so :func:`successive_halving` trains on every column,
keeps the ``keep`` share with the largest importances, trains again on those only, and so on down
to one column (recursive feature elimination, Guyon et al. 2002, with geometric steps). Every
round is scored on the *same* held-out training rows, and the round with the best score is the
model (the later, sparser round on ties). The fold's test rows take no part.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["Round", "successive_halving", "screening_record"]

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Round(Generic[T]):
    """One training of the halving: the input ``features`` it read (ascending), its validation
    ``score`` (higher is better) and the fitted ``model``."""

    features: np.ndarray
    score: float
    model: T


def successive_halving(
    fit: Callable[[np.ndarray], tuple[T, float, np.ndarray]],
    n_features: int,
    keep: float,
) -> tuple[Round[T], list[tuple[int, float]]]:
    """The best round of halving ``n_features`` inputs, and every round's (input count, score).

    Parameters
    ----------
    fit : ``fit(features) -> (model, score, importance)``: trains on the input columns ``features``
        (int64, ascending), returns the model, its validation score (higher is better; NaN counts as
        the worst) and one non-negative importance per given feature.
    n_features : inputs of the first round (all of them)
    keep : share of a round's inputs the next round keeps (``ceil``; at least one fewer), in (0, 1)

    Returns
    -------
    The chosen :class:`Round` (best score; the sparser on ties) and ``[(len(features), score), ...]``
    in round order. Only the chosen round's model is kept in memory.
    """
    if not 0.0 < keep < 1.0:
        raise ValueError(f"keep must lie strictly between 0 and 1, got {keep}")
    if n_features < 1:
        raise ValueError(f"successive halving needs at least one input, got {n_features}")
    features = np.arange(n_features, dtype=np.int64)
    best: Round[T] | None = None
    record: list[tuple[int, float]] = []
    while True:
        model, score, importance = fit(features)
        score = -math.inf if not np.isfinite(score) else float(score)
        record.append((len(features), score))
        log.debug("halving round on %d inputs: score %.4f", len(features), score)
        if best is None or score >= best.score:
            best = Round(features, score, model)
        if len(features) == 1:
            return best, record
        importance = np.asarray(importance, dtype=np.float64)
        if importance.shape != features.shape:
            raise ValueError(f"fit must return one importance per feature ({len(features)}), got {importance.shape}")
        n_next = min(len(features) - 1, max(1, math.ceil(keep * len(features))))
        features = np.sort(features[np.argsort(-importance, kind="stable")[:n_next]])


def screening_record(model: Any) -> dict[str, Any]:
    """What a screened model's training chose, as JSON values: ``inputs_read`` (its ``features``) and
    ``screening`` (its ``[[inputs, score], ...]`` rounds, a non-finite score as None); empty for a
    model whose ``features`` is None (it reads every input, unscreened)."""
    if model.features is None:
        return {}
    return {
        "inputs_read": [int(j) for j in model.features],
        "screening": [[int(n), float(v) if np.isfinite(v) else None] for n, v in model.screening],
    }
