"""Mutual information of every column with a class label, all columns at once.

The k-nearest-neighbour estimator of Ross (PLOS ONE 2014) for a continuous variable and a discrete
one, as :func:`sklearn.feature_selection.mutual_info_classif` computes it (scale each column by its
standard deviation, add noise of 1e-10 times ``max(1, mean |x|)`` from ``random_state``, then per
column ``psi(N) + <psi(k)> - <psi(N_c)> - <psi(m)>``, negative estimates set to 0), equal to it bit
for bit. scikit-learn builds a KD-tree per column and class in a Python loop; in one dimension the
neighbours of a point are its neighbours in sorted order, so here every column is sorted once and
the two searches are vectorised over all columns:

* the radius of row ``i``: the distance to its ``k``-th nearest row of the same class (among the
  ``k`` sorted neighbours on either side), one ulp smaller (``nextafter(r, 0)``); a class of at
  most ``2k + 1`` rows, which scikit-learn searches by brute force, is searched by it;
* ``m_i``: the rows of any class whose squared distance is at most the squared radius, itself
  included, found by a bisection on each side of ``i`` in the sorted column (the squared distance
  of a rounded difference never decreases away from ``i``, so the rows form one run).

Distances are compared as the tree compares them, ``fl(d * d) <= fl(r * r)`` with ``d`` the rounded
difference, and the tree's distance ``sqrt(fl(d * d))`` is ``|d|`` exactly in binary floating point,
so every count equals the tree's. (Brute force computes ``sqrt(x^2 + y^2 - 2xy)``, far from
``|x - y|`` for two rows that differ by the noise alone: its own search keeps the counts equal.)
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import scale

__all__ = ["mutual_info_classif_1d"]


def mutual_info_classif_1d(
    X: np.ndarray, y: np.ndarray, *, n_neighbors: int = 3, random_state: int | None = None
) -> np.ndarray:
    """Mutual information (nats, non-negative) of each column of ``X`` ``(n, p)`` with the labels ``y`` ``(n,)``.

    Equal to ``mutual_info_classif(X, y, n_neighbors=n_neighbors, random_state=random_state)`` with
    every column continuous (dense ``X``), drawing the same noise from ``np.random.RandomState(random_state)``.
    Returns float64 ``(p,)``.
    """
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, p) and y (n,), got {X.shape} and {y.shape}")
    if n_neighbors < 1:
        raise ValueError(f"n_neighbors must be positive, got {n_neighbors}")
    n, p = X.shape
    # scikit-learn's steps on its (here: every) continuous column, through the same indexing: the copy that
    # `Z[:, every]` makes lays the columns out as its arrays do, and the sums of the scale follow the layout
    Z, every = X.astype(np.float64), np.ones(p, dtype=bool)
    Z[:, every] = scale(Z[:, every], with_mean=False, copy=False)
    means = np.maximum(1, np.mean(np.abs(Z[:, every]), axis=0))
    Z[:, every] += 1e-10 * means * np.random.RandomState(random_state).standard_normal(size=(n, p))

    labels, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    kept = counts[codes] > 1  # rows whose class has another row (scikit-learn drops the rest)
    Z, codes = Z[kept], codes[kept]
    radius = np.empty_like(Z)
    k_all = np.empty(len(codes))
    for c in np.flatnonzero(counts > 1):
        rows = np.flatnonzero(codes == c)
        k = min(n_neighbors, counts[c] - 1)
        radius[rows] = _kth_neighbour_distance(Z[rows], k) if k < counts[c] // 2 else _brute_kth(Z[rows], k)
        k_all[rows] = k
    radius = np.nextafter(radius, 0)
    m_all = _counts_within(Z, radius)
    n_kept = len(codes)
    # the means over rows, each column's rows contiguous (the pairwise sums of a 1-D mean)
    mi = (
        digamma(n_kept)
        + np.mean(digamma(k_all))
        - np.mean(digamma(counts[codes].astype(np.float64)))
        - np.mean(digamma(np.ascontiguousarray(m_all.T, dtype=np.float64)), axis=1)
    )
    return np.maximum(0, mi)


def _kth_neighbour_distance(Z: np.ndarray, k: int) -> np.ndarray:
    """Per row and column of ``Z`` ``(n, p)``: ``|fl(z_l - z_i)|`` of the ``k``-th nearest other row ``l`` of the
    column."""
    n = len(Z)
    order = np.argsort(Z, axis=0, kind="stable")
    S = np.take_along_axis(Z, order, axis=0)
    padded = np.full((n + 2 * k, Z.shape[1]), np.inf)
    padded[k : k + n] = S
    near = np.stack([np.abs(padded[k + s : k + s + n] - S) for s in (*range(-k, 0), *range(1, k + 1))])
    kth = np.partition(near, k - 1, axis=0)[k - 1]
    out = np.empty_like(Z)
    np.put_along_axis(out, order, kth, axis=0)
    return out


def _brute_kth(Z: np.ndarray, k: int) -> np.ndarray:
    """:func:`_kth_neighbour_distance` of a class so small that scikit-learn searches it by brute force
    (``k >= rows // 2``): scikit-learn's own search, column by column (its distances are not ``|x - y|``)."""
    nn = NearestNeighbors(n_neighbors=k)
    return np.column_stack([nn.fit(Z[:, [j]]).kneighbors()[0][:, -1] for j in range(Z.shape[1])])


def _counts_within(Z: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Per row ``i`` and column, the rows ``l`` with ``fl(fl(z_l - z_i)^2) <= fl(r_i^2)`` (``i`` itself included)."""
    n, p = Z.shape
    order = np.argsort(Z, axis=0, kind="stable")
    S = np.take_along_axis(Z, order, axis=0)
    centre = S
    bound = np.take_along_axis(radius, order, axis=0) ** 2
    position = np.arange(n)[:, None]
    cols = np.arange(p)[None, :]

    def inside(index: np.ndarray) -> np.ndarray:
        d = S[index, cols] - centre
        return d * d <= bound

    # the first row inside on the left (in [0, i]) and the first row outside on the right (in [i + 1, n])
    left = _bisect(inside, np.zeros((n, p), dtype=np.int64), np.broadcast_to(position, (n, p)).copy(), first=True)
    right = _bisect(
        inside, np.broadcast_to(position + 1, (n, p)).copy(), np.full((n, p), n, dtype=np.int64), first=False
    )
    counts_sorted = right - left
    out = np.empty((n, p), dtype=np.int64)
    np.put_along_axis(out, order, counts_sorted, axis=0)
    return out


def _bisect(inside, lo: np.ndarray, hi: np.ndarray, *, first: bool) -> np.ndarray:
    """Elementwise bisection on ``[lo, hi)``: the first index where ``inside`` holds (``first``; it holds from
    there to ``hi``) or the first where it stops holding (it holds from ``lo`` up to there)."""
    active = lo < hi
    while active.any():
        mid = np.where(active, (lo + hi) // 2, 0)
        ok = inside(mid)
        go_right = active & (ok != first)
        go_left = active & (ok == first)
        lo = np.where(go_right, mid + 1, lo)
        hi = np.where(go_left, mid, hi)
        active = lo < hi
    return lo
