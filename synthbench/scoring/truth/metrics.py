"""The ground-truth scorer's metrics: how well a feature ranking recovers the truly relevant features.

:class:`Metric` is the declarative metadata every scorer's metrics carry (direction, limits, unit,
description, kinds, control, scope: :class:`~synthbench.catalogue.MetricInfo`; for the ground
truth's also the metric itself, its bounds and chance); :data:`METRICS` are the ground-truth
scorer's own (tables and any input whose relevant elements are known globally or per instance).

Conventions
-----------
* ``scores`` is either an importance vector of shape ``(p,)`` or an attribution matrix of shape
  ``(n, p)``; higher ``|score|`` means more important (the sign is ignored). A matrix is reduced
  to a vector by the mean absolute attribution over its rows before a global metric is computed.
* ``relevant`` is a bool vector ``(p,)`` (global truth) or, for local metrics, a bool matrix
  ``(n, p)`` (per-instance truth).
* Ties in ``|score|`` are broken at random with the ``rng`` the caller passes (the cell's seed),
  never by column order: two tied columns are ordered by an independent uniform key
  (:func:`~synthbench.scoring.ranking.rank`, the ranking every scorer shares).
* Every metric is a :class:`Metric` that declares, as data, its direction, its bounds and its
  expected value under a uniformly random ranking (``chance``), so leaderboards can sort,
  validate and show "x chance" without special cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

import numpy as np

from synthbench.catalogue import MetricInfo
from synthbench.scoring.ranking import rank, top_k_mask

__all__ = [
    "Metric",
    "METRICS",
    "get",
    "names",
    "importance",
    "best_k",
    "best_2k",
    "auroc",
    "average_precision",
    "mean_rank",
    "local_tpr_at_k",
    "local_fdr_at_k",
]


def importance(scores: np.ndarray) -> np.ndarray:
    """Per-feature importance ``|score|`` of shape ``(p,)``; rows of a matrix are averaged."""
    s = np.abs(np.asarray(scores, dtype=np.float64))
    if s.ndim == 2:
        s = s.mean(axis=0)
    if s.ndim != 1:
        raise ValueError(f"scores must have shape (p,) or (n, p), got {np.shape(scores)}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or inf")
    return s


def _check_global(scores: np.ndarray, relevant: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    imp = importance(scores)
    truth = np.asarray(relevant, dtype=bool)
    if truth.shape != imp.shape:
        raise ValueError(f"relevant has shape {truth.shape}, expected {imp.shape}")
    if not truth.any():
        raise ValueError("ground truth has no relevant feature")
    return imp, truth


def _hits_in_top(scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator, depth: int) -> float:
    imp, truth = _check_global(scores, relevant)
    order = rank(imp, rng)
    return float(truth[order[:depth]].sum())


def best_k(scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> float:
    """Share of the top-``k`` features (by ``|score|``) that are relevant, ``k = relevant.sum()``."""
    k = int(np.sum(relevant))
    return _hits_in_top(scores, relevant, rng, k) / k


def best_2k(scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> float:
    """Relevant features found within the top ``2k``, divided by ``k``."""
    k = int(np.sum(relevant))
    return _hits_in_top(scores, relevant, rng, 2 * k) / k


def _ranks_of_relevant(scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """1-based ranks (1 = most important) of the relevant features, and ``p``."""
    imp, truth = _check_global(scores, relevant)
    order = rank(imp, rng)
    position = np.empty(imp.size, dtype=np.int64)
    position[order] = np.arange(1, imp.size + 1)
    return position[truth], imp.size


def auroc(scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> float:
    """Area under the ROC curve of ``|score|`` as a detector of relevant features.

    Computed on the tie-broken ranking (Mann-Whitney U), so it equals scikit-learn's
    ``roc_auc_score`` when there are no ties. NaN when every feature is relevant.
    """
    ranks, p = _ranks_of_relevant(scores, relevant, rng)
    k = ranks.size
    if k == p:
        return float("nan")
    # For the i-th best relevant feature (0-based), the irrelevant features ranked below it are
    # all features below it minus the k-1-i relevant ones.
    ranks = np.sort(ranks)
    below = (p - ranks) - (k - 1 - np.arange(k))
    return float(below.sum() / (k * (p - k)))


def average_precision(scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> float:
    """Average precision of the tie-broken ranking: mean over relevant features of precision at their rank."""
    ranks, _ = _ranks_of_relevant(scores, relevant, rng)
    ranks = np.sort(ranks)
    return float(np.mean(np.arange(1, ranks.size + 1) / ranks))


def mean_rank(scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> float:
    """Mean 1-based rank of the relevant features (1 = most important); lower is better."""
    ranks, _ = _ranks_of_relevant(scores, relevant, rng)
    return float(ranks.mean())


def _local_top_k(
    attributions: np.ndarray, relevant_local: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, int]:
    att = np.abs(np.asarray(attributions, dtype=np.float64))
    truth = np.asarray(relevant_local, dtype=bool)
    if att.ndim != 2 or truth.shape != att.shape:
        raise ValueError(
            f"local metrics need attributions and truth of equal shape (n, p), got {att.shape} and {truth.shape}"
        )
    if not np.all(np.isfinite(att)):
        raise ValueError("attributions contain NaN or inf")
    k = int(truth.any(axis=0).sum())  # number of globally relevant features
    hits = (truth & top_k_mask(att, k, rng)).sum(axis=1)
    return hits, truth.sum(axis=1), k


def local_tpr_at_k(attributions: np.ndarray, relevant_local: np.ndarray, rng: np.random.Generator) -> float:
    """Mean over instances of (relevant features of the instance within its top ``k``) / (its relevant count).

    ``k`` is the number of globally relevant features (columns relevant for some instance).
    Instances without any relevant feature are skipped.
    """
    hits, n_true, _ = _local_top_k(attributions, relevant_local, rng)
    keep = n_true > 0
    return float(np.mean(hits[keep] / n_true[keep]))


def local_fdr_at_k(attributions: np.ndarray, relevant_local: np.ndarray, rng: np.random.Generator) -> float:
    """Mean over instances of the share of its top-``k`` features that are not relevant for it."""
    hits, _, k = _local_top_k(attributions, relevant_local, rng)
    return float(np.mean(1.0 - hits / k))


def _harmonic(p: int) -> float:
    return float(np.sum(1.0 / np.arange(1, p + 1)))


def _expected_ap(k: int, p: int) -> float:
    # E[precision at the rank r of one relevant feature] for r uniform on 1..p, with the other
    # k-1 relevant features uniform over the remaining p-1 positions.
    h = _harmonic(p)
    return (h + (k - 1) * (p - h) / (p - 1)) / p if p > 1 else 1.0


def _min_ap(k: int, p: int) -> float:
    # Every relevant feature ranked after every irrelevant one.
    j = np.arange(1, k + 1)
    return float(np.mean(j / (p - k + j)))


def _kp(relevant: np.ndarray) -> tuple[int, int]:
    truth = np.asarray(relevant, dtype=bool)
    glob = truth.any(axis=0) if truth.ndim == 2 else truth
    return int(glob.sum()), int(glob.size)


@dataclass(frozen=True)
class Metric(MetricInfo):
    """A metric and its declared metadata: what the leaderboard, the report and the checks read.

    Every scorer declares its metrics as :class:`Metric` objects. The metadata (``name``,
    ``direction``, ``description``, ``limits``, ``unit``, ``kinds``, ``control``) are those of
    :class:`~synthbench.catalogue.MetricInfo`, which the store records with the cells. The ground
    truth's metrics also carry the truth-based parts (``fn``, ``scope``, ``bounds``, ``chance``): the
    metric is computed from a method's scores and the known truth, and its chance is analytic. A
    metric its scorer computes itself (ROAD, remove-and-retrain) leaves them None; its chance
    reference, if any, is a ``control`` method measured in the same run.

    ``name``, ``direction`` and ``description`` are positional; every other attribute is a
    keyword.

    Attributes
    ----------
    fn : callable ``(scores, relevant, rng) -> float``, or None (computed by its scorer); its ``scope`` (a field of
        :class:`~synthbench.catalogue.MetricInfo`) is then ``"global"`` (truth ``(p,)``) or ``"local"`` (truth
        ``(n, p)``, needs ``(n, p)`` scores)
    bounds : callable ``relevant -> (lowest, highest)`` attainable values, or None (``limits`` hold for any input)
    chance : callable ``relevant -> float``, the expected value under a uniformly random
        ranking, or None
    reads_2k_ranking : the metric reads a method's separate 2k ranking when it returns one
        (``MethodOutput.scores_2k``: selectors whose k and 2k picks come from separate runs)

    ``fn``, ``scope``, ``bounds`` and ``chance`` are given together or not at all.
    """

    _: KW_ONLY
    fn: Callable[[np.ndarray, np.ndarray, np.random.Generator], float] | None = None
    bounds: Callable[[np.ndarray], tuple[float, float]] | None = None
    chance: Callable[[np.ndarray], float] | None = None
    reads_2k_ranking: bool = False
    #: Whether it is computed from scores and the known truth (``fn``), with an analytic ``chance``: set from ``fn``.
    truth_based: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        given = [part for part in ("fn", "scope", "bounds", "chance") if getattr(self, part) is not None]
        object.__setattr__(self, "truth_based", self.fn is not None)
        if given and len(given) < 4:
            raise ValueError(
                f"metric {self.name!r}: fn, scope, bounds and chance are given together or not at all "
                f"(got only {', '.join(given)})"
            )
        if self.reads_2k_ranking and not given:
            raise ValueError(f"metric {self.name!r}: reads_2k_ranking needs a truth-based metric (fn, scope, ...)")

    def __call__(self, scores: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> float:
        if self.fn is None:
            raise TypeError(f"metric {self.name!r} is computed by its scorer, not from scores and truth")
        return self.fn(scores, relevant, rng)

    def better(self, a: float, b: float) -> bool:
        """True when value ``a`` is strictly better than ``b``."""
        return a > b if self.direction == "higher" else a < b


def _local_fdr_chance(relevant: np.ndarray) -> float:
    truth = np.asarray(relevant, dtype=bool)
    return float(1.0 - truth.sum(axis=1).mean() / truth.shape[1])


METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric(
            "best_k",
            "higher",
            "share of true features among the top k by |score|",
            unit="share of true features",
            fn=best_k,
            scope="global",
            bounds=lambda r: (0.0, 1.0),
            chance=lambda r: _kp(r)[0] / _kp(r)[1],
        ),
        Metric(
            "best_2k",
            "higher",
            "true features found within the top 2k, divided by k",
            unit="true features found / k",
            fn=best_2k,
            scope="global",
            bounds=lambda r: (0.0, 1.0),
            chance=lambda r: min(2 * _kp(r)[0], _kp(r)[1]) / _kp(r)[1],
            reads_2k_ranking=True,
        ),
        Metric(
            "auroc",
            "higher",
            "AUROC of |score| against the truth",
            fn=auroc,
            scope="global",
            bounds=lambda r: (0.0, 1.0),
            chance=lambda r: 0.5,
        ),
        Metric(
            "average_precision",
            "higher",
            "average precision of |score| against the truth",
            fn=average_precision,
            scope="global",
            bounds=lambda r: (_min_ap(*_kp(r)), 1.0),
            chance=lambda r: _expected_ap(*_kp(r)),
        ),
        Metric(
            "mean_rank",
            "lower",
            "mean rank of the true features (1 = most important)",
            limits=(1.0, np.inf),
            unit="rank, 1 = first",
            fn=mean_rank,
            scope="global",
            bounds=lambda r: ((_kp(r)[0] + 1) / 2, _kp(r)[1] - (_kp(r)[0] - 1) / 2),
            chance=lambda r: (_kp(r)[1] + 1) / 2,
        ),
        Metric(
            "local_tpr_at_k",
            "higher",
            "per-instance share of the instance's true features within its top k",
            fn=local_tpr_at_k,
            scope="local",
            bounds=lambda r: (0.0, 1.0),
            chance=lambda r: _kp(r)[0] / _kp(r)[1],
        ),
        Metric(
            "local_fdr_at_k",
            "lower",
            "per-instance share of the top k that is not true for the instance",
            fn=local_fdr_at_k,
            scope="local",
            bounds=lambda r: (0.0, 1.0),
            chance=_local_fdr_chance,
        ),
    ]
}


def names(scope: str | None = None) -> list[str]:
    """Names of the registered metrics, optionally only those of one scope."""
    return [n for n, m in METRICS.items() if scope is None or m.scope == scope]


def get(name: str) -> Metric:
    """The :class:`Metric` called ``name``; the error lists the valid names."""
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; valid names: {', '.join(METRICS)}") from None
