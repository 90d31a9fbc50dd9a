"""What the removal scorers (ROAD, remove-and-retrain) share: fractions, ranking keys, masks.

A method's attributions rank the *units* of each example: its input elements (tables: features;
images: each channel value, ``unit="element"``, or whole pixels with their channels summed,
``unit="pixel"``), by ``|a|`` or by the signed ``a``. The keys of :func:`ranking_keys` are ordered
by :func:`~synthbench.scoring.ranking.rank` (with the scorer's ``signed``): ties at random from
the cell's stream, so a constant map ranks like the random control.
"""

from __future__ import annotations

import math

import numpy as np

from synthbench.protocol import FoldData

__all__ = ["UNITS", "RANKINGS", "check_fractions", "ranking_keys", "removal_masks", "mask_shape", "correct"]

UNITS = ("element", "pixel")
RANKINGS = ("global", "local")


def check_fractions(fractions: float | tuple[float, ...]) -> tuple[float, ...]:
    """``fractions`` (one number or several) as sorted distinct floats, each strictly inside (0, 1);
    ValueError otherwise."""
    values = tuple(float(t) for t in np.atleast_1d(np.asarray(fractions, dtype=object)))
    if not values:
        raise ValueError("need at least one fraction")
    bad = [t for t in values if not 0.0 < t < 1.0]
    if bad:
        raise ValueError(f"fractions must lie strictly between 0 and 1, got {', '.join(map(str, bad))}")
    if len(set(values)) != len(values) or list(values) != sorted(values):
        raise ValueError(f"fractions must be distinct and increasing, got {values}")
    return values


def ranking_keys(
    local: np.ndarray | None, scores: np.ndarray | None, kind: str, *, unit: str, signed: bool, ranking: str
) -> np.ndarray | None:
    """Ranking keys ``(r, m)``: one row per example, or one shared row (tables ranked globally).

    Images (and tables with ``ranking="local"``) read the per-instance ``local`` attributions
    ``(n, *input_shape)``; tables with ``ranking="global"`` the global ``scores`` ``(p,)``. None
    when the method did not return what is needed.
    """
    if kind == "image" or ranking == "local":
        if local is None:
            return None
        a = local if signed else np.abs(local)
        if kind == "image" and unit == "pixel":
            a = a.sum(axis=1)
        return np.asarray(a, dtype=np.float64).reshape(len(a), -1)
    if scores is None:
        return None
    a = scores if signed else np.abs(scores)
    return np.asarray(a, dtype=np.float64).reshape(1, -1)


def mask_shape(data: FoldData, unit: str) -> tuple[int, ...]:
    """The shape of one example's removal mask: the input shape, or ``(1, H, W)`` for whole pixels."""
    if data.kind == "image" and unit == "pixel":
        return (1, *data.input_shape[1:])
    return data.input_shape


def removal_masks(order: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the ``floor(fraction * m)`` first (MoRF) and last (LeRF) of each row's ``m`` ranked units.

    ``order`` is the ``(r, m)`` :func:`~synthbench.scoring.ranking.rank` of :func:`ranking_keys`'s keys.
    Returns two bool ``(r, m)`` arrays.
    """
    r, m = order.shape
    count = int(math.floor(fraction * m + 1e-9))
    morf = np.zeros((r, m), dtype=bool)
    lerf = np.zeros((r, m), dtype=bool)
    rows = np.arange(r)[:, None]
    morf[rows, order[:, :count]] = True
    lerf[rows, order[:, m - count :]] = True  # count = 0 selects nothing
    return morf, lerf


def correct(model, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether ``model.predict`` labels each row of ``X`` as ``y``: float ``(n,)`` of 0 and 1 (its mean is the
    accuracy)."""
    return (model.predict(np.asarray(X, dtype=np.float32)) == y).astype(np.float64)
