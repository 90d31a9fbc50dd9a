"""Control methods that know nothing about the label: the floor every real method must beat.

``random`` gives uniform random scores (tables: one per feature; images: one per input element of
every explained image, as a map). ``sobel`` is an edge detector of the image alone, with no model
and no label: a map that looks plausible, which a saliency method should beat to be worth more
than its picture.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from synthbench.methods.registry import register_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput


@register_method("random", description="control: uniform random scores from the cell's seed (images: random maps)",
                 inputs=("tabular", "image"))
def random_scores(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray | MethodOutput:
    """Tables: scores drawn i.i.d. U(0, 1), shape ``(p,)``. Images: maps ``(n_explain, C, H, W)`` i.i.d. U(0, 1)."""
    if data.kind == "tabular":
        return rng.random(data.n_features)
    local = rng.random(data.X_explain.shape)
    return MethodOutput(local.mean(axis=0), local)


def sobel_maps(images: np.ndarray) -> np.ndarray:
    """Gradient magnitude ``sqrt(sobel_h^2 + sobel_w^2)`` of each channel of ``(n, C, H, W)`` images, same shape.

    scipy's Sobel filters with reflected borders; each channel is filtered on its own.
    """
    x = np.asarray(images, dtype=np.float64)
    return np.hypot(ndimage.sobel(x, axis=-1, mode="reflect"), ndimage.sobel(x, axis=-2, mode="reflect"))


@register_method("sobel", description="control: Sobel edge magnitude of each explained image (no model, no label)",
                 inputs=("image",))
def sobel(data: FoldData, models: SharedModels, rng: np.random.Generator) -> MethodOutput:
    """Maps ``(n_explain, C, H, W)`` = per-channel Sobel gradient magnitude; score = their mean."""
    local = sobel_maps(data.X_explain)
    return MethodOutput(local.mean(axis=0), local)
