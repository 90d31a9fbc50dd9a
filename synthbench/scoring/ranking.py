"""The one tie-broken ranking every scorer reads.

The ground-truth metrics (:mod:`~synthbench.scoring.metrics`), the localisation metrics
(:mod:`~synthbench.scoring.localisation`) and the removal scorers
(:mod:`~synthbench.scoring.removal`: ROAD, remove-and-retrain) all order a method's scores with
:func:`rank`, so a tie means the same thing everywhere: an independent uniform key drawn from the
caller's generator orders the tied entries, never their position (a constant map ranks like the
random control).
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank"]


def rank(scores: np.ndarray, rng: np.random.Generator, *, signed: bool = False, axis: int = -1) -> np.ndarray:
    """Indices that order ``scores`` along ``axis`` from most to least important, ties at random.

    Parameters
    ----------
    scores : float array of any shape: ``(p,)`` one ranking of ``p`` features, ``(n, p)`` one
        ranking per row, ...; every 1-d slice along ``axis`` is ranked on its own. Finite values
        (the callers check).
    rng : the generator that breaks ties. Each call draws exactly ``rng.random(scores.shape)``
        (one uniform key per entry, whether or not there is a tie), so the streams of the
        callers advance the same way for every input of a given shape.
    signed : False: higher ``|score|`` is more important (the sign is ignored). True: higher
        ``score`` is more important (the most negative entry ranks last).
    axis : the axis along which entries are ranked.

    Returns
    -------
    int array of the shape of ``scores``: along ``axis``, the index of the most important entry
    first. Entries with equal keys are ordered by the uniform keys (a stable sort on
    ``(-key, uniform)``), so equal scores are in a random order that the generator's seed fixes.
    """
    s = np.asarray(scores, dtype=np.float64)
    key = s if signed else np.abs(s)
    tiebreak = rng.random(s.shape)
    return np.lexsort((tiebreak, -key), axis=axis)
