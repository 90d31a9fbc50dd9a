"""Madelon-style Gaussian clusters on hypercube vertices (Guyon 2003), via
:func:`sklearn.datasets.make_classification`.

Columns (``shuffle=False`` keeps sklearn's order): ``n_informative`` informative features, then
``n_redundant`` redundant ones (random linear combinations of the informative ones), then
``n_repeated`` repeated ones (exact copies of informative or redundant columns), then ``n_decoys``
decoys. ``relevant`` is the informative block only: redundant and repeated features are
deterministic (linear) functions of the informative ones, so they carry no information about
``y`` beyond it and the label is generated from the informative coordinates alone. They are
neither relevant nor decoys; their indices are recorded in ``params`` so a scorer can treat them
separately.

Decoys are drawn by us (not sklearn's ``n_useless``) as ``N(0, 1)`` like sklearn's useless features,
so that ``decoy_correlation`` can be honoured: a correlated decoy copies the standardised value of
an informative feature (see :mod:`synthbench.datasets.tables.decoys`).

sklearn draws from a legacy ``RandomState``; we seed it with an integer drawn from
``numpy.random.default_rng(seed)``. sklearn with ``shuffle=False`` returns rows sorted by cluster,
so we permute the rows with our generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.datasets import make_classification

from synthbench.datasets.base import Dataset, register

from .decoys import assemble, check_decoy_correlation, check_float, check_int, latent_decoys, standardise

__all__ = ["hypercube"]


@register(
    "hypercube",
    description="Madelon-style clusters on hypercube vertices (sklearn make_classification); truth = informative",
    family="hypercube",
)
def hypercube(
    *,
    n_samples: int,
    n_decoys: int,
    seed: int,
    n_informative: int = 5,
    n_redundant: int = 2,
    n_repeated: int = 0,
    n_classes: int = 2,
    n_clusters_per_class: int = 2,
    class_sep: float = 1.0,
    flip_y: float = 0.0,
    weights: list[float] | None = None,
    decoy_correlation: float = 0.0,
) -> Dataset:
    """Hypercube clusters; see the module docstring.

    Parameters
    ----------
    n_informative, n_redundant, n_repeated, n_classes, n_clusters_per_class, class_sep, flip_y, weights
        As in :func:`sklearn.datasets.make_classification` (``flip_y`` defaults to 0 here).
    decoy_correlation : float in [0, 1)

    Returns
    -------
    Dataset
        ``X`` of shape (n_samples, n_informative + n_redundant + n_repeated + n_decoys), float32;
        ``y`` in ``0..n_classes-1``; ``relevant`` = the first ``n_informative`` columns.
    """
    n_inf = check_int("n_informative", n_informative, minimum=1)
    n_red = check_int("n_redundant", n_redundant, minimum=0)
    n_rep = check_int("n_repeated", n_repeated, minimum=0)
    n_cls = check_int("n_classes", n_classes, minimum=2)
    n_clu = check_int("n_clusters_per_class", n_clusters_per_class, minimum=1)
    if n_cls * n_clu > 2**n_inf:
        raise ValueError(f"n_classes * n_clusters_per_class ({n_cls * n_clu}) must be <= 2**n_informative ({2**n_inf})")
    sep = check_float("class_sep", class_sep, low=0.0)
    flip = check_float("flip_y", flip_y, low=0.0, high=1.0)
    w_list: list[float] | None = None
    if weights is not None:
        w_list = [check_float("weights[i]", w, low=0.0) for w in weights]
        if len(w_list) not in (n_cls, n_cls - 1):
            raise ValueError(f"weights must have n_classes or n_classes - 1 entries, got {len(w_list)}")
    rho = check_decoy_correlation(decoy_correlation)

    rng_main, rng_decoy = np.random.default_rng(seed).spawn(2)
    sk_state = np.random.RandomState(int(rng_main.integers(0, 2**31 - 1)))
    p = n_inf + n_red + n_rep
    X, y = make_classification(
        n_samples=n_samples,
        n_features=p,
        n_informative=n_inf,
        n_redundant=n_red,
        n_repeated=n_rep,
        n_classes=n_cls,
        n_clusters_per_class=n_clu,
        weights=w_list,
        flip_y=flip,
        class_sep=sep,
        hypercube=True,
        shift=0.0,
        scale=1.0,
        shuffle=False,
        random_state=sk_state,
    )
    order = rng_main.permutation(n_samples)
    X = X[order].astype(np.float32)
    y = y[order].astype(np.int64)

    rep_idx = list(range(n_inf + n_red, p))
    rep_src = []
    for r in rep_idx:
        same = [c for c in range(n_inf + n_red) if np.array_equal(X[:, c], X[:, r])]
        rep_src.append(int(same[0]) if same else -1)

    partner_latent = standardise(X[:, :n_inf].astype(np.float64)) if rho > 0 else None
    z, partners = latent_decoys(rng_decoy, n_samples, n_decoys, rho, partner_latent)
    params: dict[str, Any] = {
        "n_samples": n_samples,
        "n_decoys": n_decoys,
        "n_informative": n_inf,
        "n_redundant": n_red,
        "n_repeated": n_rep,
        "n_classes": n_cls,
        "n_clusters_per_class": n_clu,
        "class_sep": sep,
        "flip_y": flip,
        "weights": w_list,
        "hypercube": True,
        "decoy_correlation": rho,
        "decoy_partners": partners,
        "n_relevant": n_inf,
        "informative_indices": list(range(n_inf)),
        "redundant_indices": list(range(n_inf, n_inf + n_red)),
        "repeated_indices": rep_idx,
        "repeated_sources": rep_src,
        "decoy_indices": list(range(p, p + n_decoys)),
        "marginal": "informative: Gaussian cluster mixture; decoys: N(0,1)",
    }
    return assemble(
        name="hypercube", seed=seed, columns=[X, z], y=y, n_relevant=n_inf, relevant_local=None, params=params
    )
