"""A verdict's reliability without the truth, as the field judges its metrics (Tomsett et al., AAAI 2020,
"Sanity checks for saliency metrics").

*Inter-rater reliability*: each explained example is a rater that ranks the methods by the verdict's
value on that example (:attr:`~synthbench.scoring.Scores.per_example`; ties share their mean rank, a
method without a value there is missing); Krippendorff's alpha, ordinal, of those rankings (the
``krippendorff`` package, reliability data ``examples × methods``), per fold. 1: every example orders
the methods alike; 0: no more agreement than chance (as with examples split into camps of opposite orders). A setting's
alpha is the mean over its folds, with a percentile bootstrap over the folds; across settings the same
hierarchical bootstrap as validity (:func:`~synthbench.report.study.validity.validity_table`).

Whether reliability predicts validity is :func:`reliability_against_validity`: Spearman's rho across
verdicts between their mean alpha and their mean agreement with the truth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from synthbench.report.study.validity import group_rng, hierarchical_interval, spearman_rows

__all__ = [
    "inter_rater_alpha",
    "setting_reliability",
    "reliability_table",
    "fold_means",
    "iec_resilience",
    "internal_consistency",
    "meta_consistency",
    "reliability_against_validity",
    "RELIABILITY_COLUMNS",
    "RELIABILITY_MEASURES",
]

#: The measures of a verdict's reliability without the truth, by their column in the validity summary, with how the
#: report names them: Krippendorff's alpha across examples, internal consistency (both Tomsett et al. 2020), and
#: MetaQuantus' meta-consistency (Hedström et al. 2023).
RELIABILITY_MEASURES = {"alpha": "reliability α", "consistency": "internal consistency", "mc": "meta-consistency MC"}

#: The columns of :func:`setting_reliability`'s table after its grouping keys.
RELIABILITY_COLUMNS = ["methods", "folds", "examples", "alpha", "alpha_lo", "alpha_hi", "replicates"]


def inter_rater_alpha(values: np.ndarray) -> float:
    """Krippendorff's alpha (ordinal) of the methods' rankings across examples.

    ``values``: ``(examples, methods)`` a verdict's value per example and method (NaN: missing). Each
    example (a rater) ranks the methods (a unit each) by value, ties sharing their mean rank; for complete
    rankings without ties the direction does not matter (reversing every ranking leaves alpha). NaN with fewer
    than 2 methods or 2 examples, or where no example separates any two methods.
    """
    import krippendorff
    from scipy import stats

    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] < 2 or values.shape[1] < 2:
        return float("nan")
    ranks = stats.rankdata(values, axis=1, nan_policy="omit")
    if np.unique(ranks[np.isfinite(ranks)]).size < 2:
        return float("nan")
    try:
        return float(krippendorff.alpha(reliability_data=ranks, level_of_measurement="ordinal"))
    except ValueError:  # a single value in the domain, or too few pairable values
        return float("nan")


def setting_reliability(
    rows: pd.DataFrame,
    by: Sequence[str],
    *,
    level: float = 0.95,
    n_resamples: int = 999,
    seed: int = 0,
) -> pd.DataFrame:
    """A verdict's inter-rater reliability per setting, with a percentile bootstrap over the folds.

    Parameters
    ----------
    rows : one row per cell: the ``by`` columns, ``fold`` (a ``seed/fold`` key), ``method`` and ``values`` (the
        verdict's per-example values, an array, the same examples for every method of a fold); controls are
        left out by the caller
    by : what makes a setting (``setting, n_decoys, model, apart``)
    level, n_resamples, seed : the fold bootstrap's level, resamples and seed (with each setting's key)

    Returns
    -------
    DataFrame with the ``by`` columns then :data:`RELIABILITY_COLUMNS`: the number of methods and folds, the
    examples per fold (the most), the mean alpha over the folds with its interval (none with one fold), and
    ``replicates`` the resampled means (an array; the mean repeated for a single fold).
    """
    per_fold = []
    for key, g in rows.groupby([*by, "fold"], sort=False):
        lengths = {len(v) for v in g["values"]}
        if len(lengths) != 1:  # the methods were measured on different examples: no common raters
            continue
        alpha = inter_rater_alpha(np.stack(list(g["values"]), axis=1))
        per_fold.append((*key, g["method"].nunique(), lengths.pop(), alpha))
    folds = pd.DataFrame(per_fold, columns=[*by, "fold", "methods", "examples", "alpha"])
    out = fold_means(folds, by, ["alpha"], level=level, n_resamples=n_resamples, seed=seed)
    sizes = folds.groupby(list(by), sort=False)[["methods", "examples"]].max().reset_index()
    out = out.merge(sizes, on=list(by), how="left") if len(out) else out.assign(methods=0, examples=0)
    return out[[*by, *RELIABILITY_COLUMNS]]


def fold_means(
    per_fold: pd.DataFrame,
    by: Sequence[str],
    values: Sequence[str],
    *,
    level: float = 0.95,
    n_resamples: int = 999,
    seed: int = 0,
) -> pd.DataFrame:
    """Per setting (``by``), the mean over its folds of each column of ``values`` (the finite ones), with a
    percentile bootstrap over the folds for the first: columns ``by``, ``folds`` (with a finite first value),
    each of ``values``, ``{values[0]}_lo``, ``{values[0]}_hi`` and ``replicates`` (the resampled means of the first;
    the mean repeated for a single fold)."""
    first, tail = values[0], (1 - level) / 2
    out = []
    for key, g in per_fold.groupby(list(by), sort=False):
        finite = g[np.isfinite(g[first].to_numpy(dtype=float))]
        means = [float(finite[v].mean()) if len(finite) else np.nan for v in values]
        lo = hi = np.nan
        replicates = np.full(n_resamples, means[0])
        if len(finite) > 1:
            x = finite[first].to_numpy(dtype=float)
            rng = group_rng(seed, key)
            replicates = x[rng.integers(0, len(x), size=(n_resamples, len(x)))].mean(axis=1)
            lo, hi = (float(q) for q in np.quantile(replicates, [tail, 1 - tail]))
        keys = key if isinstance(key, tuple) else (key,)
        out.append((*keys, len(finite), *means, lo, hi, replicates))
    return pd.DataFrame(out, columns=[*by, "folds", *values, f"{first}_lo", f"{first}_hi", "replicates"])


def reliability_table(
    per_setting: pd.DataFrame,
    by: Sequence[str],
    value: str = "alpha",
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """A verdict's mean ``value`` (its reliability alpha, or its meta-consistency ``mc``) across settings:
    per-setting rows (:func:`fold_means`' columns) summarised per ``by`` group (``verdict, kind, model, apart``)
    with the hierarchical bootstrap of :func:`~synthbench.report.study.validity.hierarchical_interval`. Columns: the
    ``by`` columns, ``{value}_settings`` (the settings with a value), ``value``, ``{value}_lo``, ``{value}_hi``."""
    out = []
    for key, g in per_setting.groupby(list(by), sort=False):
        keys = key if isinstance(key, tuple) else (key,)
        used = g[np.isfinite(g[value].to_numpy(dtype=float))]
        if used.empty:
            out.append((*keys, 0, np.nan, np.nan, np.nan))
            continue
        rng = group_rng(seed, key)
        lo, hi = hierarchical_interval(list(used["replicates"]), level, n_resamples, rng)
        out.append((*keys, len(used), float(used[value].mean()), lo, hi))
    return pd.DataFrame(out, columns=[*by, f"{value}_settings", value, f"{value}_lo", f"{value}_hi"])


def internal_consistency(
    rows: pd.DataFrame, by: Sequence[str], signs: tuple[float, float], *, n_resamples: int = 999, seed: int = 0
) -> pd.DataFrame:
    """Tomsett et al.'s internal consistency: Spearman's rho, across a cell's examples, between two of a verdict's
    metrics that measure the same thing (a metric and its declared ``variant_of``), each oriented so that higher is
    better (``signs``), averaged over the fold's methods, then per setting over the folds (:func:`fold_means`).

    ``rows``: one row per cell (controls left out by the caller): the ``by`` columns, ``fold``, ``method``, and
    ``first``, ``second`` the two metrics' per-example arrays. Returns :func:`fold_means`' columns for
    ``consistency``.
    """
    out = []
    for key, g in rows.groupby([*by, "fold"], sort=False):
        rhos = []
        for a, b in zip(g["first"], g["second"]):
            if len(a) != len(b):
                continue
            keep = np.isfinite(a) & np.isfinite(b)
            a, b = signs[0] * a[keep], signs[1] * b[keep]
            rhos.append(spearman_rows(a[None, :], b[None, :])[0] if keep.sum() >= 3 else np.nan)
        finite = [r for r in rhos if np.isfinite(r)]
        out.append((*key, float(np.mean(finite)) if finite else np.nan))
    per_fold = pd.DataFrame(out, columns=[*by, "fold", "consistency"])
    return fold_means(per_fold, by, ["consistency"], n_resamples=n_resamples, seed=seed)


def iec_resilience(before: np.ndarray, after: np.ndarray, counted: np.ndarray) -> float:
    """MetaQuantus' IEC under minor noise: the share of (counted example, method) pairs whose rank among the methods
    is unchanged. ``before``, ``after``: ``(methods, examples)`` a verdict's values; ``counted``: ``(examples,)``
    bool. Methods are ranked per example by value (ties by method order, as MetaQuantus' argsort); NaN without a
    counted example."""
    if not counted.any():
        return float("nan")
    rank_before = np.argsort(np.argsort(before[:, counted], axis=0, kind="stable"), axis=0, kind="stable")
    rank_after = np.argsort(np.argsort(after[:, counted], axis=0, kind="stable"), axis=0, kind="stable")
    return float(np.mean(rank_before == rank_after))


def meta_consistency(rows: pd.DataFrame, by: Sequence[str], perturbations: int) -> pd.DataFrame:
    """MetaQuantus' four criteria and their mean, MC, per fold of a ``meta_consistency`` scorer's cells.

    ``rows``: one row per cell (controls left out by the caller): the ``by`` columns, ``fold``, ``method``, the
    cell's ``meta_iac_nr``, ``meta_iac_ar``, ``meta_iec_ar`` and its per-example arrays ``meta_unperturbed``,
    ``meta_minor_{k}``, ``meta_kept_minor_{k}`` for ``k < perturbations``. Returns ``by``, ``fold``, ``methods``,
    ``iac_nr``, ``iac_ar`` (means over the methods), ``iec_nr`` (:func:`iec_resilience` over the methods, averaged
    over the perturbations), ``iec_ar`` and ``mc`` (the mean of the four; 1 ideal).
    """
    out = []
    for key, g in rows.groupby([*by, "fold"], sort=False):
        lengths = {len(v) for v in g["meta_unperturbed"]}
        iec = []
        if len(lengths) == 1 and len(g) > 1:
            before = np.stack(list(g["meta_unperturbed"]))
            for k in range(perturbations):
                after = np.stack(list(g[f"meta_minor_{k}"]))
                counted = np.all(np.stack(list(g[f"meta_kept_minor_{k}"])) > 0, axis=0)
                iec.append(iec_resilience(before, after, counted))
        criteria = [
            float(g["meta_iac_nr"].mean()),
            float(g["meta_iac_ar"].mean()),
            float(np.nanmean(iec)) if np.isfinite(iec).any() else np.nan,
            float(g["meta_iec_ar"].mean()),
        ]
        mc = float(np.mean(criteria)) if np.all(np.isfinite(criteria)) else np.nan
        out.append((*key, len(g), *criteria, mc))
    return pd.DataFrame(out, columns=[*by, "fold", "methods", "iac_nr", "iac_ar", "iec_nr", "iec_ar", "mc"])


def reliability_against_validity(
    summary: pd.DataFrame, value: str = "alpha", *, level: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> dict[str, float]:
    """Does a verdict's reliability predict its validity? Spearman's rho across verdicts.

    ``summary``: one row per verdict (per data kind and model) with ``value`` (its mean reliability: ``alpha``,
    or the meta-consistency ``mc``) and ``spearman`` (its mean agreement with the truth). Returns ``rho``, its
    percentile bootstrap interval ``lo, hi`` (the verdicts resampled in pairs; resamples that tie either side
    left out) and ``n`` the verdicts with both; NaN below 3 verdicts.
    """
    from scipy import stats

    both = summary[np.isfinite(summary[value].astype(float)) & np.isfinite(summary["spearman"].astype(float))]
    alpha, validity = both[value].to_numpy(dtype=float), both["spearman"].to_numpy(dtype=float)
    n = len(both)
    if n < 3 or np.ptp(alpha) == 0 or np.ptp(validity) == 0:
        return {"rho": np.nan, "lo": np.nan, "hi": np.nan, "n": float(n)}
    rho = float(stats.spearmanr(alpha, validity)[0])
    picks = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    resampled = spearman_rows(alpha[picks], validity[picks])
    resampled = resampled[np.isfinite(resampled)]
    tail = (1 - level) / 2
    lo, hi = np.quantile(resampled, [tail, 1 - tail]) if len(resampled) else (np.nan, np.nan)
    return {"rho": rho, "lo": float(lo), "hi": float(hi), "n": float(n)}
