"""Model-X knockoffs for DeepPINK: independent uniform redraws and second-order Gaussian knockoffs.

A knockoff copy ``X_tilde`` of ``X`` (both ``(n, p)``) is drawn without looking at ``y`` so
that swapping any column ``j`` with its knockoff leaves the joint law of ``[X, X_tilde]``
unchanged (Candès et al. 2018).

* :func:`uniform_knockoffs`: for features that are i.i.d. and independent of each other with a
  uniform law on ``[low_j, high_j]`` an independent redraw from the same law is an exact
  knockoff (the joint law of ``[X, X_tilde]`` is a product of identical marginals).
* :func:`gaussian_knockoffs`: second-order (Gaussian) model-X knockoffs with the
  equicorrelated construction ``s = min(2 * lambda_min(C), 1)`` on the correlation scale
  ``C`` of a Ledoit–Wolf shrunk covariance.
* :func:`gaussian_knockoffs_2023`: the 2023 benchmark's own second-order construction
  (``src/knockoff.py`` at 06afd2e), kept for its faithful suite: covariance shrunk 80 % towards
  its diagonal and ``S`` equal to that diagonal, a choice that makes each knockoff nearly
  uncorrelated with its feature.
* :func:`looks_uniform` decides between uniform and Gaussian ones for ``knockoffs="auto"``
  (Gaussian: :func:`gaussian_knockoffs`) and ``"auto_2023"`` (:func:`gaussian_knockoffs_2023`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import stats
from sklearn.covariance import LedoitWolf

__all__ = [
    "uniform_knockoffs",
    "gaussian_knockoffs",
    "gaussian_knockoffs_2023",
    "equicorrelated_s",
    "looks_uniform",
    "make_knockoffs",
]


def uniform_knockoffs(
    X: np.ndarray,
    rng: np.random.Generator,
    *,
    low: np.ndarray | float | None = None,
    high: np.ndarray | float | None = None,
) -> np.ndarray:
    """Independent uniform redraws, column by column.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    rng : numpy Generator the draws come from
    low, high : float or ndarray of shape (p,), optional
        Support of each column; by default the observed column minimum and maximum.

    Returns
    -------
    ndarray of float64, shape (n, p)
        ``X_tilde[:, j] ~ U(low_j, high_j)``, independent of ``X`` and across entries.
    """
    X = np.asarray(X, dtype=np.float64)
    lo = X.min(axis=0) if low is None else np.broadcast_to(np.asarray(low, dtype=np.float64), (X.shape[1],))
    hi = X.max(axis=0) if high is None else np.broadcast_to(np.asarray(high, dtype=np.float64), (X.shape[1],))
    return lo + (hi - lo) * rng.random(X.shape)


def equicorrelated_s(corr: np.ndarray) -> float:
    """The equicorrelated ``s = min(2 * lambda_min(C), 1)`` for a correlation matrix ``C`` (p, p)."""
    lam_min = float(np.linalg.eigvalsh(corr)[0])
    return float(np.clip(2.0 * lam_min, 0.0, 1.0))


def _shrunk_covariance(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means (p,) and the Ledoit–Wolf covariance (p, p) of ``X`` (n, p)."""
    mu = X.mean(axis=0)
    if X.shape[1] == 1 or X.shape[0] < 2:
        var = X.var(axis=0) if X.shape[0] > 1 else np.ones(X.shape[1])
        return mu, np.diag(np.maximum(var, 1e-12))
    return mu, LedoitWolf(assume_centered=False).fit(X).covariance_


def gaussian_knockoffs(
    X: np.ndarray,
    rng: np.random.Generator,
    *,
    mu: np.ndarray | None = None,
    sigma: np.ndarray | None = None,
) -> np.ndarray:
    """Second-order model-X knockoffs, equicorrelated construction.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    rng : numpy Generator for the Gaussian draws
    mu : ndarray of shape (p,), optional
        Mean of ``X``; by default the column means.
    sigma : ndarray of shape (p, p), optional
        Covariance of ``X``; by default the Ledoit–Wolf shrinkage estimate (well conditioned
        also when ``p >= n``).

    Returns
    -------
    ndarray of float64, shape (n, p)

    Notes
    -----
    With ``D = diag(sigma)``, correlation ``C = D^{-1/2} sigma D^{-1/2}``, ``s_c =
    min(2 lambda_min(C), 1)`` and ``S = s_c D`` (the equicorrelated choice expressed on the
    covariance scale), the knockoffs are drawn from ``X_tilde | X ~ N(mu + (X - mu)(I -
    sigma^{-1} S), 2S - S sigma^{-1} S)``, so that ``cov([X, X_tilde]) = [[sigma, sigma - S],
    [sigma - S, sigma]]``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    if mu is None or sigma is None:
        m, s = _shrunk_covariance(X)
        mu = m if mu is None else np.asarray(mu, dtype=np.float64)
        sigma = s if sigma is None else np.asarray(sigma, dtype=np.float64)
    sd = np.sqrt(np.maximum(np.diag(sigma), 1e-12))
    corr = sigma / np.outer(sd, sd)
    corr = (corr + corr.T) / 2.0
    s_c = equicorrelated_s(corr)
    # A hair below the boundary keeps the conditional covariance positive semi-definite numerically.
    S = np.diag(0.999 * s_c * sd**2)
    sigma_inv_S = np.linalg.solve(sigma, S)  # (p, p) = sigma^{-1} S
    cond_mean = mu + (X - mu) @ (np.eye(p) - sigma_inv_S)
    cond_cov = 2.0 * S - S @ sigma_inv_S
    cond_cov = (cond_cov + cond_cov.T) / 2.0
    evals, evecs = np.linalg.eigh(cond_cov)
    root = evecs * np.sqrt(np.clip(evals, 0.0, None))  # root @ root.T = cond_cov
    return cond_mean + rng.standard_normal((n, p)) @ root.T


def gaussian_knockoffs_2023(
    X: np.ndarray, rng: np.random.Generator, *, shrink: float = 0.8, eps: float = 1e-3
) -> np.ndarray:
    """The 2023 benchmark's Gaussian knockoffs of ``X`` (n, p), float64 (n, p).

    With ``mu`` the column means, ``C`` the sample covariance (``ddof = 1``), ``sigma = shrink *
    diag(C) + (1 - shrink) * C`` and ``S = diag(sigma)``::

        X_tilde = X - (X - mu) sigma^{-1} S + N(0, I) L.T,   L L.T = 2S - S sigma^{-1} S + eps I

    (``sigma^{-1} S`` by least squares, ``L`` by Cholesky). These are knockoffs for the shrunk
    covariance ``sigma``: were it the data's, ``cov([X, X_tilde])`` would be ``[[sigma, sigma -
    S], [sigma - S, sigma]]``; against the data's own ``C`` the cross-covariance is ``C (I -
    sigma^{-1} S)``, so the swap property holds only as far as ``C`` is close to ``sigma``.
    Affine-equivariant per column: knockoffs of standardised columns are the standardised
    knockoffs, draw for draw (without ``eps``).
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    mu = X.mean(axis=0)
    C = np.atleast_2d(np.cov(X, rowvar=False))
    sigma = shrink * np.diag(np.diag(C)) + (1.0 - shrink) * C
    S = np.diag(np.diag(sigma))
    sigma_inv_S = np.linalg.lstsq(sigma, S, rcond=None)[0]
    L = np.linalg.cholesky(2.0 * S - S @ sigma_inv_S + eps * np.eye(p))
    return X - (X - mu) @ sigma_inv_S + rng.standard_normal((n, p)) @ L.T


def looks_uniform(X: np.ndarray, *, alpha: float = 0.01) -> bool:
    """Whether every column lies in ``[-1, 1]`` and passes a KS test against ``U(-1, 1)``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    alpha : family-wise level; each column's one-sample Kolmogorov–Smirnov test is run at
        ``alpha / p`` (Bonferroni).

    Returns
    -------
    bool
        False as soon as any value is outside ``[-1, 1]`` or any column's KS p-value is below
        ``alpha / p``. Dependence between columns is not tested.
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    if n < 2 or X.min() < -1.0 or X.max() > 1.0:
        return False
    u = np.sort((X + 1.0) / 2.0, axis=0)  # CDF of U(-1, 1) at the sorted values
    i = np.arange(1, n + 1)[:, None]
    d = np.maximum((i / n - u).max(axis=0), (u - (i - 1) / n).max(axis=0))  # (p,)
    pvalues = stats.kstwo.sf(d, n)
    return bool(pvalues.min() >= alpha / p)


KINDS = ("auto", "uniform", "gaussian", "auto_2023", "gaussian_2023")


def make_knockoffs(
    X: np.ndarray,
    rng: np.random.Generator,
    kind: Literal["auto", "uniform", "gaussian", "auto_2023", "gaussian_2023"] = "auto",
) -> tuple[np.ndarray, str]:
    """Knockoffs of ``X`` (n, p) of the requested kind; returns ``(X_tilde, kind_used)``.

    ``"auto"`` uses uniform redraws on ``[-1, 1]`` when :func:`looks_uniform` holds, else
    :func:`gaussian_knockoffs`; ``"auto_2023"`` the same with :func:`gaussian_knockoffs_2023`.
    ``"uniform"`` redraws on ``[-1, 1]`` when every value lies there, else on each column's
    observed range.
    """
    if kind not in KINDS:
        raise ValueError(f"knockoffs must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    X = np.asarray(X, dtype=np.float64)
    if kind in ("auto", "auto_2023"):
        kind = "uniform" if looks_uniform(X) else ("gaussian" if kind == "auto" else "gaussian_2023")
    if kind == "uniform":
        in_box = X.size > 0 and X.min() >= -1.0 and X.max() <= 1.0
        return (uniform_knockoffs(X, rng, low=-1.0, high=1.0) if in_box else uniform_knockoffs(X, rng)), kind
    if kind == "gaussian_2023":
        return gaussian_knockoffs_2023(X, rng), kind
    return gaussian_knockoffs(X, rng), kind
