"""Localisation metrics: how much of an image's attribution map falls on its ground-truth mask.

Conventions
-----------
* ``maps`` are non-negative relevance maps ``(n, H, W)``, one per explained image: the ground-truth
  scorer aggregates a method's ``(n, C, H, W)`` attributions over channels first (by default the
  sum of ``|a|``, see :data:`CHANNEL_AGGREGATIONS`).
* ``masks`` are bool ``(n, H, W)``: the pixels of each image's signal (the channels of a pixel
  share one mask).
* Each metric is computed per image and averaged over the images. Ties in a map are broken at
  random with the caller's ``rng`` (rank accuracy, top-k intersection, pointing game: each image's
  pixels ordered by :func:`~synthbench.scoring.ranking.rank`) or counted half (AUROC), never by
  pixel position.

The definitions are those of Quantus 0.6 (``RelevanceMassAccuracy``, ``RelevanceRankAccuracy``,
``PointingGame``, ``AUC``, ``TopKIntersection``), cross-checked in the tests on tie-free maps.
Where Quantus resolves a tie in the maximum by counting a hit when any tied pixel is in the mask,
the pointing game here picks one of the tied pixels at random, so a constant map scores at chance.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from sklearn.metrics import roc_auc_score

from synthbench.scoring.ranking import rank, top_k_mask
from synthbench.scoring.truth.metrics import Metric

__all__ = [
    "CHANNEL_AGGREGATIONS",
    "aggregate_channels",
    "pixel_masks",
    "mass_accuracy",
    "rank_accuracy",
    "pointing_game",
    "map_auroc",
    "top_k_intersection",
    "top_k",
    "LOCALISATION_METRICS",
]

CHANNEL_AGGREGATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sum_abs": lambda a: np.abs(a).sum(axis=1),
    "max_abs": lambda a: np.abs(a).max(axis=1),
    "l2": lambda a: np.sqrt(np.square(a).sum(axis=1)),
}
"""How ``(n, C, H, W)`` attributions become ``(n, H, W)`` relevance maps."""


def aggregate_channels(attributions: np.ndarray, how: str = "sum_abs") -> np.ndarray:
    """Relevance maps ``(n, H, W)`` (float64, >= 0) of attributions ``(n, C, H, W)`` by ``how``."""
    a = np.asarray(attributions, dtype=np.float64)
    if a.ndim != 4:
        raise ValueError(f"attributions must be (n, C, H, W), got shape {a.shape}")
    if how not in CHANNEL_AGGREGATIONS:
        raise ValueError(f"unknown channel aggregation {how!r}; valid: {', '.join(CHANNEL_AGGREGATIONS)}")
    return CHANNEL_AGGREGATIONS[how](a)


def pixel_masks(masks: np.ndarray) -> np.ndarray:
    """Pixel masks ``(n, H, W)`` of input-shaped masks ``(n, C, H, W)``: a pixel is in when any channel is."""
    m = np.asarray(masks, dtype=bool)
    if m.ndim != 4:
        raise ValueError(f"masks must be (n, C, H, W), got shape {m.shape}")
    return np.asarray(m.any(axis=1))


def _flat(maps: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(maps, dtype=np.float64)
    s = np.asarray(masks, dtype=bool)
    if a.shape != s.shape or a.ndim != 3:
        raise ValueError(f"maps {a.shape} and masks {s.shape} must both be (n, H, W)")
    if not np.isfinite(a).all() or (a < 0).any():
        raise ValueError("maps must be finite and non-negative (aggregate the channels first)")
    if not s.reshape(len(s), -1).any(axis=1).all():
        raise ValueError("every image needs a non-empty mask")
    return a.reshape(len(a), -1), s.reshape(len(s), -1)


def mass_accuracy(maps: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> float:
    """Mean share of each map's total relevance inside its mask (an all-zero map scores 0)."""
    a, s = _flat(maps, masks)
    total = a.sum(axis=1)
    inside = (a * s).sum(axis=1)
    return float(np.mean(np.divide(inside, total, out=np.zeros_like(total), where=total > 0)))


def rank_accuracy(maps: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> float:
    """Mean share of each image's ``|mask|`` most relevant pixels that lie in its mask."""
    a, s = _flat(maps, masks)
    order = rank(a, rng)
    size = s.sum(axis=1)
    hits = np.take_along_axis(s, order, axis=1)
    first = np.arange(a.shape[1])[None, :] < size[:, None]
    return float(np.mean((hits & first).sum(axis=1) / size))


def pointing_game(maps: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> float:
    """Share of images whose most relevant pixel (one of the tied maxima, at random) lies in the mask."""
    a, s = _flat(maps, masks)
    top = rank(a, rng)[:, 0]
    return float(np.mean(s[np.arange(len(s)), top]))


def map_auroc(maps: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> float:
    """Mean per-image AUROC of the map's relevance against its mask (ties count half)."""
    a, s = _flat(maps, masks)
    values = [roc_auc_score(si, ai) if 0 < si.sum() < si.size else 1.0 for ai, si in zip(a, s)]
    return float(np.mean(values))


def top_k(n_pixels: int) -> int:
    """The ``k`` of :func:`top_k_intersection`: 5 % of an image's pixels, at least 1."""
    return max(1, math.ceil(0.05 * n_pixels))


def top_k_intersection(maps: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> float:
    """Mean share of each map's :func:`top_k` most relevant pixels that lie in its mask."""
    a, s = _flat(maps, masks)
    k = top_k(a.shape[1])
    return float(np.mean((s & top_k_mask(a, k, rng)).sum(axis=1) / k))


def _share(masks: np.ndarray) -> float:
    s = np.asarray(masks, dtype=bool).reshape(len(masks), -1)
    return float(np.mean(s.mean(axis=1)))


def _top_k_bounds(masks: np.ndarray) -> tuple[float, float]:
    s = np.asarray(masks, dtype=bool).reshape(len(masks), -1)
    k = top_k(s.shape[1])
    size = s.sum(axis=1)
    return float(np.mean(np.maximum(0, k - (s.shape[1] - size)) / k)), float(np.mean(np.minimum(size, k) / k))


_UNIT = (0.0, 1.0)

LOCALISATION_METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric(
            "mass_accuracy",
            "higher",
            "share of the map's relevance inside the mask (Quantus RelevanceMassAccuracy)",
            unit="share of relevance",
            kinds=("image",),
            fn=mass_accuracy,
            scope="local",
            bounds=lambda s: _UNIT,
            chance=_share,
        ),
        Metric(
            "rank_accuracy",
            "higher",
            "share of the |mask| most relevant pixels inside the mask (Quantus RelevanceRankAccuracy)",
            unit="share of top pixels",
            kinds=("image",),
            fn=rank_accuracy,
            scope="local",
            bounds=lambda s: _UNIT,
            chance=_share,
        ),
        Metric(
            "pointing_game",
            "higher",
            "share of images whose most relevant pixel is in the mask (Quantus PointingGame)",
            unit="share of images",
            kinds=("image",),
            fn=pointing_game,
            scope="local",
            bounds=lambda s: _UNIT,
            chance=_share,
        ),
        Metric(
            "map_auroc",
            "higher",
            "per-image AUROC of relevance against the mask (Quantus AUC)",
            kinds=("image",),
            fn=map_auroc,
            scope="local",
            bounds=lambda s: _UNIT,
            chance=lambda s: 0.5,
        ),
        Metric(
            "top_k_intersection",
            "higher",
            "share of the top 5 % pixels inside the mask (Quantus TopKIntersection)",
            unit="share of top pixels",
            kinds=("image",),
            fn=top_k_intersection,
            scope="local",
            bounds=_top_k_bounds,
            chance=_share,
        ),
    ]
}
"""The ground-truth scorer's metrics on images; each takes maps and pixel masks ``(n, H, W)``."""
