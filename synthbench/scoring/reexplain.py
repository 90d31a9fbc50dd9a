"""Explain again: a method's maps on a model, inputs, stream or class a scorer chooses.

The sanity checks compare a method's explanation of the fold's trained model with its
explanation of something else: a randomised copy of the model, the same model for another
class, the same inputs with noise; fragility explains perturbed inputs, and differentiates the
maps of a smooth surrogate. :func:`explain_again` is the one verb every scorer reruns a method
with, through the seam of :mod:`synthbench.methods` (a method's
:class:`~synthbench.methods.recipe.AttributionRecipe`, or :func:`~synthbench.methods.run_method`
with a substitute model), drawing from the method's one stream rule
(:func:`~synthbench.methods.method_rng`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, overload

import numpy as np
import torch

from synthbench.attribution import ATTRIBUTION_METHODS
from synthbench.methods.registry import MethodSpec, method_rng, run_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData
from synthbench.scoring.base import SkipCell

__all__ = ["explain_again"]


@overload
def explain_again(
    spec: MethodSpec,
    data: FoldData,
    models: SharedModels,
    *,
    model: Any = None,
    stream: tuple[int | str, ...] = (),
    target: str | None = None,
    targets: np.ndarray | None = None,
    inputs: torch.Tensor | None = None,
    differentiable: Literal[False] = False,
) -> np.ndarray: ...


@overload
def explain_again(
    spec: MethodSpec,
    data: FoldData,
    models: SharedModels,
    *,
    model: Any = None,
    stream: tuple[int | str, ...] = (),
    target: str | None = None,
    targets: np.ndarray | None = None,
    inputs: torch.Tensor | None = None,
    differentiable: Literal[True],
) -> torch.Tensor: ...


def explain_again(
    spec: MethodSpec,
    data: FoldData,
    models: SharedModels,
    *,
    model: Any = None,
    stream: tuple[int | str, ...] = (),
    target: str | None = None,
    targets: np.ndarray | None = None,
    inputs: torch.Tensor | None = None,
    differentiable: bool = False,
) -> np.ndarray | torch.Tensor:
    """The method's maps of ``data.X_explain``, float64 ``(n, *input_shape)``, or ``(1, *input_shape)``
    holding its global scores when it draws no maps (tables: filters, the ``random`` control); with
    ``differentiable``, the maps of ``inputs`` as a tensor in the autograd graph.

    Parameters
    ----------
    spec : the method
    data : the fold, or the fold with other explained rows (``X_explain``, ``y_explain``)
    models : the fold's models
    model : replaces the model the method explains (None: the fold's own); ignored for a method
        that explains no model, whose output cannot depend on it
    stream : the method's random stream (:func:`~synthbench.methods.method_rng`); ``()`` is its
        cell's, so the fold's own model and rows give the cell's output
    target : a target rule (``"label"``, ``"prediction"``) replacing the method's own
    targets : ``(n,)`` explained output columns replacing any rule
    inputs, differentiable : with ``differentiable``, explain the tensor ``inputs`` ``(n, *input_shape)``
        (requiring grad, on the model's device) and return the maps still in the graph, so an attack
        can differentiate them (a method whose attribution function keeps a graph only:
        ``create_graph`` in :data:`~synthbench.attribution.ATTRIBUTION_METHODS`)

    Raises
    ------
    SkipCell
        When a target or class is asked of a method that explains a model without an attribution
        recipe (it chooses its explained output itself).
    ValueError
        For ``differentiable`` maps of a method whose maps are not differentiable in its inputs, and for
        ``inputs`` to a method without an attribution recipe (give it other rows as ``data.X_explain``).
    """
    explains = spec.explains(data.kind)
    recipe = spec.recipe
    if differentiable and (recipe is None or not ATTRIBUTION_METHODS[recipe.function].create_graph or inputs is None):
        raise ValueError(f"{spec.name}'s maps are not differentiable in its inputs (or no inputs were given)")
    if inputs is not None and recipe is None:
        raise ValueError(f"{spec.name} has no attribution recipe: give it other rows as data.X_explain, not inputs")
    if recipe is not None:
        if target is not None:
            recipe = dataclasses.replace(recipe, target=target)
        if model is not None:
            network = model
        elif explains is not None:
            network = models.get(explains)
        else:
            raise ValueError(f"{spec.name} has an attribution recipe but explains no model on {data.kind} inputs")
        maps = recipe.explain(
            network,
            data,
            method_rng(spec, data, stream),
            spec.params_for(data.kind),
            inputs=inputs,
            create_graph=differentiable,
            targets=targets,
        )
        return maps if differentiable else maps.detach().cpu().numpy().astype(np.float64)
    if explains is not None and (targets is not None or target not in (None, "label")):
        raise SkipCell(
            f"{spec.name} explains the {explains} without an attribution recipe, so the explained class "
            "cannot be chosen for it"
        )
    out = run_method(spec, data, models, model=model if explains is not None else None, stream=stream)
    if out.local is not None:
        return out.local
    if out.scores is None:
        raise ValueError(f"{spec.name} returned neither scores nor maps")
    return out.scores[None]
