"""Control methods that know nothing: the floor every real method must beat."""

from __future__ import annotations

import numpy as np

from synthbench.protocol import FoldData
from synthbench.methods.registry import register_method
from synthbench.models import SharedModels


@register_method("random", description="control: uniform random scores from the cell's seed")
def random_scores(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray:
    """Scores drawn i.i.d. U(0, 1), shape ``(p,)``."""
    return rng.random(data.n_features)
