"""Label-preserving attacks on explanations (Ghorbani, Abid and Zou 2019), batched over examples.

An attack looks for a perturbation inside a :class:`~synthbench.scoring.fragility.budget.Budget` that
changes an example's explanation as much as an objective asks while the explained model keeps
its predicted label. All examples of a batch move together: one forward/backward pass per
iteration. Objectives read a map's *relevance* (:func:`relevance`: ``|a|``, summed over the
channels of an image, divided by its total, so a map is a distribution over the input's
elements or pixels) and return one value per example, higher = further from the original:

``"topk"``      (:func:`top_k_objective`) minus the relevance left on the original map's top-k;
``"center"``    (:func:`center_objective`, images) the distance in pixels between the relevance's
                centre of mass and the original one;
``"targeted"``, ``"truth"`` (:func:`region_objective`) the relevance on a region: for
                ``targeted`` a region drawn per example, for ``truth`` every element outside the
                example's ground truth (decoys, distractor pixels).

Searches:

* :func:`gradient_attack`: iterative ascent along the sign (linf) or direction (l2) of the
  objective's gradient, taken through a differentiable map of the inputs (the method on a smooth
  surrogate of the network); each iterate is evaluated on the original network and explained
  there, and per example the best iterate that keeps the predicted label is kept.
* :func:`random_search`: a black-box search for methods with no gradient: per step, each example
  proposes a random move of half the radius from its best point and keeps it when the label
  stays and the objective rises.
* :func:`random_perturbation`: the baseline, one random point on the budget's boundary (random
  signs), kept where the label stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from synthbench.scoring.fragility.budget import Budget

__all__ = [
    "Objective",
    "AttackResult",
    "relevance",
    "top_k_objective",
    "center_objective",
    "region_objective",
    "center_of_mass",
    "gradient_attack",
    "random_search",
    "random_perturbation",
]

#: maps ``(n, *input_shape)`` -> ``(n,)``, higher = further from the original explanation.
Objective = Callable[[torch.Tensor], torch.Tensor]


def relevance(maps: torch.Tensor) -> torch.Tensor:
    """Each map as a distribution over its elements, ``(n, d)``: ``|a|`` (images: summed over the
    channels, ``d = H * W``) divided by its total (an all-zero map stays zero)."""
    a = maps.abs()
    if a.dim() == 4:
        a = a.sum(dim=1)
    a = a.flatten(1)
    return a / a.sum(dim=1, keepdim=True).clamp_min(1e-30)


def top_k_objective(top: torch.Tensor) -> Objective:
    """Minus the relevance on ``top``, a bool ``(n, d)`` mask of each original map's top-k elements."""
    return lambda maps: -(relevance(maps) * top.to(maps.dtype)).sum(dim=1)


def region_objective(region: torch.Tensor) -> Objective:
    """The relevance on ``region``, a bool ``(n, d)`` mask per example (``d`` as :func:`relevance`)."""
    return lambda maps: (relevance(maps) * region.to(maps.dtype)).sum(dim=1)


def center_of_mass(maps: torch.Tensor) -> torch.Tensor:
    """The relevance's centre of mass ``(n, 2)`` (row, column) in pixels of image maps ``(n, C, H, W)``."""
    h, w = maps.shape[-2:]
    p = relevance(maps).view(-1, h, w)
    rows = torch.arange(h, dtype=p.dtype, device=p.device)
    cols = torch.arange(w, dtype=p.dtype, device=p.device)
    return torch.stack([(p.sum(dim=2) * rows).sum(dim=1), (p.sum(dim=1) * cols).sum(dim=1)], dim=1)


def center_objective(center: torch.Tensor) -> Objective:
    """The distance in pixels from ``center`` ``(n, 2)``, the original maps' :func:`center_of_mass`."""
    return lambda maps: (center_of_mass(maps) - center.to(maps.dtype)).square().sum(dim=1).add(1e-12).sqrt()


@dataclass
class AttackResult:
    """What an attack kept per example.

    Attributes
    ----------
    inputs : float32 ``(n, *input_shape)``, the kept perturbed inputs (the original where nothing was kept)
    maps : float64 ``(n, *input_shape)``, the method's maps of ``inputs`` on the original network
    kept : bool ``(n,)``, a label-preserving perturbation was kept
    """

    inputs: np.ndarray
    maps: np.ndarray
    kept: np.ndarray


#: ``explain(inputs) -> maps`` on the original network: float32 ``(n, *shape)`` -> float64 ``(n, *shape)``.
Explain = Callable[[np.ndarray], np.ndarray]
#: ``predict(inputs) -> labels`` ``(n,)`` of the original network.
Predict = Callable[[np.ndarray], np.ndarray]


class _Best:
    """Per example, the best label-preserving point seen so far and its map and objective."""

    def __init__(self, x0: np.ndarray, maps0: np.ndarray, objective: Objective | None) -> None:
        self.x, self.maps = x0.copy(), maps0.copy()
        self.objective = objective
        self.value = np.zeros(len(x0)) if objective is None else _value(objective, maps0)  # unread without one
        self.kept = np.zeros(len(x0), dtype=bool)

    def offer(self, x: np.ndarray, maps: np.ndarray, ok: np.ndarray) -> None:
        take = ok.copy()
        if self.objective is not None:
            value = _value(self.objective, maps)
            take &= value > self.value
            self.value[take] = value[take]
        self.x[take], self.maps[take] = x[take], maps[take]
        self.kept |= take

    def result(self) -> AttackResult:
        return AttackResult(self.x, self.maps, self.kept)


def _value(objective: Objective, maps: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return objective(torch.as_tensor(maps)).cpu().numpy()


def gradient_attack(
    objective: Objective,
    budget: Budget,
    x0: np.ndarray,
    maps0: np.ndarray,
    labels: np.ndarray,
    *,
    surrogate: Callable[[torch.Tensor], torch.Tensor],
    explain: Explain,
    predict: Predict,
    iterations: int,
    step: float,
    device: torch.device | str = "cpu",
) -> AttackResult:
    """Iterative gradient ascent of ``objective`` inside ``budget``, keeping per example the best iterate
    whose predicted label is still ``labels``.

    Parameters
    ----------
    objective : see :data:`Objective`
    budget : the allowed perturbations
    x0 : float32 ``(n, *input_shape)``, the explained inputs; ``maps0`` their maps on the original network
    labels : ``(n,)``, the original network's predicted labels of ``x0``
    surrogate : differentiable maps of inputs that require grad (the method on a smooth surrogate)
    explain, predict : the method's maps and the labels on the original network
    iterations : ascent steps
    step : each step's length in ``z`` units (:meth:`Budget.step`)
    device : where the inputs of ``surrogate`` live
    """
    best = _Best(x0, maps0, objective)
    start = torch.as_tensor(x0, device=device)
    x = start.clone()
    for _ in range(int(iterations)):
        point = x.clone().requires_grad_(True)
        gain = objective(surrogate(point)).sum()
        (grad,) = torch.autograd.grad(gain, point)
        x = budget.project(start, x + budget.step(grad, step))
        candidate = x.cpu().numpy()
        best.offer(candidate, explain(candidate), predict(candidate) == labels)
    return best.result()


def random_search(
    objective: Objective,
    budget: Budget,
    x0: np.ndarray,
    maps0: np.ndarray,
    labels: np.ndarray,
    *,
    explain: Explain,
    predict: Predict,
    steps: int,
    rng: np.random.Generator,
) -> AttackResult:
    """Black-box search: per step, a random move of half the radius from each example's best point
    (:meth:`Budget.corner`), kept where the label stays and ``objective`` rises."""
    best = _Best(x0, maps0, objective)
    start = torch.as_tensor(x0)
    for _ in range(int(steps)):
        moved = budget.corner(torch.as_tensor(best.x), rng, radius=budget.eps / 2)
        candidate = budget.project(start, moved).numpy()
        best.offer(candidate, explain(candidate), predict(candidate) == labels)
    return best.result()


def random_perturbation(
    budget: Budget,
    x0: np.ndarray,
    maps0: np.ndarray,
    labels: np.ndarray,
    *,
    explain: Explain,
    predict: Predict,
    rng: np.random.Generator,
) -> AttackResult:
    """The baseline: one random point on the budget's boundary per example, kept where the label stays."""
    best = _Best(x0, maps0, None)
    candidate = budget.corner(torch.as_tensor(x0), rng).numpy()
    best.offer(candidate, explain(candidate), predict(candidate) == labels)
    return best.result()
