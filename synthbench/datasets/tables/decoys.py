"""Decoy columns, parameter validation, dataset assembly and registration shared by every generator.

Decoys
------
A decoy is a column that the label rule never reads. Every family builds its decoys on a
*latent standard-normal scale* and then maps them to the family's own marginal, so that a decoy
is marginally indistinguishable from a relevant feature:

* ``uniform`` families (``ring``, ``xor``, ...): ``u = Phi(z)`` then centred ``2u - 1``;
* ``gaussian`` families (L2X/INVASE, hypercube): ``z`` itself;
* the ``dag`` family: ``sigmoid(2 * standardise(z))`` then centred, the law of an isolated node.

With ``decoy_correlation = rho = 0`` (the default) ``z ~ N(0, 1)`` i.i.d., independent of
everything else. With ``rho in (0, 1)`` decoy ``j`` copies relevant feature
``partner[j] = j mod k`` (round robin over the ``k`` relevant columns) on the latent scale::

    z_j = rho * z_partner + sqrt(1 - rho**2) * eps_j,   eps_j ~ N(0, 1) i.i.d.

where ``z_partner`` is the partner's latent score (``Phi^{-1}(u)`` for uniform features, the
standardised value for Gaussian ones, the standardised pre-sigmoid value for ``dag``). The latent
correlation is then exactly ``rho`` in distribution and the marginal is unchanged (a Gaussian
copula). Such decoys are statistically dependent on ``y`` through their partner but are **not**
relevant: ``relevant`` stays the set of features the label rule reads, because the benchmark asks
methods for the causal features, not for features correlated with them.

All random draws come from a ``numpy.random.Generator`` handed in by the generator, itself
derived from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy import special

from synthbench.datasets.base import Dataset, register

__all__ = [
    "check_int",
    "check_float",
    "check_decoy_correlation",
    "decoy_partners",
    "latent_decoys",
    "uniform_to_latent",
    "latent_to_uniform",
    "standardise",
    "assemble",
    "register_family_member",
]

_EPS = 1e-12


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as ``int`` or raise ``ValueError`` naming the parameter.

    Booleans and non-integral numbers are rejected.
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_float(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` in the given interval or raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    lo_bad = low is not None and (v <= low if low_open else v < low)
    hi_bad = high is not None and (v >= high if high_open else v > high)
    if lo_bad or hi_bad:
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        lo_s = "-inf" if low is None else f"{low:g}"
        hi_s = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must lie in {lb}{lo_s}, {hi_s}{hb}, got {v}")
    return v


def check_decoy_correlation(value: Any) -> float:
    """Validate ``decoy_correlation``: a float in ``[0, 1)``."""
    return check_float("decoy_correlation", value, low=0.0, high=1.0, high_open=True)


def decoy_partners(n_decoys: int, n_relevant: int, correlation: float) -> list[int] | None:
    """Relevant column copied by each decoy: round robin ``j mod n_relevant``.

    Returns ``None`` when decoys copy nothing (``correlation == 0`` or ``n_decoys == 0``).
    """
    if correlation == 0.0 or n_decoys == 0:
        return None
    if n_relevant < 1:
        raise ValueError("decoy_correlation > 0 needs at least one relevant feature to copy")
    return [j % n_relevant for j in range(n_decoys)]


def latent_decoys(
    rng: np.random.Generator,
    n_samples: int,
    n_decoys: int,
    correlation: float,
    partner_latent: np.ndarray | None,
) -> tuple[np.ndarray, list[int] | None]:
    """Draw decoys on the latent standard-normal scale.

    Parameters
    ----------
    rng : numpy.random.Generator
        Dedicated to the decoys (so adding decoys never changes the relevant columns).
    n_samples, n_decoys : int
    correlation : float
        ``rho`` in ``[0, 1)``.
    partner_latent : ndarray of float64, shape (n_samples, k), or None
        Latent (approximately standard-normal) scores of the ``k`` relevant features. Only read
        when ``correlation > 0``.

    Returns
    -------
    z : ndarray of float64, shape (n_samples, n_decoys)
    partners : list of int (length n_decoys) or None
        Relevant column copied by each decoy (``None`` when ``correlation == 0``).
    """
    eps = rng.standard_normal((n_samples, n_decoys))
    k = 0 if partner_latent is None else int(partner_latent.shape[1])
    partners = decoy_partners(n_decoys, k, correlation)
    if partners is None:
        return eps, None
    assert partner_latent is not None
    z = correlation * partner_latent[:, partners] + math.sqrt(1.0 - correlation**2) * eps
    return z, partners


def uniform_to_latent(u: np.ndarray) -> np.ndarray:
    """``Phi^{-1}(u)`` for ``u`` in ``[0, 1]``, clipped away from the infinite ends. Shape kept."""
    return special.ndtri(np.clip(np.asarray(u, dtype=np.float64), _EPS, 1.0 - _EPS))


def latent_to_uniform(z: np.ndarray) -> np.ndarray:
    """``Phi(z)``: standard-normal scores to ``U(0, 1)``. Shape kept."""
    return special.ndtr(np.asarray(z, dtype=np.float64))


def standardise(v: np.ndarray, axis: int = 0) -> np.ndarray:
    """``(v - mean) / std`` along ``axis`` with the sample (ddof=0) statistics; constant slices
    are only centred."""
    v = np.asarray(v, dtype=np.float64)
    mu = v.mean(axis=axis, keepdims=True)
    sd = v.std(axis=axis, keepdims=True)
    sd = np.where(sd > 0, sd, 1.0)
    return (v - mu) / sd


def assemble(
    *,
    name: str,
    seed: int,
    columns: list[np.ndarray],
    y: np.ndarray,
    n_relevant: int,
    relevant_local: np.ndarray | None,
    params: dict[str, Any],
    bayes: np.ndarray | None = None,
) -> Dataset:
    """Stack column blocks (relevant block first) into a :class:`Dataset`.

    Parameters
    ----------
    columns : list of ndarray, each shape (n_samples, p_i)
        Column blocks in output order; the first ``n_relevant`` columns overall are relevant.
    y : ndarray, shape (n_samples,)
    n_relevant : int
    relevant_local : ndarray of bool, shape (n_samples, p_rel) or None
        Per-instance mask over the first ``p_rel <= p`` columns; padded with ``False``.
    params : dict
        JSON-serialisable provenance.
    bayes : ndarray of float, shape (n_samples,), or None
        Each row's Bayes-classifier accuracy (:attr:`Dataset.bayes`).
    """
    blocks = [np.asarray(c, dtype=np.float32).reshape(len(y), -1) for c in columns]
    X = np.ascontiguousarray(np.concatenate(blocks, axis=1), dtype=np.float32)
    p = X.shape[1]
    relevant = np.zeros(p, dtype=bool)
    relevant[:n_relevant] = True
    local = None
    if relevant_local is not None:
        local = np.zeros((X.shape[0], p), dtype=bool)
        local[:, : relevant_local.shape[1]] = relevant_local
    return Dataset(
        X=X,
        y=np.asarray(y, dtype=np.int64),
        relevant=relevant,
        relevant_local=local,
        name=name,
        params=params,
        seed=int(seed),
        bayes=None if bayes is None else np.asarray(bayes, dtype=np.float64),
    )


def register_family_member(
    name: str,
    k: int,
    description: str,
    family: str,
    generate: Callable[[str, int, int, int, float], Dataset],
) -> Callable[..., Dataset]:
    """Register dataset ``name`` of a family whose members differ by name alone: its generator is
    ``fn(*, n_samples, n_decoys, seed, decoy_correlation=0.0)``, which calls ``generate(name, n_samples,
    n_decoys, seed, decoy_correlation)`` (``k`` relevant features, for its docstring). Returns the generator."""

    def generator(*, n_samples: int, n_decoys: int, seed: int, decoy_correlation: float = 0.0) -> Dataset:
        return generate(name, n_samples, n_decoys, seed, decoy_correlation)

    generator.__name__ = generator.__qualname__ = name
    generator.__doc__ = (
        f"``{name}`` (k={k}); see the module docstring of the {family} family. X: (n_samples, {k} + n_decoys)."
    )
    return register(name, description=description, family=family)(generator)
