"""ReliefF feature scores, vectorised: the same ``feature_importances_`` as skrebate's ``ReliefF``.

:func:`relieff` is a numpy re-implementation of ``skrebate.ReliefF`` (scikit-rebate 0.8.4,
``relieff.py`` and ``scoring_utils.py``) for data without missing values and with discrete
labels; :func:`skrebate_relieff` calls skrebate itself. On the same data they return the same
scores up to floating-point summation order (far below ``1e-9``), and they choose exactly the
same neighbours, ties included.

Behaviour of the reference (skrebate 0.8.4, default settings)
-------------------------------------------------------------
* **Feature types.** A column with at most ``discrete_threshold`` distinct values (skrebate's
  ``categorical_threshold``, called ``discrete_threshold`` in older releases; 10 by default)
  is *discrete*, any other column *continuous*, with range ``max - min`` and standard deviation
  ``np.std`` (``ddof=0``). The data set is "continuous", "discrete" or "mixed" accordingly.
* **Labels.** Two distinct labels are binary, 3 to 10 multiclass (more would be a continuous
  outcome, which :func:`relieff` does not handle).
* **Distance** (used only to find neighbours), all in float64:

  - continuous data: ``scipy.spatial.distance.pdist(Z, "cityblock")`` on the range-normalised
    columns ``Z = (x - min) / (max - min)``, i.e. the sum of ``|z_i - z_j|`` over the features
    *in column order, one after another* (its rounding decides which of two near-equal
    distances is the smaller);
  - discrete data: the Hamming fraction ``(number of differing columns) / p``;
  - mixed data: ``hamming(discrete columns) * p + cityblock(continuous columns)``.

* **Neighbours.** For each instance ``i`` the row ``D[i]`` of the distance matrix, with
  ``D[i, i]`` replaced by ``float(sys.maxsize)``, is ordered by ``np.argsort`` (numpy's default
  introsort, not stable: *its* order of equal distances decides ties). Walking that order,
  the first ``k = n_neighbors`` instances of ``i``'s own class are its hits and the first ``k``
  of every other class its misses. When ``i``'s class has at most ``k`` members, every one of
  them is a hit, ``i`` itself included (it comes last, differs from itself nowhere, and
  counts). So ``i`` has ``h = min(k, n_own)`` hits and ``m_c = min(k, n_c)`` misses of each
  other class ``c``, ``m = sum_c m_c``.
* **Per-feature difference** ``diff(i, j)``: ``x_i != x_j`` (0 or 1) for a discrete feature;
  ``|x_i - x_j| / range`` for a continuous one, except in mixed data, where it is 1 whenever
  ``|x_i - x_j| > std`` (skrebate's ramp).
* **Score.** ``score = (1/n) * sum_i [ -sum_{hits j} diff(i, j) / h
  + sum_{c != y_i} (m_c / m) * (C - 1) * sum_{misses j of class c} diff(i, j) / m ]``, with ``C``
  the number of classes (for binary labels the miss term is simply the mean miss difference;
  note that skrebate weights the miss classes by their share of the neighbours, not by the
  class priors of Kononenko's ReliefF). Positive: the feature separates the classes locally;
  negative: it separates neighbours of the same class more than of different classes. Binary
  scores lie in ``[-1, 1]`` (multiclass miss terms can reach ``C - 1`` with unbalanced classes).

How this module reproduces it
-----------------------------
Feature types, ranges and standard deviations are computed with the same numpy operations.
Distances are built in blocks of columns: discrete columns by one-hot matrix products (exact
integer counts of equal values), continuous ones by ``pdist`` on blocks of normalised columns.
When all continuous columns fit in one block, the distances are bit-identical to skrebate's,
and every row is ordered by ``np.argsort`` exactly as there. With several blocks the sums of
block sums can differ from skrebate's one-pass sum by a few ulps (a rigorous relative bound
``r`` is kept); a row whose ``k``-th and ``k+1``-th nearest instance of some class are not
separated by more than that bound is recomputed exactly (a sequential sum over all features, in
column order, continued from block to block) and then ordered by ``np.argsort``; in every
other row the neighbour sets are determined by the values alone. The scores are accumulated
over the unordered neighbour pairs (a pair that are neighbours of each other is visited once,
with both weights) as ``weights @ |x_a - x_b|`` in blocks of pairs and columns. Memory stays
within a few blocks of ``_BLOCK_CELLS`` float64 values plus the ``n x n`` distance matrix.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import numpy as np
from scipy.spatial.distance import pdist, squareform

__all__ = ["MAX_CLASSES", "relieff", "skrebate_relieff"]

#: Most distinct labels :func:`relieff` accepts (skrebate's ``multiclass_threshold``); more
#: would make skrebate treat the label as continuous.
MAX_CLASSES = 10
# Float64 values per working block (64 MiB); tests lower it to exercise the blocked paths.
_BLOCK_CELLS = 1 << 23
# Float64 values per block of neighbour pairs in the score accumulation.
_PAIR_BLOCK_CELLS = 1 << 18
# skrebate's distance from an instance to itself (an int, stored as float64 by np.array).
_SELF_DISTANCE = float(sys.maxsize)
_UNIT_ROUNDOFF = 2.0**-53


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------
def relieff(X: np.ndarray, y: np.ndarray, *, n_neighbors: int = 100, discrete_threshold: int = 10) -> np.ndarray:
    """ReliefF scores of every feature; equal to ``skrebate.ReliefF(...).feature_importances_``.

    Equal (to ``1e-9``, in practice to a few ulps) to ``ReliefF(n_neighbors=n_neighbors,
    categorical_threshold=discrete_threshold).fit(X.astype(float64), y).feature_importances_``
    for any ``n_features_to_select`` and ``n_jobs``: same feature typing, same distances, same
    neighbours (ties broken as skrebate's ``np.argsort`` breaks them, the instance itself
    counted as a hit when its class has at most ``n_neighbors`` members), same score update.
    See the module docstring for the algorithm.

    Parameters
    ----------
    X : array_like of float, shape (n_samples, n_features)
        Finite values (no missing values); any float dtype, used in float64 (float32 input
        gives the same scores as skrebate on ``X.astype(float64)``).
    y : array_like, shape (n_samples,)
        Discrete labels, 2 to :data:`MAX_CLASSES` distinct values (binary or multiclass).
    n_neighbors : int, default 100
        ``k``: the number of nearest hits, and of nearest misses of each other class, per
        instance (fewer where a class is smaller). Must be a positive integer (skrebate's
        reading of a float as a fraction of ``n`` is not supported).
    discrete_threshold : int, default 10
        Columns with at most this many distinct values are discrete, the others continuous.

    Returns
    -------
    ndarray of float64, shape (n_features,)
        Signed scores (in ``[-1, 1]`` for binary labels): larger means the feature differs
        more between nearby instances of different classes than between nearby instances of
        the same class.
    """
    X, y = _validate(X, y, n_neighbors, discrete_threshold)
    n, p = X.shape
    k = int(n_neighbors)
    classes, yc = np.unique(y, return_inverse=True)
    yc = yc.astype(np.intp)
    n_classes = classes.size
    cells = max(1, int(_BLOCK_CELLS))

    discrete, n_unique, lo, span = _column_info(X, discrete_threshold, cells)
    cont = np.flatnonzero(~discrete)
    disc = np.flatnonzero(discrete)
    mixed = cont.size > 0 and disc.size > 0

    D, rel_err = _distances(X, cont, disc, n_unique, lo, span, cells)
    kc = np.minimum(k, np.bincount(yc, minlength=n_classes))  # neighbours taken per class
    i, j = _neighbour_pairs(D, yc, kc, rel_err, cells, lambda rows: _exact_rows(X, rows, cont, disc, lo, span, cells))
    del D

    # Weight of neighbour j in instance i's update: hits -1/h; misses of class c m_c (C-1) / m^2.
    n_miss = kc.sum() - kc  # m, by the class of i
    hit = yc[i] == yc[j]
    w = np.where(hit, -1.0 / kc[yc[i]], kc[yc[j]] * (n_classes - 1.0) / np.square(n_miss[yc[i]], dtype=np.float64))
    # Visit each unordered pair once: diff(i, j) = diff(j, i).
    keys, inverse = np.unique(np.minimum(i, j) * n + np.maximum(i, j), return_inverse=True)
    w = np.bincount(inverse.ravel(), weights=w, minlength=keys.size)
    a, b = np.divmod(keys, n)

    # Per-column transform of |x_a - x_b|: discrete -> (|d| > 0); mixed continuous -> range when
    # |d| > std (the ramp's 1, after the division by the range below); else |d| itself.
    threshold = np.full(p, np.inf)
    fill = np.ones(p)
    scale = np.ones(p)
    threshold[disc] = 0.0
    scale[cont] = span[cont]
    if mixed:
        threshold[cont] = _column_std(X, cont, cells)
        fill[cont] = span[cont]
    total = _weighted_pair_sums(X, a, b, w, threshold, fill, cells)
    return total / scale / n


def skrebate_relieff(
    X: np.ndarray, y: np.ndarray, *, n_neighbors: int = 100, discrete_threshold: int = 10
) -> np.ndarray:
    """skrebate's own ``ReliefF.feature_importances_`` (the reference for :func:`relieff`).

    Same parameters and result as :func:`relieff`; runs skrebate on ``X.astype(float64)`` with
    ``n_jobs=1``. About ``n * p`` Python-level calls: slow (minutes at ``p`` in the thousands).
    """
    from skrebate import ReliefF

    threshold_name = (
        "categorical_threshold" if "categorical_threshold" in ReliefF().get_params() else "discrete_threshold"
    )
    model = ReliefF(
        n_neighbors=int(n_neighbors), n_features_to_select=1, n_jobs=1, **{threshold_name: int(discrete_threshold)}
    )
    model.fit(np.asarray(X, dtype=np.float64), np.asarray(y))
    return np.asarray(model.feature_importances_, dtype=np.float64)


# --------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------
def _validate(X, y, n_neighbors, discrete_threshold) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must be numeric, got dtype {X.dtype}")
    n, p = X.shape
    if p == 0:
        raise ValueError("X has no features")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values (missing values are not supported)")
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    n_classes = np.unique(y).size
    if n_classes < 2:
        raise ValueError("y has a single class")
    if n_classes > MAX_CLASSES:
        raise ValueError(
            f"y has {n_classes} distinct values; at most {MAX_CLASSES} (continuous labels are not supported)"
        )
    for name, value in (("n_neighbors", n_neighbors), ("discrete_threshold", discrete_threshold)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return X, y


def _column_blocks(n_cols: int, width: int) -> Iterator[slice]:
    width = max(1, width)
    for start in range(0, n_cols, width):
        yield slice(start, min(n_cols, start + width))


def _column_info(X: np.ndarray, threshold: int, cells: int) -> tuple[np.ndarray, ...]:
    """Discrete mask, distinct-value counts, minima and ranges (max - min) of every column."""
    n, p = X.shape
    n_unique = np.empty(p, dtype=np.int64)
    lo = np.empty(p)
    hi = np.empty(p)
    for cols in _column_blocks(p, cells // n):
        s = np.sort(X[:, cols].astype(np.float64), axis=0)
        n_unique[cols] = 1 + np.count_nonzero(s[1:] != s[:-1], axis=0)
        lo[cols] = s[0]
        hi[cols] = s[-1]
    return n_unique <= threshold, n_unique, lo, hi - lo


def _column_std(X: np.ndarray, cols: np.ndarray, cells: int) -> np.ndarray:
    """``np.std`` of each column, bit-identical to skrebate's ``np.std`` of one column."""
    n = X.shape[0]
    out = np.empty(cols.size)
    for part in _column_blocks(cols.size, cells // n):
        # A reduction along the contiguous last axis sums each row as np.std of a 1-D array does.
        out[part] = np.std(np.ascontiguousarray(X[:, cols[part]].T, dtype=np.float64), axis=1)
    return out


def _normalised(X: np.ndarray, cols: np.ndarray, lo: np.ndarray, span: np.ndarray) -> np.ndarray:
    """skrebate's ``pre_normalize``: ``(x - min) / (max - min)`` in float64, shape (n, len(cols))."""
    return (X[:, cols].astype(np.float64) - lo[cols]) / span[cols]


def _distances(X, cont, disc, n_unique, lo, span, cells) -> tuple[np.ndarray, float]:
    """The distance matrix and a bound ``r`` on its relative distance from skrebate's (0: equal)."""
    n, p = X.shape
    cityblock = None
    n_blocks = 0
    for part in _column_blocks(cont.size, cells // n):
        d = pdist(_normalised(X, cont[part], lo, span), "cityblock")
        cityblock = d if cityblock is None else np.add(cityblock, d, out=cityblock)
        n_blocks += 1
    if disc.size == 0:
        D = squareform(cityblock)
    else:
        hamming = (disc.size - _equal_counts(X, disc, n_unique, cells)) / disc.size
        D = hamming if cont.size == 0 else hamming * p + squareform(cityblock)
    # One pdist call sums every pair in column order, as skrebate's; sums of block sums differ
    # from that by at most 2 * gamma_(p_cont) of the sum, plus the rounding of the mixed addition.
    rel_err = 0.0 if n_blocks <= 1 else 4.0 * (cont.size + 4) * _UNIT_ROUNDOFF
    return D, rel_err


def _equal_counts(X, disc, n_unique, cells) -> np.ndarray:
    """Number of discrete columns on which each pair of rows is equal, shape (n, n), exact."""
    n = X.shape[0]
    E = np.zeros((n, n))
    width_cap = max(1, cells // n)
    start = 0
    while start < disc.size:
        widths = np.cumsum(n_unique[disc[start:]])
        stop = start + max(1, int(np.searchsorted(widths, width_cap, side="right")))
        cols = disc[start:stop]
        Xb = X[:, cols].astype(np.float64)
        order = np.argsort(Xb, axis=0, kind="stable")
        s = np.take_along_axis(Xb, order, axis=0)
        ranks = np.zeros(Xb.shape, dtype=np.int64)
        ranks[1:] = np.cumsum(s[1:] != s[:-1], axis=0)
        codes = np.empty_like(ranks)
        np.put_along_axis(codes, order, ranks, axis=0)
        offsets = np.concatenate(([0], np.cumsum(n_unique[cols])[:-1]))
        onehot = np.zeros((n, int(n_unique[cols].sum())))
        onehot[np.arange(n)[:, None], codes + offsets] = 1.0
        E += onehot @ onehot.T  # integer counts below 2**53: exact in any summation order
        start = stop
    return E


def _exact_rows(X, rows, cont, disc, lo, span, cells) -> np.ndarray:
    """Rows ``rows`` of skrebate's distance matrix, bit for bit (used when ``r > 0``)."""
    n, p = X.shape
    out = np.zeros((rows.size, n))
    # Sequential sum over the continuous columns in column order, carried across blocks.
    width = max(1, cells // (2 * n))
    for part in _column_blocks(cont.size, width):
        Z = _normalised(X, cont[part], lo, span)
        per = max(1, cells // (n * Z.shape[1]))
        for r in _column_blocks(rows.size, per):
            T = np.abs(Z[rows[r], None, :] - Z[None, :, :])  # (rows, n, columns)
            T[:, :, 0] += out[r]
            out[r] = np.add.accumulate(T, axis=2)[:, :, -1]
    if disc.size:
        hamming = (disc.size - _equal_counts_rows(X, rows, disc, cells)) / disc.size
        out = hamming * p + out
    return out


def _equal_counts_rows(X, rows, disc, cells) -> np.ndarray:
    """Number of discrete columns on which rows ``rows`` equal each row, shape (len(rows), n)."""
    n = X.shape[0]
    out = np.zeros((rows.size, n))
    width = max(1, cells // (n * rows.size))
    for part in _column_blocks(disc.size, width):
        Xb = X[:, disc[part]]
        out += np.count_nonzero(Xb[rows, None, :] == Xb[None, :, :], axis=2)
    return out


def _row_order(row: np.ndarray) -> np.ndarray:
    """skrebate's neighbour order of one distance row: numpy's default (unstable) argsort."""
    return np.argsort(row)


def _neighbour_pairs(D, yc, kc, rel_err, cells, exact_rows) -> tuple[np.ndarray, np.ndarray]:
    """Every (instance i, neighbour j != i) pair chosen as skrebate chooses them."""
    n = D.shape[0]
    n_classes = kc.size
    members = [np.flatnonzero(yc == c) for c in range(n_classes)]
    full = {c for c in range(n_classes) if kc[c] == members[c].size}  # classes with at most k members
    out_i: list[np.ndarray] = []
    out_j: list[np.ndarray] = []
    chunk = max(1, cells // (4 * n))
    for start in range(0, n, chunk):
        rows = np.arange(start, min(n, start + chunk))
        Drows = D[rows].copy()
        Drows[np.arange(rows.size), rows] = _SELF_DISTANCE
        if rel_err == 0.0:
            by_order = rows
        else:
            # Where the k-th and (k+1)-th nearest of every class are farther apart than the
            # error bound, the neighbour sets follow from these values whatever the rounding.
            safe = np.ones(rows.size, dtype=bool)
            cuts = {}
            for c in range(n_classes):
                if c in full:
                    continue
                kth = int(kc[c])
                part = np.partition(Drows[:, members[c]], (kth - 1, kth), axis=1)
                cut, after = part[:, kth - 1], part[:, kth]
                safe &= after * (1.0 - rel_err) > cut * (1.0 + rel_err)
                cuts[c] = cut
            for c in range(n_classes):
                sel: np.ndarray = np.ones((rows.size, members[c].size), dtype=bool)
                if c not in full:
                    sel = Drows[:, members[c]] <= cuts[c][:, None]
                sel &= safe[:, None]
                ii, jj = np.nonzero(sel)
                out_i.append(rows[ii])
                out_j.append(members[c][jj])
            by_order = rows[~safe]
            if by_order.size:
                Drows = exact_rows(by_order)
                Drows[np.arange(by_order.size), by_order] = _SELF_DISTANCE
        if by_order.size:
            order = np.empty((by_order.size, n), dtype=np.intp)
            for t in range(by_order.size):
                order[t] = _row_order(Drows[t])
            labels = yc[order]
            sel = np.zeros(order.shape, dtype=bool)
            for c in range(n_classes):
                is_c = labels == c
                sel |= is_c & (np.cumsum(is_c, axis=1) <= kc[c])
            tt, pos = np.nonzero(sel)
            out_i.append(by_order[tt])
            out_j.append(order[tt, pos])
    i = np.concatenate(out_i)
    j = np.concatenate(out_j)
    keep = i != j  # the instance itself differs from itself nowhere (but counts in h)
    return i[keep], j[keep]


def _weighted_pair_sums(X, a, b, w, threshold, fill, cells) -> np.ndarray:
    """``sum over pairs of w * g(|x_a - x_b|)`` per column, with ``g(d) = fill if d > threshold else d``."""
    n, p = X.shape
    total = np.zeros(p)
    width = max(1, min(p, cells // (2 * n)))
    for cols in _column_blocks(p, width):
        Xb = X[:, cols].astype(np.float64)
        th, fi = threshold[cols], fill[cols]
        ramp = bool(np.any(np.isfinite(th)))
        # Small pair blocks (about 2 MiB each) stay in cache: several times faster than large ones.
        per = max(1, min(cells // 3, _PAIR_BLOCK_CELLS) // Xb.shape[1])
        buf_a = np.empty((min(per, a.size), Xb.shape[1]))
        buf_b = np.empty_like(buf_a)
        for r in _column_blocks(a.size, per):
            G = buf_a[: r.stop - r.start]
            other = buf_b[: r.stop - r.start]
            np.take(Xb, a[r], axis=0, out=G)
            np.take(Xb, b[r], axis=0, out=other)
            np.subtract(G, other, out=G)
            np.abs(G, out=G)
            if ramp:
                np.copyto(G, fi, where=G > th)
            total[cols] += w[r] @ G
    return total
