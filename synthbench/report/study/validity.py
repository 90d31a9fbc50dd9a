"""Which verdict to trust: how well each verdict orders the methods as the ground truth does.

A verdict (ROAD, ROAR, KAR, a randomisation check) and the ground truth both score the same
methods on the same cells. For each setting (a dataset at a decoy count, on one explained model),
the methods' mean verdict and mean truth over the folds are ranked, and the two orderings compared
by Spearman's and Kendall's rank correlations (the verdict negated first when its direction is not
the truth's, so +1 always means "orders the methods exactly as the truth does"). Controls are left
out of the ordering: they are the chance reference, not methods. Where the truth gives every ranked
method the same mean it does not separate them, and there is no agreement to measure (NaN).

Uncertainty, two levels:

- within a setting, a percentile bootstrap over its folds (folds drawn with replacement, each
  method's means recomputed, Spearman again): :func:`rank_agreement`'s interval;
- across settings, a hierarchical bootstrap (:func:`validity_table`): settings drawn with
  replacement, then within each drawn setting one of its fold resamples, the mean over the drawn
  settings recomputed; its percentile interval is the interval of the verdict's mean agreement.

A setting's orderings are only as trustworthy as they are reproducible: :func:`split_half_reliability` measures, for
the truth and for the verdict alike, how well one half of the folds orders the methods as the other half does
(Spearman-Brown stepped up to all the folds). A setting enters a verdict's mean agreement only where the truth's
ordering reaches :data:`MIN_TRUTH_RELIABILITY` (the others are counted and listed, not dropped silently); beside each
raw agreement stands the agreement corrected for both orderings' unreliability (Spearman's correction for
attenuation, ``rho / sqrt(r_truth r_verdict)``), which estimates the agreement of orderings measured without noise.

Verdicts are compared with each other by :func:`verdict_tests`: a paired Wilcoxon signed-rank test
of their per-setting Spearman over the settings both measured, Holm-corrected within a group.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "rank_agreement",
    "reliable_truth",
    "split_half_reliability",
    "attenuation_corrected",
    "spearman_rows",
    "validity_table",
    "hierarchical_interval",
    "group_rng",
    "verdict_tests",
    "holm",
    "AGREEMENT_COLUMNS",
    "VALIDITY_COLUMNS",
    "TEST_COLUMNS",
    "MIN_METHODS",
    "MIN_TRUTH_RELIABILITY",
]

#: The fewest non-control methods a verdict must order in a setting for its agreement to mean anything.
MIN_METHODS = 3

#: The split-half reliability (Spearman-Brown, :func:`split_half_reliability`) the truth's ordering of a setting's
#: methods must reach for the setting to enter a verdict's mean agreement: below it, the truth's own order is too noisy
#: to tell a verdict that follows it from one that does not.
MIN_TRUTH_RELIABILITY = 0.8

#: Above this many splits of the folds into halves, :func:`split_half_reliability` draws this many at random.
MAX_SPLITS = 500

#: The columns of :func:`rank_agreement`'s table after its grouping keys.
AGREEMENT_COLUMNS = [
    "methods",
    "folds",
    "spearman",
    "spearman_lo",
    "spearman_hi",
    "kendall",
    "ranked",
    "truth_spread",
    "truth_split_half",
    "verdict_split_half",
    "spearman_corrected",
    "replicates",
]

#: The columns of :func:`validity_table`'s table after its grouping keys.
VALIDITY_COLUMNS = [
    "settings",
    "of",
    "unreliable",
    "spearman",
    "spearman_lo",
    "spearman_hi",
    "half_width",
    "kendall",
    "spearman_corrected",
    "reason",
]

#: The columns of :func:`verdict_tests`' table after its grouping keys.
TEST_COLUMNS = ["verdict", "other", "settings", "difference", "p", "p_holm"]


def holm(p: dict[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1) of a family of tests."""
    names = sorted(p, key=lambda k: p[k])
    out, running = {}, 0.0
    for i, name in enumerate(names):
        running = max(running, min(1.0, (len(names) - i) * p[name]))
        out[name] = running
    return out


def spearman_rows(truth: np.ndarray, verdict: np.ndarray) -> np.ndarray:
    """Spearman's rho between ``truth[..., :]`` and ``verdict[..., :]`` along the last axis (average ranks for
    ties, as scipy.stats.spearmanr); NaN where a row has fewer than 3 entries or either row is constant.

    ``truth``, ``verdict``: ``(..., M)`` arrays of the same shape. Returns ``(...)``.
    """
    from scipy import stats

    if truth.shape[-1] < MIN_METHODS:
        return np.full(truth.shape[:-1], np.nan)
    a = stats.rankdata(truth, axis=-1)
    b = stats.rankdata(verdict, axis=-1)
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (a * b).sum(axis=-1) / denominator
    return np.where(denominator > 0, np.clip(rho, -1.0, 1.0), np.nan)


def _correlations(truth: np.ndarray, verdict: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    if len(truth) < MIN_METHODS or np.ptp(truth) == 0 or np.ptp(verdict) == 0:
        return np.nan, np.nan
    return float(stats.spearmanr(truth, verdict)[0]), float(stats.kendalltau(truth, verdict)[0])


def group_rng(seed: int, key: object) -> np.random.Generator:
    """A generator for one group, from ``seed`` and the group's key, so adding a group leaves the others' draws."""
    return np.random.default_rng([seed, zlib.crc32(repr(key).encode())])


def _halves(folds: int, rng: np.random.Generator) -> np.ndarray:
    """Splits of ``folds`` folds into a first half of ``folds // 2`` and the rest, as boolean rows ``(splits, folds)``:
    every split, each once (for an even number, fold 0 always in the second half, so no split comes with its mirror)
    when there are at most :data:`MAX_SPLITS`, else :data:`MAX_SPLITS` drawn with ``rng``."""
    half = folds // 2
    candidates = range(1, folds) if folds % 2 == 0 else range(folds)
    if math.comb(len(candidates), half) <= MAX_SPLITS:
        picks = [list(c) for c in itertools.combinations(candidates, half)]
    else:
        picks = [rng.permutation(folds)[:half].tolist() for _ in range(MAX_SPLITS)]
    rows = np.zeros((len(picks), folds), dtype=bool)
    for row, pick in zip(rows, picks, strict=True):
        row[pick] = True
    return rows


def split_half_reliability(values: np.ndarray, rng: np.random.Generator) -> float:
    """How reproducible the methods' ordering is across folds: split-half reliability with the Spearman-Brown step-up.

    ``values``: ``(F, M)`` one score per fold and method (no NaN). For each split of the folds into two halves
    (:func:`_halves`: every split of up to :data:`MAX_SPLITS`, else as many drawn with ``rng``), Spearman's rho between
    the two halves' method means; ``r`` their mean over the splits where both halves separate the methods, stepped up
    to the ordering of all ``F`` folds by Spearman-Brown, ``2 r / (1 + r)`` (exact for even ``F``; for odd ``F`` the
    halves differ by one fold). 1: any half of the folds orders the methods as the other; 0 or below: the ordering is
    noise (the step-up of a negative ``r`` is clipped at -1, the halves then ordering the methods oppositely). NaN
    with fewer than 2 folds or :data:`MIN_METHODS` methods, or where no split's halves both separate them.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or len(values) < 2 or values.shape[1] < MIN_METHODS:
        return float("nan")
    first = _halves(len(values), rng)  # (S, F)
    mean_first = (first[:, :, None] * values).sum(axis=1) / first.sum(axis=1, keepdims=True)
    mean_second = (~first[:, :, None] * values).sum(axis=1) / (~first).sum(axis=1, keepdims=True)
    rhos = spearman_rows(mean_first, mean_second)
    rhos = rhos[np.isfinite(rhos)]
    if not len(rhos):
        return float("nan")
    r = float(rhos.mean())
    return max(2 * r / (1 + r), -1.0) if r > -1 else -1.0


def attenuation_corrected(rho: float, truth_reliability: float, verdict_reliability: float) -> float:
    """Spearman's correction for attenuation: ``rho / sqrt(truth_reliability * verdict_reliability)``, the agreement
    two orderings measured without noise would have (it may exceed 1 where a reliability is underestimated; shown as
    is). NaN where either reliability is not positive or unknown."""
    if not (truth_reliability > 0 and verdict_reliability > 0) or not np.isfinite(rho):
        return float("nan")
    return float(rho / math.sqrt(truth_reliability * verdict_reliability))


def _fold_resamples(truth: np.ndarray, verdict: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Spearman of the fold means after resampling the folds (rows of the ``(F, M)`` arrays) with replacement,
    ``n`` times: ``(n,)``, NaN where a resample ties the truth or the verdict."""
    picks = rng.integers(0, len(truth), size=(n, len(truth)))
    return spearman_rows(truth[picks].mean(axis=1), verdict[picks].mean(axis=1))


def rank_agreement(
    paired: pd.DataFrame,
    verdict_direction: str,
    truth_direction: str,
    *,
    controls: Iterable[str] = (),
    by: Sequence[str] = ("setting", "n_decoys"),
    level: float = 0.95,
    n_resamples: int = 999,
    seed: int = 0,
) -> pd.DataFrame:
    """Rank agreement of a verdict with the ground truth per setting, with a bootstrap interval over folds.

    Parameters
    ----------
    paired : one row per paired cell: the ``by`` columns, ``fold``, ``method``, ``truth``, ``verdict`` (a
        fold is a ``(seed, fold)`` pair when the store holds several seeds: pass it as one key)
    verdict_direction, truth_direction : ``"higher"`` or ``"lower"``, which way each is better
    controls : methods left out of the ordering (``random``, ``input``, ``sobel``)
    by : what makes a setting (add ``model`` to keep the orderings of two explained models apart)
    level : the interval's confidence level
    n_resamples : bootstrap resamples of the folds
    seed : the bootstrap's seed (with each setting's key: the same table every time, whatever else it holds)

    Returns
    -------
    DataFrame with the ``by`` columns then :data:`AGREEMENT_COLUMNS`: per setting, the number of methods
    and folds, Spearman's rho with its percentile interval and Kendall's tau of the fold-mean orderings;
    NaN with fewer than three methods or a constant ordering (the truth separating none of them), and no
    interval with a single fold; ``ranked`` the methods ordered (a tuple of names), ``truth_spread`` the
    range of their truth means (0: the truth does not separate them), ``truth_split_half`` and ``verdict_split_half``
    the split-half reliability of each ordering over the folds (:func:`split_half_reliability`, NaN with one fold),
    ``spearman_corrected`` rho corrected for both (:func:`attenuation_corrected`), and ``replicates`` the
    ``n_resamples`` resampled rhos (an array; the rho itself, repeated, for a single fold), which
    :func:`validity_table` draws on.
    """
    sign = 1.0 if verdict_direction == truth_direction else -1.0
    controls = set(controls)
    tail = (1 - level) / 2
    rows = []
    for key, g in paired[~paired["method"].isin(controls)].groupby(list(by), sort=False):
        wide = g.pivot_table(index="fold", columns="method", values=["truth", "verdict"], aggfunc="mean")
        wide = wide.dropna(axis=1)  # methods with a value in every fold
        sides = set(wide.columns.get_level_values(0))
        both = len(wide) and {"truth", "verdict"} <= sides
        methods = [m for m in wide["truth"].columns if m in wide["verdict"].columns] if both else []
        truth = wide["truth"][methods].to_numpy() if methods else np.empty((len(wide), 0))
        verdict = sign * wide["verdict"][methods].to_numpy() if methods else np.empty((len(wide), 0))
        rho, tau = _correlations(truth.mean(axis=0), verdict.mean(axis=0))
        lo = hi = np.nan
        replicates = np.full(n_resamples, rho)
        if len(truth) > 1 and np.isfinite(rho):
            replicates = _fold_resamples(truth, verdict, n_resamples, group_rng(seed, key))
            finite = replicates[np.isfinite(replicates)]
            lo, hi = (float(q) for q in np.quantile(finite, [tail, 1 - tail])) if len(finite) else (np.nan, np.nan)
        spread = float(np.ptp(truth.mean(axis=0))) if methods else np.nan
        halves = group_rng(seed, ("split-half", key))
        reliable = split_half_reliability(truth, halves), split_half_reliability(verdict, halves)
        keys = key if isinstance(key, tuple) else (key,)
        rows.append(
            (
                *keys,
                len(methods),
                len(truth),
                rho,
                lo,
                hi,
                tau,
                tuple(methods),
                spread,
                *reliable,
                attenuation_corrected(rho, *reliable),
                replicates,
            )
        )
    return pd.DataFrame(rows, columns=[*by, *AGREEMENT_COLUMNS])


def _reason(g: pd.DataFrame, min_truth_reliability: float | None) -> str:
    """Why a group of settings gives no agreement: the first thing every setting lacks."""
    if (g["methods"] < MIN_METHODS).all():
        most = int(g["methods"].max())
        return f"fewer than {MIN_METHODS} non-control methods judged (at most {most}): named, not ranked"
    if (g["truth_spread"].fillna(0) == 0).all() or g["spearman"].isna().all():
        return "the truth does not separate the methods it judged, or the verdict gives them one value"
    if min_truth_reliability is not None:
        best = g["truth_split_half"].max()
        known = f"at most {best:.2f}" if np.isfinite(best) else "unknown with one fold"
        return (
            f"the truth's ordering reaches a split-half reliability of {min_truth_reliability:g} in no setting "
            f"({known})"
        )
    return ""


def reliable_truth(agree: pd.DataFrame, min_truth_reliability: float | None = MIN_TRUTH_RELIABILITY) -> pd.Series:
    """Boolean per row of :func:`rank_agreement`'s table: whether its setting may enter a verdict's mean agreement (a
    finite rho, and the truth's split-half reliability at least ``min_truth_reliability``; None: any)."""
    finite = np.isfinite(agree["spearman"].to_numpy(dtype=float))
    if min_truth_reliability is None:
        return pd.Series(finite, index=agree.index)
    reliable = agree["truth_split_half"].to_numpy(dtype=float) >= min_truth_reliability
    return pd.Series(finite & reliable, index=agree.index)


def hierarchical_interval(
    replicates: Sequence[np.ndarray], level: float, n_resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Percentile interval of a mean over settings, by a two-level bootstrap.

    ``replicates``: per setting, the resampled values of its statistic over its folds (``(B,)`` each, NaN where a
    resample has none). Each draw takes the settings with replacement and, for each drawn setting, one of its
    fold resamples at random, and averages them (the finite ones). Returns ``(lo, hi)``.
    """
    tail = (1 - level) / 2
    stacked = np.stack([np.asarray(r, dtype=float) for r in replicates])  # (S, B)
    settings = rng.integers(0, len(stacked), size=(n_resamples, len(stacked)))
    draws = rng.integers(0, stacked.shape[1], size=settings.shape)
    drawn = stacked[settings, draws]  # (draws, S): one fold resample of each drawn setting
    finite = np.isfinite(drawn)
    counts = finite.sum(axis=1)
    means = np.where(finite, drawn, 0.0).sum(axis=1)[counts > 0] / counts[counts > 0]
    if not len(means):
        return np.nan, np.nan
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


def validity_table(
    agree: pd.DataFrame,
    by: Sequence[str],
    *,
    min_truth_reliability: float | None = MIN_TRUTH_RELIABILITY,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """A verdict's mean agreement with the truth across settings, with a hierarchical bootstrap interval.

    Parameters
    ----------
    agree : :func:`rank_agreement`'s table (several verdicts may be concatenated, told apart by ``by``)
    by : the columns whose groups are summarised (``verdict, kind, model``): each group's settings are its rows
    min_truth_reliability : the truth's split-half reliability a setting needs to enter the mean
        (:data:`MIN_TRUTH_RELIABILITY`; None: every setting with an agreement, as for one fold per setting, where the
        reliability is unknown)
    level, n_resamples, seed : the interval's level, the number of hierarchical draws and their seed

    Returns
    -------
    DataFrame with the ``by`` columns then :data:`VALIDITY_COLUMNS`: ``settings`` the settings that enter (a finite
    rho and a reliable truth, :func:`reliable_truth`) of the group's ``of``, ``unreliable`` those left out because
    the truth's ordering is below the threshold although rho is finite; ``spearman`` the mean rho of those entering
    with the percentile interval of the draws (settings resampled with replacement, each drawn setting contributing
    one of its fold resamples), ``half_width`` half the interval's width, ``kendall`` the mean tau,
    ``spearman_corrected`` the mean of their rho corrected for attenuation (over the settings where it is defined),
    and ``reason`` why there is no value (empty where there is one). With one setting the interval is that setting's
    fold interval; with one fold per setting it comes from the settings alone.
    """
    rows = []
    for key, g in agree.groupby(list(by), sort=False):
        keys = key if isinstance(key, tuple) else (key,)
        enters = reliable_truth(g, min_truth_reliability)
        used = g[enters]
        unreliable = int(np.isfinite(g["spearman"].to_numpy(dtype=float)).sum() - enters.sum())
        if used.empty:
            rows.append(
                (*keys, 0, len(g), unreliable, *[np.nan] * 6, _reason(g, min_truth_reliability if unreliable else None))
            )
            continue
        lo, hi = hierarchical_interval(list(used["replicates"]), level, n_resamples, group_rng(seed, key))
        mean = float(used["spearman"].mean())
        corrected = used["spearman_corrected"].to_numpy(dtype=float)
        corrected_mean = float(np.mean(corrected[np.isfinite(corrected)])) if np.isfinite(corrected).any() else np.nan
        rows.append(
            (
                *keys,
                len(used),
                len(g),
                unreliable,
                mean,
                lo,
                hi,
                (hi - lo) / 2,
                float(used["kendall"].mean()),
                corrected_mean,
                "",
            )
        )
    return pd.DataFrame(rows, columns=[*by, *VALIDITY_COLUMNS])


def verdict_tests(agree: pd.DataFrame, by: Sequence[str], setting: Sequence[str]) -> pd.DataFrame:
    """Which verdicts can be told apart: paired Wilcoxon signed-rank tests of their per-setting Spearman.

    Parameters
    ----------
    agree : :func:`rank_agreement`'s tables of several verdicts, concatenated, with a ``verdict`` column
    by : the groups within which verdicts are compared (``kind, model``); Holm's correction runs within each
    setting : the columns that make a setting (``setting, n_decoys``): two verdicts are paired on the
        settings where both have a finite rho

    Returns
    -------
    DataFrame with the ``by`` columns then :data:`TEST_COLUMNS`, one row per pair of verdicts (``verdict``
    the one with the higher mean over their shared settings): the number of shared settings, the mean
    difference of rho, scipy.stats.wilcoxon's two-sided p-value (NaN below 2 shared settings or where every
    difference is 0) and the Holm-corrected p-value within the group.
    """
    from scipy import stats

    rows = []
    for key, g in agree.groupby(list(by), sort=False):
        keys = key if isinstance(key, tuple) else (key,)
        wide = g.pivot_table(index=list(setting), columns="verdict", values="spearman", aggfunc="mean", sort=False)
        names = list(dict.fromkeys(g["verdict"]))
        found = []
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                both = wide[[a, b]].dropna() if {a, b} <= set(wide.columns) else pd.DataFrame(columns=[a, b])
                diff = (both[a] - both[b]).to_numpy(dtype=float)
                first, second = (a, b) if diff.sum() >= 0 else (b, a)
                p = np.nan
                if len(diff) >= 2 and np.any(diff != 0):
                    p = float(stats.wilcoxon(diff).pvalue)
                found.append((first, second, len(diff), abs(float(diff.mean())) if len(diff) else np.nan, p))
        tested = {f"{a}|{b}": p for a, b, _, _, p in found if np.isfinite(p)}
        adjusted = holm(tested)
        for a, b, n, d, p in found:
            rows.append((*keys, a, b, n, d, p, adjusted.get(f"{a}|{b}", np.nan)))
    return pd.DataFrame(rows, columns=[*by, *TEST_COLUMNS])
