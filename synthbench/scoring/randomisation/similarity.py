"""Similarity of two attribution maps per example: the measures of the model-randomisation sanity check.

Adebayo et al. (2018) compare each example's map on the trained model with its map on a randomised
model by rank correlation (of ``|a|`` and of the signed ``a``), SSIM and the rank correlation of HOG
descriptors; a top-k intersection completes the set. Every function here works on a batch and
returns one value per example, so the caller can average, bootstrap or plot them.

Conventions
-----------
* ``a`` and ``b`` hold one map per example along axis 0 and are compared pair by pair (``a[i]``
  with ``b[i]``); nothing is pooled over the batch, normalisation included (:func:`preprocess`).
* A measure that is undefined for a pair (a rank correlation with a constant map) is NaN for that
  pair, never a number made up for it; the caller decides how to count it.
* Ties in a top-k ranking are broken at random with the caller's generator
  (:func:`~synthbench.scoring.ranking.rank`), so a constant map intersects like a random one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.ndimage import uniform_filter
from scipy.stats import rankdata

from synthbench.scoring.base import Scores, nanmean
from synthbench.scoring.ranking import top_k_mask
from synthbench.scoring.truth.metrics import Metric

__all__ = [
    "NORMALISATIONS",
    "TABLE_MEASURES",
    "IMAGE_MEASURES",
    "preprocess",
    "spearman_rows",
    "top_k_intersection",
    "ssim_rows",
    "hog_cell",
    "hog_descriptors",
    "hog_spearman_rows",
    "similarity",
    "Comparison",
    "ComparisonOptions",
    "LIMITS",
    "LABELS",
    "similarity_metrics",
]

NORMALISATIONS = ("none", "max", "second_moment")
"""How :func:`preprocess` scales each example's map."""

TABLE_MEASURES = ("spearman_abs", "spearman", "top_k")
"""The measures of :func:`similarity` that apply to maps of any shape."""

IMAGE_MEASURES = TABLE_MEASURES + ("ssim", "hog")

#: Each measure's range.
LIMITS = {
    "spearman_abs": (-1.0, 1.0),
    "spearman": (-1.0, 1.0),
    "top_k": (0.0, 1.0),
    "ssim": (-1.0, 1.0),
    "hog": (-1.0, 1.0),
}
#: Each measure in words.
LABELS = {
    "spearman_abs": "Spearman correlation of |a|",
    "spearman": "Spearman correlation of signed a",
    "top_k": "top-k intersection",
    "ssim": "SSIM",
    "hog": "Spearman correlation of HOG features",
}
"""The measures of :func:`similarity` that apply to image maps ``(n, C, H, W)``."""


def preprocess(maps: np.ndarray, *, absolute: bool, normalise: str) -> np.ndarray:
    """Maps made comparable, each example on its own.

    Parameters
    ----------
    maps : float array ``(n, *shape)``, one attribution map per example.
    absolute : take ``|a|`` first.
    normalise : one of :data:`NORMALISATIONS`. ``"none"`` leaves the values; ``"max"`` divides each
        example by its largest ``|a|``; ``"second_moment"`` divides each example by
        ``sqrt(mean(a ** 2))`` over its elements (the normalisation of Binder et al. 2023, which
        does not let one extreme element set the scale). An all-zero example stays zero.

    Returns
    -------
    float64 array of the shape of ``maps``.
    """
    if normalise not in NORMALISATIONS:
        raise ValueError(f"unknown normalise {normalise!r}; valid: {', '.join(NORMALISATIONS)}")
    a = np.array(maps, dtype=np.float64)  # a copy: the caller's maps are left as they are
    if a.ndim < 2:
        raise ValueError(f"maps must be (n, *shape) with one map per example, got shape {a.shape}")
    if absolute:
        a = np.abs(a)
    if normalise == "none":
        return a
    flat = a.reshape(len(a), -1)
    if normalise == "max":
        scale = np.abs(flat).max(axis=1)
    else:
        scale = np.sqrt(np.mean(np.square(flat), axis=1))
    scale = scale.reshape((-1,) + (1,) * (a.ndim - 1))
    return np.divide(a, scale, out=np.zeros_like(a), where=scale > 0)


def _pairs(a: np.ndarray, b: np.ndarray, ndim: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != ndim:
        raise ValueError(f"a {x.shape} and b {y.shape} must both be {what}")
    return x, y


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of each row of ``a`` with the same row of ``b``.

    Parameters
    ----------
    a, b : float arrays ``(n, m)``.

    Returns
    -------
    float64 ``(n,)``: the Pearson correlation of the rows' ranks, tied entries sharing their average
    rank (the convention of :func:`scipy.stats.spearmanr`). NaN for a row pair where either row is
    constant: it has no ranking to correlate.
    """
    x, y = _pairs(a, b, 2, "(n, m)")
    return _correlate(_ranked(x), _ranked(y))


def _ranked(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows' average ranks centred, their norms, and which rows are constant: one side of :func:`spearman_rows`."""
    r = rankdata(x, method="average", axis=1)
    r -= r.mean(axis=1, keepdims=True)
    return r, np.sqrt(np.sum(r * r, axis=1)), (x == x[:, :1]).all(axis=1)


def _correlate(
    a: tuple[np.ndarray, np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> np.ndarray:
    """Pearson correlation of two :func:`_ranked` sides, row by row; NaN where either row is constant."""
    (rx, nx, cx), (ry, ny, cy) = a, b
    rho = np.full(len(rx), np.nan)
    np.divide(np.sum(rx * ry, axis=1), nx * ny, out=rho, where=~(cx | cy))
    return np.clip(rho, -1.0, 1.0)


def top_k_intersection(a: np.ndarray, b: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Share of each row's ``k`` largest entries of ``a`` that are among the ``k`` largest of ``b``.

    Parameters
    ----------
    a, b : float arrays ``(n, m)``. Largest means largest signed value (pass ``|a|`` to rank by
        magnitude).
    k : how many entries count as the top, ``1 <= k <= m``.
    rng : breaks ties; rows of ``a`` then of ``b`` are ordered by
        :func:`~synthbench.scoring.ranking.top_k_mask` (``signed=True``: the top ``k`` of
        :func:`~synthbench.scoring.ranking.rank`), one draw each. A constant row
        thus picks ``k`` entries at random and intersects any row by ``k / m`` in expectation.

    Returns
    -------
    float64 ``(n,)`` in ``[0, 1]``.
    """
    x, y = _pairs(a, b, 2, "(n, m)")
    m = x.shape[1]
    if not 1 <= k <= m:
        raise ValueError(f"k must satisfy 1 <= k <= m = {m}, got {k}")
    top_a = top_k_mask(x, k, rng, signed=True)
    top_b = top_k_mask(y, k, rng, signed=True)
    return (top_a & top_b).sum(axis=1) / k


def _check_map_size(measure: str, height: int, width: int) -> None:
    """ValueError for maps too small for SSIM (3 x 3) or HOG (4 x 4: 2 x 2 cells of 2 pixels)."""
    if measure == "ssim" and min(height, width) < 3:
        raise ValueError(f"SSIM needs maps of at least 3 x 3 pixels, got {height} x {width}")
    if measure == "hog" and min(height, width) < 4:
        raise ValueError(f"HOG needs maps of at least 4 x 4 pixels (2 x 2 cells of 2 pixels), got {height} x {width}")


def _win_size(height: int, width: int) -> int:
    side = min(7, height, width)
    return side if side % 2 else side - 1


def ssim_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Structural similarity (SSIM) of each map of ``a`` with the same map of ``b``, all pairs at once.

    Parameters
    ----------
    a, b : float arrays ``(n, H, W)``, one map per example (sum the channels first), ``H, W >= 3``.

    Returns
    -------
    float64 ``(n,)`` in ``[-1, 1]``: what :func:`skimage.metrics.structural_similarity` gives each
    pair with its defaults (uniform window, sample covariance, ``K1 = 0.01``, ``K2 = 0.03``, the mean
    of the SSIM map without the window's half-width at the borders) and

    * ``data_range = max(a_i.max(), b_i.max()) - min(a_i.min(), b_i.min())``, the pair's joint range,
      so both maps are measured on one scale;
    * ``win_size`` the largest odd number ``<= min(7, H, W)`` (7 on 16 x 16 and 32 x 32 maps).

    A pair with zero joint range is one constant map twice: identical, so 1.0. The window means
    are one ``scipy.ndimage.uniform_filter`` over the whole batch (size 1 along the examples), the
    same operations as skimage's on each map: equal to its values bit for bit (pinned in the tests).
    """
    x, y = _pairs(a, b, 3, "(n, H, W)")
    height, width = x.shape[1:]
    _check_map_size("ssim", height, width)
    win = _win_size(height, width)
    data_range = np.maximum(x.max(axis=(1, 2)), y.max(axis=(1, 2))) - np.minimum(x.min(axis=(1, 2)), y.min(axis=(1, 2)))
    ux, uy, uxx, uyy, uxy = uniform_filter(np.stack([x, y, x * x, y * y, x * y]), (1, 1, win, win))
    cov_norm = win * win / (win * win - 1)
    vx, vy, vxy = cov_norm * (uxx - ux * ux), cov_norm * (uyy - uy * uy), cov_norm * (uxy - ux * uy)
    c1, c2 = ((0.01 * data_range) ** 2)[:, None, None], ((0.03 * data_range) ** 2)[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # zero joint range: 0 / 0, set to 1 below
        s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux**2 + uy**2 + c1) * (vx + vy + c2))
    pad = (win - 1) // 2
    values = s[:, pad : height - pad, pad : width - pad].mean(axis=(1, 2))
    values[data_range == 0] = 1.0
    return values


#: HOG's orientation bins and blocks (:func:`hog_descriptors`).
HOG_ORIENTATIONS, HOG_BLOCK = 9, 2


def hog_cell(height: int, width: int) -> tuple[int, int]:
    """The HOG cell of an ``H x W`` map: ``(max(2, H // 8), max(2, W // 8))`` pixels (an 8 x 8 grid on
    16 x 16 and larger maps, cells of 2 pixels on smaller ones)."""
    return max(2, height // 8), max(2, width // 8)


def hog_descriptors(maps: np.ndarray) -> np.ndarray:
    """HOG descriptors of a batch of maps, each what :func:`skimage.feature.hog` gives it.

    Parameters
    ----------
    maps : float array ``(n, H, W)``, ``H, W >= 4``.

    Returns
    -------
    float64 ``(n, d)``: 9 unsigned orientation bins, cells of :func:`hog_cell` pixels, blocks of
    2 x 2 cells normalised by L2-Hys (L2, clipped at 0.2, L2 again, ``eps = 1e-5``), flattened in
    skimage's order (block row, block column, cell row, cell column, orientation).

    Notes
    -----
    skimage 0.26 computes each map on its own, and this follows its arithmetic so the descriptors
    are the same numbers (pinned in the tests): central differences with zero borders; orientation
    ``arctan2(g_row, g_col) * (180 / pi) % 180`` and magnitude ``hypot``; a cell's bin sums the
    magnitudes of the pixels whose orientation lies in ``[20 i, 20 (i + 1))``, in row-major order
    and in single precision (its ``cdef float`` accumulator), then divides by the cell's pixel count
    in single precision; pixels beyond the last whole cell are not read.
    """
    x = np.asarray(maps, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"maps of shape {x.shape} are not (n, H, W)")
    n, height, width = x.shape
    _check_map_size("hog", height, width)
    g_row, g_col = np.zeros_like(x), np.zeros_like(x)
    g_row[:, 1:-1, :] = x[:, 2:, :] - x[:, :-2, :]
    g_col[:, :, 1:-1] = x[:, :, 2:] - x[:, :, :-2]
    magnitude = np.hypot(g_col, g_row)
    orientation = np.arctan2(g_row, g_col) * (180 / np.pi) % 180
    edges = 180.0 / HOG_ORIENTATIONS * np.arange(HOG_ORIENTATIONS + 1)  # 20 degrees apart: exact in any precision
    bins = np.searchsorted(edges, orientation, side="right") - 1  # edges[i] <= o < edges[i + 1]
    one_hot = bins[..., None] == np.arange(HOG_ORIENTATIONS)
    c_row, c_col = hog_cell(height, width)
    cells = (height // c_row, width // c_col)
    total = np.zeros((n, *cells, HOG_ORIENTATIONS), dtype=np.float32)
    for dr in range(c_row):  # a cell's pixels in row-major order
        rows = slice(dr, dr + c_row * cells[0], c_row)
        for dc in range(c_col):
            cols = slice(dc, dc + c_col * cells[1], c_col)
            term = np.where(one_hot[:, rows, cols], magnitude[:, rows, cols, None], 0.0)
            total = (total.astype(np.float64) + term).astype(np.float32)
    histogram = (total / np.float32(c_row * c_col)).astype(np.float64)  # the cell's mean, in single precision too
    blocks = np.stack(
        [
            np.stack(
                [histogram[:, r : r + HOG_BLOCK, c : c + HOG_BLOCK] for c in range(cells[1] - HOG_BLOCK + 1)], axis=1
            )
            for r in range(cells[0] - HOG_BLOCK + 1)
        ],
        axis=1,
    )  # (n, block rows, block cols, 2, 2, 9)
    eps, whole = 1e-5, (-3, -2, -1)
    out = blocks / np.sqrt(np.sum(blocks**2, axis=whole, keepdims=True) + eps**2)
    out = np.minimum(out, 0.2)
    out = out / np.sqrt(np.sum(out**2, axis=whole, keepdims=True) + eps**2)
    return out.reshape(n, -1)


def hog_spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of the HOG descriptors of each map of ``a`` and the same map of ``b``.

    Parameters
    ----------
    a, b : float arrays ``(n, H, W)``, one map per example (sum the channels first), ``H, W >= 4``.

    Returns
    -------
    float64 ``(n,)``: :func:`spearman_rows` of the descriptors (:func:`hog_descriptors`). A map
    without gradients (a constant map) has a constant descriptor, so its pair is NaN.
    """
    x, y = _pairs(a, b, 3, "(n, H, W)")
    return spearman_rows(hog_descriptors(x), hog_descriptors(y))


def similarity(
    measure: str, a: np.ndarray, b: np.ndarray, *, rng: np.random.Generator, top_k: float, input_shape: tuple[int, ...]
) -> np.ndarray:
    """One similarity ``measure`` of each pair of maps.

    Parameters
    ----------
    measure : one of :data:`IMAGE_MEASURES` for images, of :data:`TABLE_MEASURES` otherwise.

        * ``"spearman_abs"``: :func:`spearman_rows` of the flattened ``|a|`` and ``|b|``;
        * ``"spearman"``: :func:`spearman_rows` of the flattened signed maps;
        * ``"top_k"``: :func:`top_k_intersection` of the flattened maps as given, with
          ``k = max(1, round(top_k * m))`` of the ``m`` elements of an example;
        * ``"ssim"``, ``"hog"``: images only (``input_shape`` ``(C, H, W)``): the channels summed,
          then :func:`ssim_rows` or :func:`hog_spearman_rows`.
    a, b : float arrays ``(n, *input_shape)``, already preprocessed (:func:`preprocess`).
    rng : breaks the ties of ``"top_k"`` (the other measures draw nothing).
    top_k : the share of each example's elements that ``"top_k"`` compares, ``0 < top_k <= 1``.
    input_shape : the shape of one example.

    Returns
    -------
    float64 ``(n,)``, NaN where the measure is undefined for a pair.
    """
    if measure not in IMAGE_MEASURES:
        raise ValueError(f"unknown measure {measure!r}; valid: {', '.join(IMAGE_MEASURES)}")
    if not 0 < top_k <= 1:
        raise ValueError(f"top_k must satisfy 0 < top_k <= 1, got {top_k}")
    shape = tuple(input_shape)
    if measure not in TABLE_MEASURES and len(shape) != 3:
        raise ValueError(
            f"measure {measure!r} needs image maps with input_shape (C, H, W), got {shape}; "
            f"valid for this shape: {', '.join(TABLE_MEASURES)}"
        )
    x, y = _pairs(a, b, len(shape) + 1, f"(n, *{shape})")
    one = Comparison(x, absolute=False, normalise="none", top_k=top_k, input_shape=shape, measures=(measure,))
    return one.per_example(y, rng)[measure]


class Comparison:
    """One reference's maps compared with other maps by every measure of the input kind.

    The reference is prepared once (normalised, ranked, its HOG descriptors drawn), so comparing
    it with many maps (the randomisation check's model states) does that work once. Each measure
    is as :func:`similarity` defines it: the Spearman measures read the signed normalised maps
    (``spearman_abs`` their magnitude), the others ``|a|`` when ``absolute``.

    Parameters
    ----------
    reference : raw maps ``(n, *input_shape)``
    absolute, normalise : the preprocessing (:func:`preprocess`, per example)
    top_k : the share of an example's elements the top-k intersection compares, in (0, 1]
    input_shape : the shape of one example; ``(C, H, W)`` adds SSIM and HOG (:data:`IMAGE_MEASURES`)
    measures : only these measures (default: every measure of the input kind)
    """

    def __init__(
        self,
        reference: np.ndarray,
        *,
        absolute: bool,
        normalise: str,
        top_k: float,
        input_shape: tuple[int, ...],
        measures: tuple[str, ...] | None = None,
    ) -> None:
        if not 0 < top_k <= 1:
            raise ValueError(f"top_k must satisfy 0 < top_k <= 1, got {top_k}")
        self.input_shape = tuple(input_shape)
        self.measures = measures or (IMAGE_MEASURES if len(self.input_shape) == 3 else TABLE_MEASURES)
        for measure in ("ssim", "hog"):
            if measure in self.measures:
                _check_map_size(measure, *self.input_shape[1:])
        self.absolute, self.normalise, self.top_k = absolute, normalise, top_k
        self._reference = self._prepared(reference)

    def _prepared(self, maps: np.ndarray) -> dict[str, Any]:
        maps = np.asarray(maps, dtype=np.float64)
        if maps.shape[1:] != self.input_shape:
            raise ValueError(f"maps of shape {maps.shape} are not (n, *{self.input_shape})")
        signed = preprocess(maps, absolute=False, normalise=self.normalise).reshape(len(maps), -1)
        chosen = np.abs(signed) if self.absolute else signed  # the normalisations do not depend on the sign
        out: dict[str, object] = {"top_k": chosen}
        if "spearman" in self.measures:
            out["spearman"] = _ranked(signed)
        if "spearman_abs" in self.measures:
            out["spearman_abs"] = _ranked(np.abs(signed))
        summed = chosen.reshape(len(maps), *self.input_shape).sum(axis=1) if len(self.input_shape) == 3 else None
        if "ssim" in self.measures:
            out["ssim"] = summed
        if "hog" in self.measures:
            if summed is None:
                raise ValueError("hog compares images: its maps need an input shape (C, H, W)")
            out["hog"] = _ranked(hog_descriptors(summed))
        return out

    def per_example(self, other: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Each measure of the reference's and ``other``'s maps (same shape), float64 ``(n,)``, NaN where undefined."""
        mine, theirs = self._reference, self._prepared(other)
        out = {}
        for measure in self.measures:
            if measure == "top_k":
                m = mine["top_k"].shape[1]
                out[measure] = top_k_intersection(mine["top_k"], theirs["top_k"], max(1, round(self.top_k * m)), rng)
            elif measure == "ssim":
                out[measure] = ssim_rows(mine["ssim"], theirs["ssim"])
            else:
                out[measure] = _correlate(mine[measure], theirs[measure])
        return out


@dataclass(frozen=True)
class ComparisonOptions:
    """How the three sanity checks (model and data randomisation, RandomLogit) compare two sets of maps: the
    options they share as scorer fields (``--scorer-option absolute=false``), recorded in their cell ids.

    Attributes
    ----------
    absolute : compare ``|a|`` (True) or signed ``a`` in the top-k, SSIM, HOG and entropy measures
    normalise : per-example normalisation, one of :data:`NORMALISATIONS`
    top_k : the share of an example's input elements the top-k intersection compares, in (0, 1]
    """

    absolute: bool = True
    normalise: str = "none"
    top_k: float = 0.1

    def check_comparison(self) -> None:
        """ValueError for a normalisation not in :data:`NORMALISATIONS` or a ``top_k`` outside (0, 1]."""
        if self.normalise not in NORMALISATIONS:
            raise ValueError(f"normalise must be one of {', '.join(NORMALISATIONS)}, got {self.normalise!r}")
        if not 0.0 < float(self.top_k) <= 1.0:
            raise ValueError(f"top_k must be in (0, 1], got {self.top_k}")

    def comparison(
        self, reference: np.ndarray, input_shape: tuple[int, ...], measures: tuple[str, ...] | None = None
    ) -> Comparison:
        """The :class:`Comparison` of ``reference`` with these options."""
        return Comparison(
            reference,
            absolute=self.absolute,
            normalise=self.normalise,
            top_k=float(self.top_k),
            input_shape=input_shape,
            measures=measures,
        )

    def compared(
        self,
        prefix: str,
        reference: np.ndarray,
        other: np.ndarray,
        input_shape: tuple[int, ...],
        rng: np.random.Generator,
    ) -> Scores:
        """Every measure's mean similarity of ``reference`` and ``other`` as ``{f"{prefix}_{measure}": value}``, the
        measures without a finite value (constant maps) left out, with each one's value per example where the maps
        are per example (more than one row)."""
        per_example = self.comparison(reference, input_shape).per_example(other, rng)
        values = {f"{prefix}_{k}": nanmean(v) for k, v in per_example.items()}
        kept = {k: v for k, v in values.items() if np.isfinite(v)}
        rows = {f"{prefix}_{k}": v for k, v in per_example.items() if f"{prefix}_{k}" in kept and len(v) > 1}
        return Scores(kept, per_example=rows)


def similarity_metrics(prefix: str, between: str, summaries: dict[str, str]) -> dict[str, Metric]:
    """The metrics of a check that compares two maps per example by every measure, lower passing.

    One :class:`~synthbench.scoring.truth.metrics.Metric` ``{prefix}_{measure}{suffix}`` per measure and
    per ``summaries`` entry ``suffix -> phrase`` ("mean over the randomised states"); ``between``
    names the two maps ("the trained and randomised models' maps"). SSIM and HOG apply to images
    only; the chance reference is the ``random`` control.
    """
    out = {}
    for measure in IMAGE_MEASURES:
        kinds = ("tabular", "image") if measure in TABLE_MEASURES else ("image",)
        for suffix, phrase in summaries.items():
            m = Metric(
                f"{prefix}_{measure}{suffix}",
                "lower",
                f"{LABELS[measure]} of {between}, {phrase}",
                limits=LIMITS[measure],
                unit="similarity",
                kinds=kinds,
                control="random",
                variant_of=None if measure == "spearman_abs" else f"{prefix}_spearman_abs{suffix}",
            )
            out[m.name] = m
    return out
