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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["Round", "successive_halving", "successive_halving_many", "screening_record"]

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
    in round order. Only the chosen round's model is kept in memory. One model's halving is
    :func:`successive_halving_many` of one member.
    """
    (result,) = successive_halving_many(
        lambda members, features: [fit(features[0])], [np.arange(n_features, dtype=np.int64)], keep
    )
    if isinstance(result, BaseException):
        raise result
    return result


def successive_halving_many(
    fit: Callable[[list[int], list[np.ndarray]], list[tuple[T, float, np.ndarray] | BaseException]],
    features: Sequence[np.ndarray],
    keep: float,
) -> list[tuple[Round[T], list[tuple[int, float]]] | BaseException]:
    """:func:`successive_halving` of one model per entry of ``features`` (each member's first-round inputs:
    ascending int64 column indices, at least one), many rounds trained as one batch.

    The members whose next round reads the most inputs train that round together, as one batch: ``fit(members,
    features) -> [(model, score, importance) or exception, ...]`` (``members``: their indices, ascending;
    ``features``: one ascending int64 array each, all of one length). Which members share a batch depends on their
    input counts alone, and members that start alike share every round; members that start apart meet where their
    counts meet (102 and 51 inputs from the second round of the first on). A member whose round raised (an
    exception in its place) stops there: its exception is its result.
    """
    if not 0.0 < keep < 1.0:
        raise ValueError(f"keep must lie strictly between 0 and 1, got {keep}")
    current = [np.asarray(f, dtype=np.int64) for f in features]
    if any(len(f) < 1 for f in current):
        raise ValueError("successive halving needs at least one input per member")
    n_members = len(current)
    best: list[Round[T] | None] = [None] * n_members
    records: list[list[tuple[int, float]]] = [[] for _ in range(n_members)]
    results: list[tuple[Round[T], list[tuple[int, float]]] | BaseException | None] = [None] * n_members
    going = list(range(n_members))
    while going:
        widest = max(len(current[i]) for i in going)
        batch = [i for i in going if len(current[i]) == widest]
        fitted = fit(batch, [current[i] for i in batch])
        for i, out in zip(batch, fitted, strict=True):
            if isinstance(out, BaseException):
                results[i] = out
                continue
            model, score, importance = out
            score = -math.inf if not np.isfinite(score) else float(score)
            records[i].append((widest, score))
            log.debug("halving round on %d inputs: score %.4f", widest, score)
            chosen = best[i]
            if chosen is None or score >= chosen.score:
                best[i] = chosen = Round(current[i], score, model)
            if widest == 1:
                results[i] = (chosen, records[i])
                continue
            importance = np.asarray(importance, dtype=np.float64)
            if importance.shape != current[i].shape:
                raise ValueError(f"fit must return one importance per feature ({widest}), got {importance.shape}")
            n_next = min(widest - 1, max(1, math.ceil(keep * widest)))
            current[i] = np.sort(current[i][np.argsort(-importance, kind="stable")[:n_next]])
        going = [i for i in going if results[i] is None]
    return [r for r in results if r is not None]


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
