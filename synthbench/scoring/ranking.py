"""The one tie-broken ranking every scorer reads.

The ground-truth metrics (:mod:`~synthbench.scoring.truth.metrics`), the localisation metrics
(:mod:`~synthbench.scoring.truth.localisation`) and the removal scorers
(:mod:`~synthbench.scoring.removal.base`: ROAD, remove-and-retrain) all order a method's scores with
:func:`rank`, or take its first ``k`` with :func:`top_k_mask` (the same entries without a sort), so a
tie means the same thing everywhere: an independent uniform key drawn from the
caller's generator orders the tied entries, never their position (a constant map ranks like the
random control).
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank", "top_k_mask"]


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
    key, tiebreak = _keys(scores, rng, signed)
    return np.lexsort((tiebreak, -key), axis=axis)


def _keys(scores: np.ndarray, rng: np.random.Generator, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """The importance key (``|score|``, or ``score`` when ``signed``) and one uniform tie-break per entry."""
    s = np.asarray(scores, dtype=np.float64)
    return (s if signed else np.abs(s)), rng.random(s.shape)


def top_k_mask(scores: np.ndarray, k: int, rng: np.random.Generator, *, signed: bool = False) -> np.ndarray:
    """Which entries of each row :func:`rank` puts among its first ``k``, without sorting the rows.

    Parameters
    ----------
    scores : float array ``(..., m)``; each 1-d slice along the last axis is one ranking.
    k : how many entries count as the top, ``0 <= k <= m``.
    rng, signed : as for :func:`rank`, and the generator draws exactly what :func:`rank` draws
        (``rng.random(scores.shape)``).

    Returns
    -------
    bool array of the shape of ``scores``, ``k`` True per row: the entries of
    ``rank(scores, rng, signed=signed)[..., :k]`` with the same generator state (the same set, pinned
    in the tests). A partition finds each row's ``k``-th largest key; every entry above it is in,
    and of the entries equal to it, those with the smallest uniform keys fill the rest, as the
    sort on ``(-key, uniform)`` would order them. Linear in ``m`` where :func:`rank` sorts.
    """
    key, tiebreak = _keys(scores, rng, signed)
    m = key.shape[-1]
    if not 0 <= k <= m:
        raise ValueError(f"k must satisfy 0 <= k <= m = {m}, got {k}")
    if k in (0, m):
        return np.full(key.shape, bool(k))
    kth = np.partition(key, m - k, axis=-1)[..., m - k : m - k + 1]
    mask = key > kth
    tied = key == kth
    need = k - mask.sum(axis=-1)  # at least 1: the k-th largest itself is tied with itself
    crowded = tied.sum(axis=-1) > need  # rows whose ties at the k-th key do not all fit
    mask |= tied & ~crowded[..., None]
    if crowded.any():
        keys = np.where(tied[crowded], tiebreak[crowded], np.inf)
        last = np.take_along_axis(np.sort(keys, axis=-1), need[crowded][:, None] - 1, axis=-1)
        mask[crowded] |= keys <= last
    return mask
