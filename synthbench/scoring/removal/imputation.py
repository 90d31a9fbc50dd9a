"""Imputation of removed input elements, as remove-and-debias (ROAD) needs it, and ROAR and KAR when asked.

Images: noisy linear imputation (Rong et al. 2022). Each removed pixel of a channel plane takes
the weighted mean of its neighbours in that plane (weight 1/6 for the four direct neighbours and
1/12 for the four diagonal ones; neighbours outside the image are left out and the weights of
the others renormalised), where removed neighbours are themselves unknowns: the removed values
solve one sparse linear system. Every plane of every image is one block of a block-diagonal
system, solved in one call; where the same pixels are removed in every channel, the planes of an image share
one block and are its right-hand sides. Gaussian noise of standard deviation ``noise`` is then added to each
imputed value, so the imputed values do not reveal the mask through their exact smoothness.

Tables: the conditional mean of the removed features given the kept ones under a Gaussian
fitted to the training rows (mean and covariance, with a ridge of ``1e-6`` times the mean
variance on the diagonal), plus Gaussian noise of ``noise`` times each feature's training
standard deviation. Rows that share their removed set are solved together.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import solveh_banded
from threadpoolctl import threadpool_limits

__all__ = ["NEIGHBOUR_WEIGHTS", "impute_images", "GaussianImputer", "Imputer", "imputer"]

#: ``(X, removed, rng) -> X`` with its ``removed`` elements imputed (float64, ``X``'s shape).
Imputer = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]

#: ``((row offset, column offset), weight)`` of the eight neighbours of a pixel.
NEIGHBOUR_WEIGHTS: tuple[tuple[tuple[int, int], float], ...] = (
    ((-1, 0), 1 / 6),
    ((1, 0), 1 / 6),
    ((0, -1), 1 / 6),
    ((0, 1), 1 / 6),
    ((-1, -1), 1 / 12),
    ((-1, 1), 1 / 12),
    ((1, -1), 1 / 12),
    ((1, 1), 1 / 12),
)


def impute_images(
    images: np.ndarray, removed: np.ndarray, *, noise: float = 0.01, rng: np.random.Generator
) -> np.ndarray:
    """Noisy linear imputation of the ``removed`` elements of ``images``.

    Parameters
    ----------
    images : float ``(n, C, H, W)``
    removed : bool ``(n, C, H, W)`` (or ``(n, 1, H, W)``, the same pixels in every channel): the
        elements to replace; each plane must keep at least one element
    noise : standard deviation of the Gaussian noise added to each imputed value
    rng : the noise's source

    Returns
    -------
    float64 ``(n, C, H, W)``: the kept elements unchanged, the removed ones imputed.
    """
    x = np.asarray(images, dtype=np.float64)
    if x.ndim != 4:
        raise ValueError(f"images must have shape (n, C, H, W), got {x.shape}")
    given = np.asarray(removed, dtype=bool)
    mask = np.broadcast_to(given, x.shape)
    n, c, h, w = x.shape
    if mask.reshape(n * c, h * w).all(axis=1).any():
        raise ValueError("every image plane must keep at least one element to impute from")
    out = x.copy()
    if not mask.any():
        return out
    if given.ndim == 4 and given.shape[1] == 1:  # the same pixels in every channel: one system, C right-hand sides
        values = np.moveaxis(x, 1, -1)  # (n, H, W, C)
        solved = _solve_planes(given[:, 0], values)  # (m, C), the removed pixels in (image, row, column) order
        out = np.moveaxis(out, 1, -1)
        out[given[:, 0]] = solved
        out = np.ascontiguousarray(np.moveaxis(out, -1, 1))
    else:
        out.reshape(-1)[mask.reshape(-1)] = _solve_planes(mask.reshape(n * c, h, w), x.reshape(n * c, h, w, 1))[:, 0]
    out[mask] += noise * rng.standard_normal(int(mask.sum()))  # in (image, channel, row, column) order
    return out


def _solve_planes(removed: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The imputed values of the ``removed`` pixels ``(P, H, W)`` of planes whose ``values`` are ``(P, H, W, R)``
    (``R`` planes sharing each mask, one right-hand side each): ``(m, R)``, the removed pixels in (plane, row,
    column) order. One system for every plane, its unknowns in that (raster) order: block-diagonal, symmetric and
    positive definite (diagonally dominant, and every plane keeps a pixel), and banded (``W + 1`` either side at
    most), so one banded Cholesky factorisation solves it."""
    p, h, w = removed.shape
    gone = removed.reshape(-1)
    flat = values.reshape(p * h * w, -1)
    unknown = np.flatnonzero(gone)  # global pixel indices, ascending
    m = unknown.size
    var = np.full(gone.size, -1, dtype=np.int64)
    var[unknown] = np.arange(m)
    plane, pixel = np.divmod(unknown, h * w)
    row, col = np.divmod(pixel, w)
    diag = np.zeros(m)
    rhs = np.zeros((m, flat.shape[1]))
    rows, cols, vals = [], [], []
    for (dr, dc), weight in NEIGHBOUR_WEIGHTS:
        r2, c2 = row + dr, col + dc
        inside = (r2 >= 0) & (r2 < h) & (c2 >= 0) & (c2 < w)
        diag[inside] += weight
        eq = np.flatnonzero(inside)
        nb = plane[eq] * (h * w) + r2[eq] * w + c2[eq]
        unknown_nb = gone[nb]
        rows.append(eq[unknown_nb])
        cols.append(var[nb[unknown_nb]])
        vals.append(np.full(int(unknown_nb.sum()), -weight))
        rhs[eq[~unknown_nb]] += weight * flat[nb[~unknown_nb]]  # each equation once per direction
    i, j, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    upper = i < j  # the matrix is symmetric (a neighbour's weight is the same both ways)
    band = int((j - i).max(initial=0))
    ab = np.zeros((band + 1, m))
    ab[band] = diag
    ab[band + i[upper] - j[upper], j[upper]] = v[upper]
    with threadpool_limits(limits=1, user_api="blas"):  # a band this narrow is 5 to 30 times slower on BLAS threads
        return solveh_banded(ab, rhs, check_finite=False)


class GaussianImputer:
    """Conditional-mean imputation of table rows under a Gaussian fitted to training rows.

    Parameters
    ----------
    X_train : float ``(n, p)``, the rows the mean, covariance and standard deviations come from
    ridge : added to the covariance's diagonal, times the mean variance (keeps it invertible
        when features are collinear or constant)
    """

    def __init__(self, X_train: np.ndarray, *, ridge: float = 1e-6) -> None:
        X = np.asarray(X_train, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 2:
            raise ValueError(f"X_train must have shape (n >= 2, p), got {X.shape}")
        self.mean = X.mean(axis=0)
        cov = np.cov(X, rowvar=False).reshape(X.shape[1], X.shape[1])
        self.std = np.sqrt(np.diag(cov))
        cov[np.diag_indices_from(cov)] += ridge * max(float(np.mean(np.diag(cov))), 1e-12)
        self.cov = cov

    def impute(
        self, X: np.ndarray, removed: np.ndarray, *, noise: float = 0.01, rng: np.random.Generator
    ) -> np.ndarray:
        """Rows of ``X`` ``(m, p)`` with their ``removed`` ``(m, p)`` (or ``(p,)``, shared) features
        replaced by ``E[x_R | x_K]`` plus ``noise * std`` Gaussian noise; float64 ``(m, p)``."""
        x = np.asarray(X, dtype=np.float64)
        mask = np.broadcast_to(np.asarray(removed, dtype=bool), x.shape)
        out = x.copy()
        patterns, which = np.unique(mask, axis=0, return_inverse=True)
        for k, pattern in enumerate(patterns):
            if not pattern.any():
                continue
            rows = np.flatnonzero(which.reshape(-1) == k)
            r, kept = np.flatnonzero(pattern), np.flatnonzero(~pattern)
            centred = x[np.ix_(rows, kept)] - self.mean[kept]
            if kept.size:
                coef = np.linalg.solve(self.cov[np.ix_(kept, kept)], self.cov[np.ix_(kept, r)])  # (|K|, |R|)
                fill = self.mean[r] + centred @ coef
            else:
                fill = np.broadcast_to(self.mean[r], (rows.size, r.size))
            out[np.ix_(rows, r)] = fill + noise * self.std[r] * rng.standard_normal((rows.size, r.size))
        return out


def imputer(kind: str, X_train: np.ndarray, *, noise: float) -> Imputer:
    """The imputation of a fold's ``kind`` of input (``"image"``: :func:`impute_images`; ``"tabular"``: a
    :class:`GaussianImputer` fitted to ``X_train``) with ``noise``, as ``fn(X, removed, rng)``."""
    if kind == "image":
        return lambda X, removed, rng: impute_images(X, removed, noise=noise, rng=rng)
    gaussian = GaussianImputer(X_train)
    return lambda X, removed, rng: gaussian.impute(X, removed, noise=noise, rng=rng)
