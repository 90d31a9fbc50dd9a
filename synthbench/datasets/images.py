"""Synthetic images with ground-truth masks: the tabular benchmark's image twin.

Each image ``(C, size, size)`` holds small ``patch x patch`` glyphs from one vocabulary of shapes
(:data:`GLYPHS`), each in its own cell of a ``g x g`` layout (``g = size // (patch + 1)``) at a
random offset inside the cell, so glyphs never overlap. The label is decided by the *signal*
glyphs; ``n_decoys`` *distractor* glyphs are drawn from the same vocabulary independently of the
label. Signal and distractors differ only by a cue that carries no label information by itself:
their colour (signal in channel 0, distractors in channel 1, for ``channels >= 2``) or, in
grey-level images, their intensity (signal 1, distractors :data:`DISTRACTOR_INTENSITY`). Gaussian
pixel noise of sd ``noise`` is added everywhere. A model must find the signal and read it.

Ground truth: ``relevant_local`` marks, in every channel, the pixels of each signal glyph's
``patch x patch`` square (the glyph and its background: what the label rule reads); there is
no global truth (``relevant`` is None), since the signal moves from image to image, so no model can
be trained "on the relevant inputs only": a fold's learnability ceiling is the Bayes accuracy,
bounded from below by :func:`template_bayes` (1 to within 1e-6 at the default noise). Labels are
exactly balanced (a seeded permutation of ``0..K-1`` repeated).

Both take 4 distractor glyphs unless told otherwise.

``shapes``
    One signal glyph; its shape is the class: glyph ``y`` of :data:`GLYPHS` (``n_classes`` from
    2 to ``len(GLYPHS)``).
``shapes_xor``
    Two signal glyphs, each one of two shapes (``plus`` or ``cross``) with probability 1/2; the
    class is 1 when they differ (XOR of the two bits), so neither glyph alone carries any
    information about the label.
"""

from __future__ import annotations

import numpy as np

from synthbench.datasets.base import Dataset, register

__all__ = ["GLYPHS", "glyph", "render", "DISTRACTOR_INTENSITY", "XOR_GLYPHS", "template_bayes"]


def _plus(s: int) -> np.ndarray:
    g = np.zeros((s, s), dtype=bool)
    g[s // 2, :] = g[:, s // 2] = True
    return g


def _cross(s: int) -> np.ndarray:
    i = np.arange(s)
    g = np.zeros((s, s), dtype=bool)
    g[i, i] = g[i, s - 1 - i] = True
    return g


def _square(s: int) -> np.ndarray:
    g = np.zeros((s, s), dtype=bool)
    g[0, :] = g[-1, :] = g[:, 0] = g[:, -1] = True
    return g


def _hbar(s: int) -> np.ndarray:
    g = np.zeros((s, s), dtype=bool)
    g[s // 2 - 1 : s // 2 + 2 - (s % 2 == 0), :] = True
    return g


def _vbar(s: int) -> np.ndarray:
    return _hbar(s).T.copy()


def _disc(s: int) -> np.ndarray:
    c = (s - 1) / 2
    y, x = np.mgrid[:s, :s]
    return (y - c) ** 2 + (x - c) ** 2 <= (s / 2) ** 2 * 0.8


def _triangle(s: int) -> np.ndarray:
    y, x = np.mgrid[:s, :s]
    return np.abs(x - (s - 1) / 2) <= y / 2 + 0.25


def _corner(s: int) -> np.ndarray:
    g = np.zeros((s, s), dtype=bool)
    g[-1, :] = g[:, 0] = True
    return g


_SHAPES = {
    "plus": _plus,
    "cross": _cross,
    "square": _square,
    "hbar": _hbar,
    "vbar": _vbar,
    "disc": _disc,
    "triangle": _triangle,
    "corner": _corner,
}
GLYPHS: tuple[str, ...] = tuple(_SHAPES)
"""The vocabulary of shapes, in class order for ``shapes``."""
XOR_GLYPHS = ("plus", "cross")
"""The two shapes of the ``shapes_xor`` signal glyphs (bit 0, bit 1)."""
DISTRACTOR_INTENSITY = 0.5
"""Value of a distractor's strokes in grey-level images (the signal's is 1)."""


def glyph(name: str, patch: int) -> np.ndarray:
    """The ``patch x patch`` boolean stroke mask of shape ``name`` (one of :data:`GLYPHS`)."""
    if patch < 3:
        raise ValueError(f"patch must be at least 3 pixels, got {patch}")
    return _SHAPES[name](patch)


def _layout(size: int, patch: int) -> tuple[int, float]:
    """Cells per side ``g`` and cell width: glyphs sit one per cell, never touching."""
    g = size // (patch + 1)
    if g < 1:
        raise ValueError(f"an image of {size} pixels cannot hold a glyph of {patch}")
    return g, size / g


def render(
    glyphs: np.ndarray,
    signal: np.ndarray,
    rng: np.random.Generator,
    *,
    size: int,
    channels: int,
    patch: int,
    noise: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw images from glyph indices.

    Parameters
    ----------
    glyphs : int (n, m), indices into :data:`GLYPHS` of the ``m`` glyphs of each image
    signal : bool (m,), which of the ``m`` glyphs are signal (the rest are distractors)
    rng : positions (a random distinct cell and offset per glyph) and noise
    size, channels, patch, noise : see the module docstring

    Returns
    -------
    X : float32 (n, channels, size, size)
    mask : bool (n, channels, size, size), the squares of the signal glyphs, in every channel
    """
    n, m = glyphs.shape
    g, cell = _layout(size, patch)
    if m > g * g:
        raise ValueError(
            f"{m} glyphs do not fit a {size}x{size} image with {patch}-pixel glyphs "
            f"(at most {g * g}); use a larger size or fewer decoys"
        )
    if channels < 1:
        raise ValueError(f"channels must be positive, got {channels}")
    strokes = np.stack([glyph(name, patch) for name in GLYPHS]).astype(np.float32)  # (V, patch, patch)
    cells = np.argsort(rng.random((n, g * g)), axis=1)[:, :m]  # a distinct random cell per glyph
    slack = max(0, int(np.floor(cell)) - patch)
    offsets = rng.integers(0, slack + 1, size=(n, m, 2))
    top = (np.floor((cells // g) * cell)).astype(np.int64) + offsets[..., 0]
    left = (np.floor((cells % g) * cell)).astype(np.int64) + offsets[..., 1]
    X = np.zeros((n, channels, size, size), dtype=np.float32)
    mask = np.zeros((n, size, size), dtype=bool)
    colour = np.zeros((m, channels), dtype=np.float32)
    if channels >= 2:
        colour[signal, 0] = 1.0
        colour[~signal, 1] = 1.0
    else:
        colour[:, 0] = np.where(signal, 1.0, DISTRACTOR_INTENSITY)
    rows = np.arange(n)
    for j in range(m):
        for dy in range(patch):
            for dx in range(patch):
                value = strokes[glyphs[:, j], dy, dx]  # (n,)
                X[rows, :, top[:, j] + dy, left[:, j] + dx] += value[:, None] * colour[j]
                if signal[j]:
                    mask[rows, top[:, j] + dy, left[:, j] + dx] = True
    if noise > 0:
        X += rng.normal(0.0, noise, size=X.shape).astype(np.float32)
    return X, np.repeat(mask[:, None], channels, axis=1)


def _balanced(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(np.arange(n) % k).astype(np.int64)


def template_bayes(names: tuple[str, ...], patch: int, noise: float, misreads: int = 1) -> float:
    """A lower bound on the Bayes accuracy of telling the signal glyphs ``names`` apart under pixel noise ``noise``.

    Two glyphs whose strokes (value 1 on a 0 background) differ in ``m`` pixels are confused by the
    likelihood-ratio test with probability ``Phi(-sqrt(m) / (2 * noise))``; a union bound over the
    other glyphs of ``names``, and over the ``misreads`` signal glyphs whose misreading changes
    the label, bounds the Bayes error from above. It takes the signal's position as known (the
    colour cue shows it at any noise this module draws) and is 1 without noise.
    """
    from scipy.stats import norm

    if noise <= 0:
        return 1.0
    masks = [glyph(n, patch) for n in names]
    m = min(int((a != b).sum()) for i, a in enumerate(masks) for b in masks[i + 1 :])
    error = misreads * (len(names) - 1) * float(norm.cdf(-np.sqrt(m) / (2.0 * noise)))
    return max(0.0, 1.0 - error)


def _check(n_decoys: int, noise: float) -> None:
    if n_decoys < 0:
        raise ValueError(f"n_decoys must be >= 0, got {n_decoys}")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")


@register(
    "shapes",
    description="images: one signal glyph (colour cue) whose shape is the class, among n_decoys "
    "distractor glyphs of the same shapes; mask = the signal glyph",
    family="images",
    kind="image",
)
def shapes(
    *,
    n_samples: int,
    n_decoys: int = 4,
    seed: int,
    n_classes: int = 2,
    size: int = 32,
    channels: int = 3,
    patch: int = 5,
    noise: float = 0.1,
) -> Dataset:
    """``shapes`` (see the module docstring): ``n_classes`` in ``2..len(GLYPHS)``."""
    _check(n_decoys, noise)
    if not 2 <= n_classes <= len(GLYPHS):
        raise ValueError(f"n_classes must be in 2..{len(GLYPHS)}, got {n_classes}")
    rng = np.random.default_rng(seed)
    y = _balanced(n_samples, n_classes, rng)
    distractors = rng.integers(0, len(GLYPHS), size=(n_samples, n_decoys))
    glyphs = np.concatenate([y[:, None], distractors], axis=1)
    signal = np.array([True] + [False] * n_decoys)
    X, mask = render(glyphs, signal, rng, size=size, channels=channels, patch=patch, noise=noise)
    params = dict(n_decoys=n_decoys, n_classes=n_classes, size=size, channels=channels, patch=patch, noise=noise)
    bayes = np.full(n_samples, template_bayes(GLYPHS[:n_classes], patch, noise))
    return Dataset(X, y, None, mask, "shapes", params, seed, bayes)


@register(
    "shapes_xor",
    description="images: two signal glyphs (plus or cross each); class = whether they differ, so "
    "neither alone says anything; n_decoys distractor glyphs; mask = both signal glyphs",
    family="images",
    kind="image",
)
def shapes_xor(
    *,
    n_samples: int,
    n_decoys: int = 4,
    seed: int,
    size: int = 32,
    channels: int = 3,
    patch: int = 5,
    noise: float = 0.1,
) -> Dataset:
    """``shapes_xor`` (see the module docstring); binary."""
    _check(n_decoys, noise)
    rng = np.random.default_rng(seed)
    y = _balanced(n_samples, 2, rng)
    first = rng.integers(0, 2, size=n_samples)
    bits = np.stack([first, first ^ y], axis=1)  # (n, 2), XOR = y, each bit alone uniform
    index = np.array([GLYPHS.index(name) for name in XOR_GLYPHS])
    distractors = rng.integers(0, len(GLYPHS), size=(n_samples, n_decoys))
    glyphs = np.concatenate([index[bits], distractors], axis=1)
    signal = np.array([True, True] + [False] * n_decoys)
    X, mask = render(glyphs, signal, rng, size=size, channels=channels, patch=patch, noise=noise)
    params = dict(n_decoys=n_decoys, size=size, channels=channels, patch=patch, noise=noise)
    bayes = np.full(n_samples, template_bayes(XOR_GLYPHS, patch, noise, misreads=2))
    return Dataset(X, y, None, mask, "shapes_xor", params, seed, bayes)


@register(
    "digits",
    description="scikit-learn's bundled 8x8 handwritten digits (10 classes, 1797 images, pixels / 16); "
    "no ground truth, for remove-and-retrain",
    family="images",
    kind="image",
    decoys=False,
)
def digits(*, n_samples: int, seed: int) -> Dataset:
    """``n_samples`` (at most 1797) of scikit-learn's digits, a seeded random subset in random order,
    ``(n, 1, 8, 8)``."""
    from sklearn.datasets import load_digits

    images, target = load_digits(return_X_y=True)
    if n_samples > len(target):
        raise ValueError(f"digits has {len(target)} images; n_samples={n_samples} is too many")
    rows = np.random.default_rng(seed).permutation(len(target))[:n_samples]
    X = (images[rows] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return Dataset(X, target[rows].astype(np.int64), None, None, "digits", {}, seed)
