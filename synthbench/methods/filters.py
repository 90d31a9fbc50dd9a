"""Filter methods: score each feature from the training data alone, no model."""

from __future__ import annotations

import numpy as np
from sklearn.feature_selection import f_classif

from synthbench.methods.registry import AS_RUN_2023, register_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData
from synthbench.selection.mutual_info import mutual_info_classif_1d

_RELIEFF = "Kononenko 1994 (ECML); skrebate (Urbanowicz et al. 2018, Journal of Biomedical Informatics)"
_MRMR = "Peng, Long & Ding 2005 (IEEE TPAMI)"


@register_method(
    "mi",
    description="mutual information with the label (scikit-learn, k-NN estimator)",
    reference="Kraskov, Stögbauer & Grassberger 2004 (Physical Review E); Ross 2014 (PLOS ONE); "
    "scikit-learn mutual_info_classif",
)
def mutual_information(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray:
    """scikit-learn's ``mutual_info_classif`` on the training part, shape ``(p,)``, in nats, non-negative (computed for
    all columns at once, equal to it bit for bit: :func:`~synthbench.selection.mutual_info.mutual_info_classif_1d`)."""
    return mutual_info_classif_1d(data.X_train, data.y_train, random_state=int(rng.integers(2**31 - 1)))


@register_method(
    "anova",
    description="ANOVA F statistic of each feature against the label (linear; blind to XOR)",
    reference="one-way ANOVA F-test; scikit-learn f_classif",
)
def anova(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray:
    """F statistics on the training part, shape ``(p,)``; constant columns score 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        f, _ = f_classif(data.X_train, data.y_train)
    return np.nan_to_num(f, nan=0.0, posinf=0.0)


@register_method(
    "relief",
    description="ReliefF (skrebate's algorithm, vectorised; equal to skrebate.ReliefF), 100 neighbours",
    reference=_RELIEFF,
    params={"n_neighbors": 100},
    default=False,
)
def relief(data: FoldData, models: SharedModels, rng: np.random.Generator, *, n_neighbors: int) -> np.ndarray:
    """ReliefF scores on the training part, shape ``(p,)``, signed; equal to skrebate's ``feature_importances_``."""
    from synthbench.selection.relief import relieff

    n_neighbors = min(n_neighbors, data.X_train.shape[0] - 1)
    return relieff(data.X_train, data.y_train, n_neighbors=n_neighbors)


@register_method(
    "relief_1nn",
    description="Relief with 1 nearest hit and 1 nearest miss per training row, Euclidean, differences / range "
    "(the 2023 benchmark's hand-written Relief)",
    reference=f"Kira & Rendell 1992 (AAAI); {AS_RUN_2023}",
    default=False,
)
def relief_1nn(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray:
    """Relief scores on the training part, shape ``(p,)``, signed
    (:func:`synthbench.selection.relief_basic.relief_1nn`)."""
    from synthbench.selection.relief_basic import relief_1nn as scores

    return scores(data.X_train, data.y_train)


@register_method(
    "relief_skrebate",
    description="ReliefF, skrebate itself (the reference for relief); slow: about 15 s per fold at p = 1000",
    reference=_RELIEFF,
    params={"n_neighbors": 100},
    default=False,
    max_features=10_000,  # Python-level loops over rows and features: minutes at 2048, hours beyond 10,000
)
def relief_skrebate(data: FoldData, models: SharedModels, rng: np.random.Generator, *, n_neighbors: int) -> np.ndarray:
    """skrebate ``ReliefF.feature_importances_`` on the training part, shape ``(p,)``, signed."""
    from synthbench.selection.relief import skrebate_relieff

    n_neighbors = min(n_neighbors, data.X_train.shape[0] - 1)
    return skrebate_relieff(data.X_train, data.y_train, n_neighbors=n_neighbors)


def _mrmr_output(data: FoldData, *, select, n_select: int, scheme: str, scale: float) -> np.ndarray:
    from synthbench.selection.mrmr import discretise, selection_scores

    n_select = min(n_select, data.n_features)
    chosen = select(discretise(data.X_train, scale=scale), data.y_train, n_select, scheme=scheme)
    return selection_scores(chosen, data.n_features)


_MRMR_PARAMS = {"n_select": 30, "scheme": "MIQ", "scale": 20.0}
_MRMR_SCORES = (
    "the i-th of n_select picks scores n_select - i + 1; unselected features tie at 0 (ordered at random by the scorer)"
)


@register_method(
    "mrmr",
    description="mRMR (MIQ) on round(20·x), synthbench's vectorised implementation",
    reference=_MRMR,
    params=_MRMR_PARAMS,
)
def mrmr_method(
    data: FoldData, models: SharedModels, rng: np.random.Generator, *, n_select: int, scheme: str, scale: float
) -> np.ndarray:
    from synthbench.selection.mrmr import mrmr

    return _mrmr_output(data, select=mrmr, n_select=n_select, scheme=scheme, scale=scale)


@register_method(
    "mrmr_pymrmr",
    description="mRMR (MIQ) on round(20·x), the reference C++ implementation (pymrmr); slow",
    reference=f"{_MRMR}; the authors' C++ mRMR through pymrmr",
    params=_MRMR_PARAMS,
    default=False,
    max_features=10_000,  # 15 s at p = 1000, about an hour at 10,000 (n = 1000)
)
def mrmr_pymrmr(
    data: FoldData, models: SharedModels, rng: np.random.Generator, *, n_select: int, scheme: str, scale: float
) -> np.ndarray:
    from synthbench.selection.mrmr import pymrmr_select

    return _mrmr_output(data, select=pymrmr_select, n_select=n_select, scheme=scheme, scale=scale)


mrmr_method.__doc__ = mrmr_pymrmr.__doc__ = f"Scores of shape ``(p,)``: {_MRMR_SCORES}."
