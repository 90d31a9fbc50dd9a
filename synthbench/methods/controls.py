"""Control methods that know nothing about the label: the floor every real method must beat.

``random`` gives uniform random scores (tables: one per feature, and a map per explained row;
images: one per input element of every explained image, as a map). ``input`` is the explained input itself, and
``sobel`` an edge
detector of the image alone: maps with no model and no label that look plausible (the point of
the 2018 sanity-check paper, Adebayo et al.), which a saliency method should beat to be worth more
than its picture. Each is registered with ``control=True``: scorers that judge the explained model
measure a control on every model the grid's methods explain, so each method meets a floor
measured on its own model.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from synthbench.methods.registry import register_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput


@register_method(
    "random",
    description="control: uniform random scores from the cell's seed (images: random maps)",
    reference="control (chance)",
    inputs=("tabular", "image"),
    control=True,
)
def random_scores(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray | MethodOutput:
    """Tables: scores drawn i.i.d. U(0, 1), shape ``(p,)``, then maps ``(n_explain, p)`` drawn after them (so
    the scores are what they were before the control drew maps). Images: maps ``(n_explain, C, H, W)``
    i.i.d. U(0, 1), their mean the score."""
    if data.kind == "tabular":
        scores = rng.random(data.n_features)
        return MethodOutput(scores, rng.random(data.X_explain.shape))
    local = rng.random(data.X_explain.shape)
    return MethodOutput(local.mean(axis=0), local)


def sobel_maps(images: np.ndarray) -> np.ndarray:
    """Gradient magnitude ``sqrt(sobel_h^2 + sobel_w^2)`` of each channel of ``(n, C, H, W)`` images, same shape.

    scipy's Sobel filters with reflected borders; each channel is filtered on its own.
    """
    x = np.asarray(images, dtype=np.float64)
    return np.hypot(ndimage.sobel(x, axis=-1, mode="reflect"), ndimage.sobel(x, axis=-2, mode="reflect"))


@register_method(
    "sobel",
    description="control: Sobel edge magnitude of each explained image (no model, no label)",
    reference="control: Adebayo et al. 2018, Sanity Checks for Saliency Maps (NeurIPS); Sobel edge "
    "detector (scipy.ndimage.sobel)",
    inputs=("image",),
    control=True,
)
def sobel(data: FoldData, models: SharedModels, rng: np.random.Generator) -> MethodOutput:
    """Maps ``(n_explain, C, H, W)`` = per-channel Sobel gradient magnitude; score = their mean."""
    local = sobel_maps(data.X_explain)
    return MethodOutput(local.mean(axis=0), local)


@register_method(
    "input",
    description="control: the explained input itself as the map (the 2018 sanity-check "
    "paper's edge-detector point: a map with no model and no label)",
    reference="control: Adebayo et al. 2018, Sanity Checks for Saliency Maps (NeurIPS)",
    inputs=("tabular", "image"),
    control=True,
)
def input_maps(data: FoldData, models: SharedModels, rng: np.random.Generator) -> MethodOutput:
    """Maps ``(n_explain, *input_shape)`` = a float copy of ``data.X_explain`` (signed, as given);
    scores ``input_shape`` = the mean of their absolute values over the explained rows."""
    local = np.array(data.X_explain, dtype=np.float64)
    return MethodOutput(np.abs(local).mean(axis=0), local)
