"""The L2X / INVASE synthetic family (Chen et al. 2018, "Learning to explain"; Yoon et al. 2019,
"INVASE"), with per-instance ground truth.

Features are i.i.d. ``N(0, 1)``. Labels are ``y ~ Bernoulli(sigmoid(logit))``. Papers index
features from 1; our columns from 0:

======================== ========= ===============================================================
name                      relevant  logit
======================== ========= ===============================================================
``l2x_xor``               0, 1      ``x0 * x1``
``orange_skin``           0..3      ``sum_{i<4} x_i**2 - 4``
``nonlinear_additive``    0..3      ``-100 sin(0.2 x0) + |x1| + x2 + exp(-x3) - 2.4``
``switch``                0..8      ``orange_skin(x0..x3)`` if ``x8 < 0`` else
                                    ``nonlinear_additive(x4..x7)``
======================== ========= ===============================================================

Conventions and choices
-----------------------
* Sign: the published code draws ``P(y=1) = 1 / (1 + exp(logit))`` (i.e. ``sigmoid(-logit)``);
  we use ``P(y=1) = sigmoid(logit)``. This only swaps the class names and leaves every ground
  truth unchanged.
* ``switch`` follows INVASE's construction (a standard-normal switch feature whose sign chooses the
  rule per sample) with L2X's pairing of rules (orange skin vs. nonlinear additive) and groups
  (paper features 1-4 vs. 5-8). The switch is column 8 so that the relevant columns come first;
  the paper's two unused base features (and the other sets' unused ones) are ordinary decoys:
  ``n_decoys=2`` reproduces the 11-column INVASE layout, ``n_decoys=8`` / ``6`` the 10-column
  layouts of the other sets.
* ``relevant_local[i]`` is the group that sample ``i``'s rule reads plus, for ``switch``, the switch
  column (which every sample reads). For the other sets every row equals ``relevant``.
* The widely copied public code builds ``switch`` by labelling the additive samples from columns
  0..3 and then "swapping" blocks with ``X[:, 4:8], X[:, :4] = X[:, :4], X[:, 4:8]``; numpy slices
  are views, so this duplicates columns 0..3 into 4..7 instead of swapping. We never swap: each
  rule reads its own group directly.
* Labels are computed from the float32 values actually stored in ``X``, so the public logit
  functions below reproduce the logit exactly from the returned columns.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

from synthbench.datasets.base import Dataset

from .decoys import assemble, check_decoy_correlation, latent_decoys, register_family_member

__all__ = [
    "xor_logit",
    "orange_skin_logit",
    "nonlinear_additive_logit",
    "switch_logit",
    "switch_mask",
    "LOGITS",
    "SWITCH_COLUMN",
    "ORANGE_GROUP",
    "ADDITIVE_GROUP",
]

#: Column of the switch feature in ``switch``.
SWITCH_COLUMN = 8
#: Columns read by the orange-skin rule in ``switch`` (samples with ``x8 < 0``).
ORANGE_GROUP = (0, 1, 2, 3)
#: Columns read by the nonlinear-additive rule in ``switch`` (samples with ``x8 >= 0``).
ADDITIVE_GROUP = (4, 5, 6, 7)


def _cols(X: np.ndarray, k: int) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] < k:
        raise ValueError(f"expected an array of shape (n, >= {k}), got {X.shape}")
    return X[:, :k].astype(np.float64)


def xor_logit(X: np.ndarray) -> np.ndarray:
    """``x0 * x1``. X: shape (n, >= 2); returns float64 of shape (n,)."""
    Z = _cols(X, 2)
    return Z[:, 0] * Z[:, 1]


def orange_skin_logit(X: np.ndarray) -> np.ndarray:
    """``sum_{i<4} x_i**2 - 4``. X: shape (n, >= 4); returns float64 of shape (n,)."""
    Z = _cols(X, 4)
    return np.sum(Z**2, axis=1) - 4.0


def nonlinear_additive_logit(X: np.ndarray) -> np.ndarray:
    """``-100 sin(0.2 x0) + |x1| + x2 + exp(-x3) - 2.4``. X: shape (n, >= 4); float64 (n,)."""
    Z = _cols(X, 4)
    return -100.0 * np.sin(0.2 * Z[:, 0]) + np.abs(Z[:, 1]) + Z[:, 2] + np.exp(-Z[:, 3]) - 2.4


def switch_logit(X: np.ndarray) -> np.ndarray:
    """Logit of ``switch``: orange skin on columns 0..3 where ``x8 < 0``, else nonlinear additive
    on columns 4..7. X: shape (n, >= 9); returns float64 of shape (n,)."""
    Z = _cols(X, SWITCH_COLUMN + 1)
    return np.where(
        Z[:, SWITCH_COLUMN] < 0,
        orange_skin_logit(Z[:, list(ORANGE_GROUP)]),
        nonlinear_additive_logit(Z[:, list(ADDITIVE_GROUP)]),
    )


def switch_mask(X: np.ndarray) -> np.ndarray:
    """Per-instance ground truth of ``switch`` over its 9 relevant columns.

    Parameters
    ----------
    X : ndarray, shape (n, >= 9)

    Returns
    -------
    ndarray of bool, shape (n, 9)
        Row ``i``: the group read by sample ``i``'s rule, plus the switch column.
    """
    Z = _cols(X, SWITCH_COLUMN + 1)
    neg = Z[:, SWITCH_COLUMN] < 0
    mask = np.zeros((Z.shape[0], SWITCH_COLUMN + 1), dtype=bool)
    mask[:, list(ORANGE_GROUP)] = neg[:, None]
    mask[:, list(ADDITIVE_GROUP)] = ~neg[:, None]
    mask[:, SWITCH_COLUMN] = True
    return mask


#: ``name -> (logit function of the relevant columns, number of relevant columns)``.
LOGITS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], int]] = {
    "l2x_xor": (xor_logit, 2),
    "orange_skin": (orange_skin_logit, 4),
    "nonlinear_additive": (nonlinear_additive_logit, 4),
    "switch": (switch_logit, SWITCH_COLUMN + 1),
}

_LOGIT_TEXT = {
    "l2x_xor": "x0*x1",
    "orange_skin": "sum_{i<4} x_i^2 - 4",
    "nonlinear_additive": "-100 sin(0.2 x0) + |x1| + x2 + exp(-x3) - 2.4",
    "switch": "x8<0: sum_{i<4} x_i^2 - 4; x8>=0: -100 sin(0.2 x4) + |x5| + x6 + exp(-x7) - 2.4",
}


def _generate(name: str, n_samples: int, n_decoys: int, seed: int, decoy_correlation: float) -> Dataset:
    rho = check_decoy_correlation(decoy_correlation)
    logit_fn, k = LOGITS[name]
    rng_main, rng_decoy = np.random.default_rng(seed).spawn(2)
    Xr = rng_main.standard_normal((n_samples, k)).astype(np.float32)
    logit = logit_fn(Xr)
    y = (rng_main.random(n_samples) < special.expit(logit)).astype(np.int64)
    if name == "switch":
        local = switch_mask(Xr)
    else:
        local = np.ones((n_samples, k), dtype=bool)
    z, partners = latent_decoys(rng_decoy, n_samples, n_decoys, rho, Xr.astype(np.float64) if rho > 0 else None)
    params = {
        "n_samples": n_samples,
        "n_decoys": n_decoys,
        "n_relevant": k,
        "decoy_correlation": rho,
        "decoy_partners": partners,
        "marginal": "N(0,1)",
        "logit": _LOGIT_TEXT[name],
        "label": "y ~ Bernoulli(sigmoid(logit))",
    }
    if name == "switch":
        params.update(switch_column=SWITCH_COLUMN, orange_group=list(ORANGE_GROUP), additive_group=list(ADDITIVE_GROUP))
    return assemble(name=name, seed=seed, columns=[Xr, z], y=y, n_relevant=k, relevant_local=local, params=params)


_DESCRIPTIONS = {
    "l2x_xor": "L2X/INVASE xor: N(0,1) features, logit x0*x1",
    "orange_skin": "L2X/INVASE orange skin: logit sum x_i^2 - 4 over 4 features",
    "nonlinear_additive": "L2X/INVASE nonlinear additive: -100 sin(.2x0)+|x1|+x2+exp(-x3)-2.4",
    "switch": "L2X/INVASE switch: sign of x8 picks orange skin (x0..x3) or additive (x4..x7) per sample",
}
l2x_xor, orange_skin, nonlinear_additive, switch = (
    register_family_member(name, LOGITS[name][1], _DESCRIPTIONS[name], "l2x", _generate) for name in _DESCRIPTIONS
)
