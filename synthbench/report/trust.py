"""Which verdict to trust: how well each verdict orders the methods as the ground truth does.

A verdict (ROAD, ROAR, KAR, a randomisation check) and the ground truth both score the same
methods on the same cells. For each setting, the methods' mean verdict and mean truth over the
folds are ranked, and the two orderings compared by Spearman's and Kendall's rank correlations
(the verdict negated first when its direction is not the truth's, so +1 always means "orders the
methods exactly as the truth does"). The uncertainty comes from the folds: a percentile
bootstrap over the folds (scipy.stats.bootstrap; folds drawn with replacement, each method's
means recomputed, Spearman again) gives the interval. Controls are left out of the ordering:
they are the chance reference, not methods. Where the truth gives every ranked method the same
mean it does not separate them, and there is no agreement to measure (NaN).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

__all__ = ["rank_agreement", "AGREEMENT_COLUMNS"]

#: The columns of :func:`rank_agreement`'s table.
AGREEMENT_COLUMNS = [
    "setting",
    "n_decoys",
    "methods",
    "folds",
    "spearman",
    "spearman_lo",
    "spearman_hi",
    "kendall",
    "ranked",
    "truth_spread",
]


def _correlations(truth: np.ndarray, verdict: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    if len(truth) < 3 or np.ptp(truth) == 0 or np.ptp(verdict) == 0:
        return np.nan, np.nan
    return float(stats.spearmanr(truth, verdict)[0]), float(stats.kendalltau(truth, verdict)[0])


def rank_agreement(
    paired: pd.DataFrame,
    verdict_direction: str,
    truth_direction: str,
    *,
    controls: Iterable[str] = (),
    level: float = 0.95,
    n_resamples: int = 999,
    seed: int = 0,
) -> pd.DataFrame:
    """Rank agreement of a verdict with the ground truth per setting, with a bootstrap interval over folds.

    Parameters
    ----------
    paired : one row per paired cell: ``setting, n_decoys, fold, method, truth, verdict`` (a
        fold is a ``(seed, fold)`` pair when the store holds several seeds: pass it as one key)
    verdict_direction, truth_direction : ``"higher"`` or ``"lower"``, which way each is better
    controls : methods left out of the ordering (``random``, ``input``, ``sobel``)
    level : the interval's confidence level
    n_resamples : bootstrap resamples of the folds
    seed : the bootstrap's generator seed (the same table every time)

    Returns
    -------
    DataFrame with :data:`AGREEMENT_COLUMNS`: per setting and decoy count, the number of methods
    and folds, Spearman's rho with its interval and Kendall's tau of the fold-mean orderings; NaN
    with fewer than three methods or a constant ordering (the truth separating none of them), and no
    interval with a single fold; ``ranked`` the methods ordered (a tuple of names) and ``truth_spread``
    the range of their truth means (0: the truth does not separate them).
    """
    from scipy import stats

    sign = 1.0 if verdict_direction == truth_direction else -1.0
    controls = set(controls)
    rows = []
    for (setting, decoys), g in paired[~paired["method"].isin(controls)].groupby(["setting", "n_decoys"], sort=False):
        wide = g.pivot_table(index="fold", columns="method", values=["truth", "verdict"], aggfunc="mean")
        wide = wide.dropna(axis=1)  # methods with a value in every fold
        methods = [m for m in wide["truth"].columns if m in wide["verdict"].columns]
        truth, verdict = wide["truth"][methods].to_numpy(), sign * wide["verdict"][methods].to_numpy()
        rho, tau = _correlations(truth.mean(axis=0), verdict.mean(axis=0))
        lo = hi = np.nan
        if len(truth) > 1 and np.isfinite(rho):

            def statistic(folds: np.ndarray) -> float:
                return _correlations(truth[folds].mean(axis=0), verdict[folds].mean(axis=0))[0]

            result = stats.bootstrap(
                (np.arange(len(truth)),),
                statistic,
                vectorized=False,
                method="percentile",
                confidence_level=level,
                n_resamples=n_resamples,
                random_state=np.random.default_rng(seed),
            )
            lo, hi = float(result.confidence_interval.low), float(result.confidence_interval.high)
        spread = float(np.ptp(truth.mean(axis=0))) if methods else np.nan
        rows.append((setting, decoys, len(methods), len(truth), rho, lo, hi, tau, tuple(methods), spread))
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
