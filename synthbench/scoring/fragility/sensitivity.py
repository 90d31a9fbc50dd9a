"""Explanation sensitivity to random perturbations: max- and average-sensitivity, local Lipschitz estimate.

For each example ``x`` with map ``a = Phi(x)`` and ``m`` perturbed copies ``x_j`` drawn from a
budget (uniformly from the L-infinity cube of radius ``eps``, as captum's ``sensitivity_max`` and
Quantus 0.6's ``MaxSensitivity`` / ``AvgSensitivity`` draw them, but in the budget's units: on
tables a share of each feature's standard deviation where they take one absolute radius, on
images clipped to the data's range where they do not clip), with maps ``a_j = Phi(x_j)``:

* max-sensitivity (Yeh et al. 2019) ``max_j ||a_j - a||_2 / ||a||_2``;
* average-sensitivity, the mean over ``j`` of the same ratio;
* local Lipschitz estimate (Alvarez-Melis and Jaakkola 2018) ``max_j ||a_j - a||_2 / (||x_j - x||_2 + 1e-10)``.

Norms are Frobenius norms of the whole example (all channels and pixels); maps are compared signed,
neither taken absolute nor normalised (the defaults of captum and of Quantus' sensitivity
metrics; Quantus' ``LocalLipschitzEstimate`` normalises by default and draws Gaussian noise).
Every copy counts whether or not it changed the predicted label (captum's and Quantus'
default). An example whose map is all zero has no relative sensitivity (NaN; captum divides by 1
instead, Quantus returns inf), and the scorer averages over the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["SENSITIVITY_MEASURES", "sensitivities"]

#: The measures of :func:`sensitivities`, in order.
SENSITIVITY_MEASURES = ("max_sensitivity", "avg_sensitivity", "local_lipschitz")


def sensitivities(
    x: np.ndarray, maps: np.ndarray, x_perturbed: Sequence[np.ndarray], maps_perturbed: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """Each measure of :data:`SENSITIVITY_MEASURES` per example, float64 ``(n,)``.

    Parameters
    ----------
    x, maps : ``(n, *input_shape)``, the examples and their maps
    x_perturbed, maps_perturbed : ``m`` arrays of the same shape each: the perturbed copies and
        their maps, copy ``j`` of every example in the ``j``-th array
    """
    if len(x_perturbed) != len(maps_perturbed) or not len(x_perturbed):
        raise ValueError(
            f"need as many perturbed inputs as maps, at least one; got {len(x_perturbed)} and {len(maps_perturbed)}"
        )
    n = len(x)
    a = np.asarray(maps, dtype=np.float64).reshape(n, -1)
    x = np.asarray(x, dtype=np.float64).reshape(n, -1)
    norm = np.linalg.norm(a, axis=1)
    change = np.stack(
        [np.linalg.norm(np.asarray(b, dtype=np.float64).reshape(n, -1) - a, axis=1) for b in maps_perturbed], axis=1
    )
    moved = np.stack(
        [np.linalg.norm(np.asarray(xp, dtype=np.float64).reshape(n, -1) - x, axis=1) for xp in x_perturbed], axis=1
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(norm[:, None] > 0, change / norm[:, None], np.nan)
    return {
        "max_sensitivity": relative.max(axis=1),
        "avg_sensitivity": relative.mean(axis=1),
        "local_lipschitz": (change / (moved + 1e-10)).max(axis=1),
    }
