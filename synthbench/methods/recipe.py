"""What an attribution method applies to a model: the recipe a scorer reads to explain another model.

A method registered with an :class:`AttributionRecipe` (every method of
:mod:`synthbench.methods.neural`) explains the fold's model of the kind it needs with one
function of :mod:`synthbench.attribution`. The recipe names that function and the rule choosing
the explained output; the parameters are the method's own (``spec.params_for(kind)``). A scorer
that randomises, retrains or perturbs reads the recipe to explain the same way on other models
or inputs (:meth:`AttributionRecipe.explain`, with ``create_graph=True`` for a map that can be
differentiated with respect to the inputs), or runs the whole method against a model it supplies
through :func:`synthbench.methods.run_method` ``(..., model=...)``.

Target rules (:data:`TARGET_RULES`), for a model with one logit per class (the CNN,
multi-class MLPs):

``"label"``
    each example's own label (the default);
``"prediction"``
    the class the explained model predicts for the example.

A binary MLP has one logit (evidence for ``y = 1``), and every rule explains that logit, unless its preset asks
one logit per class (``binary_logits = 2``: ``screened_mlp_softmax``), which the rules then choose from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from synthbench.attribution import ATTRIBUTION_METHODS, attribute
from synthbench.protocol import FoldData

__all__ = ["AttributionRecipe", "TARGET_RULES", "patch_mask", "explained_targets", "single_logit"]

#: The rules an :class:`AttributionRecipe` may choose its explained output by.
TARGET_RULES = ("label", "prediction")


def patch_mask(input_shape: tuple[int, ...], patch: int) -> np.ndarray:
    """Group ids of ``patch x patch`` squares of a ``(C, H, W)`` input, shared by the channels, shape ``(C, H, W)``."""
    c, h, w = input_shape
    if patch < 1:
        raise ValueError(f"patch must be positive, got {patch}")
    rows, cols = np.arange(h) // patch, np.arange(w) // patch
    ids = rows[:, None] * (-(-w // patch)) + cols[None, :]
    return np.broadcast_to(ids, (c, h, w)).copy()


def single_logit(model: Any, data: FoldData) -> bool:
    """Whether ``model`` answers a binary table with one output (a binary MLP's logit, the booster's raw score), so no
    class can be chosen to explain; a model with one logit per class (``n_outputs`` 2) has a class to choose."""
    return len(model.classes_) == 2 and data.kind == "tabular" and getattr(model, "n_outputs", 1) == 1


def explained_targets(rule: str, model: Any, data: FoldData, inputs: np.ndarray) -> np.ndarray | None:
    """The output column explained for each row of ``inputs`` under ``rule``, or None for the single logit.

    ``model`` is a trained network (``module``, ``classes_``, ``predict``); a binary model on
    tables has one logit, explained whatever the rule. ``"label"`` reads ``data.y_explain``, so
    ``inputs`` must then be the fold's explained rows (or as many rows, perturbed).
    """
    if rule not in TARGET_RULES:
        raise ValueError(f"unknown target rule {rule!r}; valid: {', '.join(TARGET_RULES)}")
    if single_logit(model, data):
        return None
    if rule == "label":
        if len(inputs) != len(data.y_explain):
            raise ValueError(
                f"target rule 'label' explains the fold's {len(data.y_explain)} explained rows, "
                f"got {len(inputs)} inputs"
            )
        return np.asarray(data.y_explain)
    return np.asarray(model.predict(inputs))


@dataclass(frozen=True)
class AttributionRecipe:
    """How a method explains a model: an attribution function and a target rule.

    Attributes
    ----------
    function : a name of :func:`synthbench.attribution.names`
    target : a rule of :data:`TARGET_RULES`
    """

    function: str
    target: str = "label"

    def __post_init__(self) -> None:
        ATTRIBUTION_METHODS[self.function]  # UnknownName for a function that is not registered
        if self.target not in TARGET_RULES:
            raise ValueError(f"unknown target rule {self.target!r}; valid: {', '.join(TARGET_RULES)}")

    def explain(
        self,
        model: Any,
        data: FoldData,
        rng: np.random.Generator,
        params: Mapping[str, Any],
        *,
        inputs: np.ndarray | torch.Tensor | None = None,
        create_graph: bool = False,
        targets: np.ndarray | None = None,
    ) -> torch.Tensor:
        """Attributions of ``model`` for ``inputs`` (default: the fold's explained rows), shape ``inputs``'.

        Parameters
        ----------
        model : a trained model of the fold's input kind (``module``, ``device``, ``classes_``, ``predict``),
            the fold's own or one a scorer supplies (randomised, retrained); a forward-only
            ``module`` (the booster's) suits the perturbation functions
        data : the fold; its input kind, shape and labels
        rng : the generator of the method's cell; a stochastic function draws its torch seed from it
        params : the method's parameters on this kind (``spec.params_for(data.kind)``);
            ``patch_grid`` becomes a ``feature_mask`` of that many square patches per side
        inputs : ``(n, *input_shape)``; a tensor that requires grad stays in the graph with
            ``create_graph`` (on the model's device)
        create_graph : keep the autograd graph (functions declaring ``create_graph`` only)
        targets : ``(n,)`` output columns to explain instead of the recipe's rule (a scorer that
            explains another class, RandomLogit); a one-logit binary model has only one

        Returns
        -------
        torch.Tensor
            Signed attributions on the model's device; detached unless ``create_graph``.
        """
        device = torch.device(model.device)
        x = data.X_explain if inputs is None else inputs
        target_rows = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        x = torch.as_tensor(x, device=device)
        params = dict(params)
        if ATTRIBUTION_METHODS[self.function].stochastic:
            params["generator"] = torch.Generator(device=device).manual_seed(int(rng.integers(2**63 - 1)))
        grid = params.pop("patch_grid", None)
        if grid is not None:
            patch = -(-max(data.input_shape[1:]) // int(grid))  # ceil: grid x grid patches cover the image
            params["feature_mask"] = torch.as_tensor(patch_mask(data.input_shape, patch), device=device)
        if targets is None:
            targets = explained_targets(self.target, model, data, target_rows)
        target = None if targets is None else torch.as_tensor(np.asarray(targets), device=device)
        return attribute(self.function, model.module, x, target, create_graph=create_graph, **params)
