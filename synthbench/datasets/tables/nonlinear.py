"""The four nonlinear sets of Passemiers et al. (2023), "How good neural networks interpretation
methods really are? A quantitative benchmark".

Every feature is drawn i.i.d. ``U(0, 1)``; the first ``k`` are relevant, decoys follow with the same
distribution. After labelling every feature is centred to ``[-1, 1]`` by ``x -> 2x - 1``. With
``u`` the uncentred value and ``r = sqrt((u0 - .5)**2 + (u1 - .5)**2)``:

============== === ======================================================================  ========
name            k  label ``y = 1`` iff                                                       P(y=1)
============== === ======================================================================  ========
``ring``        2  ``|r - 0.35| <= 0.1151``                                                  0.507
``xor``         2  ``(u0 - .5)(.5 - u1) >= 0``                                               0.500
``ring_xor``    4  ``|r - 0.35| <= 0.0704`` or ``(u2 - .5)(.5 - u3) >= 0.0337``              0.515
``ring_xor_sum`` 6 ``|r - 0.35| <= 0.0479`` or ``(u2 - .5)(.5 - u3) >= 0.0598``              0.498
                   or ``u4 + u5 + e >= 1.4074`` with ``e ~ N(0, 0.2**2)`` (0.2 is the std)
============== === ======================================================================  ========

Convention: the label is computed from the float32 values actually stored in ``X`` (centred, then
mapped back exactly by ``(x + 1) / 2`` in float64), so the public label rules below reproduce ``y``
bit-exactly from the returned columns. Quantising ``U(0, 1)`` to float32 changes nothing measurable.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from synthbench.datasets.base import Dataset

from .decoys import (
    assemble,
    check_decoy_correlation,
    latent_decoys,
    latent_to_uniform,
    register_family_member,
    uniform_to_latent,
)

__all__ = [
    "ring_label",
    "xor_label",
    "ring_xor_label",
    "ring_xor_sum_fired",
    "ring_xor_sum_label",
    "ring_xor_sum_bayes",
    "LABEL_RULES",
    "DESIGN_BALANCE",
]

RING_RADIUS = 0.35
SUM_NOISE_STD = 0.2

#: Design class balance (share of ``y == 1``) quoted with the benchmark.
DESIGN_BALANCE: dict[str, float] = {"ring": 0.507, "xor": 0.500, "ring_xor": 0.515, "ring_xor_sum": 0.498}


def _unit(X_centred: np.ndarray, k: int) -> np.ndarray:
    """Map centred columns back to ``[0, 1)`` in float64 (exact for float32 input)."""
    X = np.asarray(X_centred)
    if X.ndim != 2 or X.shape[1] < k:
        raise ValueError(f"expected an array of shape (n, >= {k}), got {X.shape}")
    return (X[:, :k].astype(np.float64) + 1.0) / 2.0


def _ring(u0: np.ndarray, u1: np.ndarray, width: float) -> np.ndarray:
    r = np.sqrt((u0 - 0.5) ** 2 + (u1 - 0.5) ** 2)
    return np.abs(r - RING_RADIUS) <= width


def _xor(u2: np.ndarray, u3: np.ndarray, threshold: float) -> np.ndarray:
    return (u2 - 0.5) * (0.5 - u3) >= threshold


def ring_label(X_centred: np.ndarray) -> np.ndarray:
    """Label of ``ring`` from its centred relevant columns.

    Parameters
    ----------
    X_centred : ndarray, shape (n, >= 2)
        Columns 0 and 1 are read, on the centred ``[-1, 1]`` scale.

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    u = _unit(X_centred, 2)
    return _ring(u[:, 0], u[:, 1], 0.1151).astype(np.int64)


def xor_label(X_centred: np.ndarray) -> np.ndarray:
    """Label of ``xor`` from centred columns 0, 1 (shape (n, >= 2)); int64 of shape (n,)."""
    u = _unit(X_centred, 2)
    return _xor(u[:, 0], u[:, 1], 0.0).astype(np.int64)


def ring_xor_label(X_centred: np.ndarray) -> np.ndarray:
    """Label of ``ring_xor`` from centred columns 0..3 (shape (n, >= 4)); int64 of shape (n,)."""
    u = _unit(X_centred, 4)
    fired = _ring(u[:, 0], u[:, 1], 0.0704) | _xor(u[:, 2], u[:, 3], 0.0337)
    return fired.astype(np.int64)


def ring_xor_sum_fired(X_centred: np.ndarray) -> np.ndarray:
    """Noiseless part of ``ring_xor_sum``: the ring or the xor term fires.

    Parameters
    ----------
    X_centred : ndarray, shape (n, >= 4)

    Returns
    -------
    ndarray of bool, shape (n,)
        Where ``True`` the label is 1 whatever the noise.
    """
    u = _unit(X_centred, 4)
    return _ring(u[:, 0], u[:, 1], 0.0479) | _xor(u[:, 2], u[:, 3], 0.0598)


def ring_xor_sum_label(X_centred: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Label of ``ring_xor_sum`` given the Gaussian noise of the sum term.

    Parameters
    ----------
    X_centred : ndarray, shape (n, >= 6)
    noise : ndarray, shape (n,)
        The ``N(0, 0.2**2)`` draw added to ``u4 + u5``.

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    u = _unit(X_centred, 6)
    sum_term = u[:, 4] + u[:, 5] + np.asarray(noise, dtype=np.float64) >= 1.4074
    return (ring_xor_sum_fired(X_centred) | sum_term).astype(np.int64)


def ring_xor_sum_bayes(X_centred: np.ndarray) -> np.ndarray:
    """Per row of ``ring_xor_sum``, the probability that the Bayes classifier names the label correctly.

    ``P(y = 1 | x)`` is 1 where the ring or xor term fires, else ``P(u4 + u5 + e >= 1.4074) =
    Phi((u4 + u5 - 1.4074) / 0.2)``; the Bayes classifier answers the likelier class and is right
    with probability ``max(P, 1 - P)``. Shape (n,), float64.
    """
    from scipy.stats import norm

    u = _unit(X_centred, 6)
    p1 = np.where(ring_xor_sum_fired(X_centred), 1.0, norm.cdf((u[:, 4] + u[:, 5] - 1.4074) / SUM_NOISE_STD))
    return np.maximum(p1, 1.0 - p1)


#: Deterministic label rules: ``name -> f(X_centred_relevant) -> y``.
LABEL_RULES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "ring": ring_label,
    "xor": xor_label,
    "ring_xor": ring_xor_label,
}

_RULE_TEXT = {
    "ring": "|r-0.35|<=0.1151",
    "xor": "(u0-.5)(.5-u1)>=0",
    "ring_xor": "|r-0.35|<=0.0704 or (u2-.5)(.5-u3)>=0.0337",
    "ring_xor_sum": "|r-0.35|<=0.0479 or (u2-.5)(.5-u3)>=0.0598 or u4+u5+N(0,0.2^2)>=1.4074",
}
_K = {"ring": 2, "xor": 2, "ring_xor": 4, "ring_xor_sum": 6}


def _generate(name: str, n_samples: int, n_decoys: int, seed: int, decoy_correlation: float) -> Dataset:
    rho = check_decoy_correlation(decoy_correlation)
    k = _K[name]
    rng_main, rng_decoy = np.random.default_rng(seed).spawn(2)
    # Relevant columns, quantised to float32 before labelling (see module docstring).
    Xr = (2.0 * rng_main.random((n_samples, k)) - 1.0).astype(np.float32)
    if name == "ring_xor_sum":
        noise = rng_main.normal(0.0, SUM_NOISE_STD, size=n_samples)
        y = ring_xor_sum_label(Xr, noise)
        bayes = ring_xor_sum_bayes(Xr)
    else:
        y = LABEL_RULES[name](Xr)
        bayes = np.ones(n_samples)  # a noiseless rule: the Bayes classifier is always right
    partner_latent = uniform_to_latent((Xr.astype(np.float64) + 1.0) / 2.0) if rho > 0 else None
    z, partners = latent_decoys(rng_decoy, n_samples, n_decoys, rho, partner_latent)
    decoys = 2.0 * latent_to_uniform(z) - 1.0
    params = {
        "n_samples": n_samples,
        "n_decoys": n_decoys,
        "n_relevant": k,
        "decoy_correlation": rho,
        "decoy_partners": partners,
        "marginal": "U(0,1) centred by 2u-1",
        "rule": _RULE_TEXT[name],
    }
    return assemble(
        name=name, seed=seed, columns=[Xr, decoys], y=y, n_relevant=k, relevant_local=None, params=params, bayes=bayes
    )


_DESCRIPTIONS = {
    "ring": "Passemiers 2023 ring: 2 relevant U(0,1) features, annulus label",
    "xor": "Passemiers 2023 xor: 2 relevant U(0,1) features, quadrant-parity label",
    "ring_xor": "Passemiers 2023 ring+xor: 4 relevant U(0,1) features",
    "ring_xor_sum": "Passemiers 2023 ring+xor+sum: 6 relevant U(0,1) features, noisy sum term",
}
ring, xor, ring_xor, ring_xor_sum = (
    register_family_member(name, _K[name], _DESCRIPTIONS[name], "nonlinear", _generate) for name in _DESCRIPTIONS
)
