"""Relief with one nearest hit and one nearest miss (Kira & Rendell, 1992), as the 2023 benchmark ran it.

For every row ``i`` of ``X`` (all of them, so no sampling is involved), its nearest *hit* is the
closest other row of the same class and its nearest *miss* the closest row of another class,
by Euclidean distance on the raw columns; on equal distances the lower row index wins. The
score of feature ``f`` is

    score_f = (1 / n) * sum_i ( |x_if - x_miss(i),f| - |x_if - x_hit(i),f| ) / range_f,

with ``range_f = max - min`` of the column. Higher = more important; scores lie in ``[-1, 1]``.
A constant column (range 0) scores 0 (the 2023 code divided by zero there). This is the
benchmark's hand-written Relief (``src/relief.py`` at commit 06afd2e), not ReliefF: see
:mod:`synthbench.selection.relief` for the k-neighbour ReliefF of skrebate.

Memory: the distances are computed for blocks of rows (``block`` rows × ``n`` float64 at a time).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

__all__ = ["relief_1nn"]


def relief_1nn(X: np.ndarray, y: np.ndarray, *, block: int = 1024) -> np.ndarray:
    """Relief scores of shape ``(p,)`` (float64, signed) from one nearest hit and one nearest miss per row.

    Parameters
    ----------
    X : array of shape (n, p), finite
    y : array of shape (n,), class labels (any number of classes)
    block : rows whose distances to every row are held at once

    Raises
    ------
    ValueError
        Fewer than two rows in some class, or a single class (no hit or no miss exists).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n, p = X.shape
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2 or counts.min() < 2:
        raise ValueError("relief_1nn needs at least two classes with two rows each")
    span = X.max(axis=0) - X.min(axis=0)
    total = np.zeros(p)
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        D = cdist(X[rows], X)
        D[np.arange(len(rows)), rows] = np.inf  # a row is not its own hit
        same = y[rows, None] == y[None, :]
        hit = np.argmin(np.where(same, D, np.inf), axis=1)  # argmin: the first index among equal distances
        miss = np.argmin(np.where(same, np.inf, D), axis=1)
        total += (np.abs(X[rows] - X[miss]) - np.abs(X[rows] - X[hit])).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, total / n / span, 0.0)
