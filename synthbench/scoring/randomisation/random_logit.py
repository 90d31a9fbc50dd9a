"""The random-logit sanity check (Sixt, Granz and Landgraf 2020): does a map depend on the explained class?

Each explained example's map for its label is compared with its map for a class drawn uniformly
from the other classes (one draw per example from the cell's seed, the same for every method), on
the fold's trained model, by every similarity measure of :mod:`~synthbench.scoring.randomisation.similarity`;
lower passes. A method that explains no model (a control, a filter) is rerun with a fresh random
stream instead: the ``random`` control then passes perfectly and the ``input`` control fails,
as for the model-randomisation check. A method that explains a model without an attribution
recipe cannot be told which class to explain: its cell is skipped with that reason.

A binary MLP has one logit (evidence for ``y = 1``); the "other class's" map is the label's map
negated (two-class view ``(-z/2, z/2)``) or nothing (``(0, z)``), so the check is degenerate there:
its cells are skipped with that reason. The ``screened_mlp_softmax`` preset has one logit per class, so the
check judges the tables' network there. Quantus 0.6's ``RandomLogit`` reseeds numpy's global
generator and, with two classes, always picks the same other class; here the draw comes from
the cell's own stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from synthbench.methods.recipe import single_logit
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.base import Abilities, Scorer, Scores, SkipCell, explained_model, register_scorer
from synthbench.scoring.randomisation.similarity import ComparisonOptions, similarity_metrics
from synthbench.scoring.reexplain import explain_again
from synthbench.scoring.truth.metrics import Metric

__all__ = ["RandomLogitScorer", "RANDOM_LOGIT", "other_classes"]


def other_classes(labels: np.ndarray, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """For each label, a class drawn uniformly from the ``n_classes - 1`` others, int64 ``(n,)``."""
    if n_classes < 2:
        raise ValueError(f"another class needs at least 2 classes, got {n_classes}")
    shift = rng.integers(1, n_classes, size=len(labels))
    return ((np.asarray(labels) + shift) % n_classes).astype(np.int64)


@dataclass(frozen=True)
class RandomLogitScorer(ComparisonOptions, Scorer):
    """Similarity of each example's map for its label and for a random other class.

    Attributes
    ----------
    name : ``"random_logit"``
    absolute, normalise, top_k : how maps are compared
        (:class:`~synthbench.scoring.randomisation.similarity.ComparisonOptions`)
    metrics : one per similarity measure
    """

    abilities: ClassVar[Abilities] = Abilities(judges_model=True, judges_parameters=True)

    name: str = "random_logit"
    metrics: Mapping[str, Metric] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.check_comparison()
        if not self.metrics:
            object.__setattr__(
                self,
                "metrics",
                similarity_metrics(
                    self.name, "the maps for the label and for a random other class", {"": "mean over the examples"}
                ),
            )

    def params_for(self, kind: str) -> dict:
        """The parameters that define the values (recorded in the cell id)."""
        return {
            "absolute": self.absolute,
            "normalise": self.normalise,
            "top_k": float(self.top_k),
            "other_class": "uniform, per example",
        }

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> Scores:
        """Each measure's mean over the explained examples; SkipCell where the class cannot be chosen."""
        explains = spec.explains(data.kind) is not None
        if explains:
            _, model = explained_model(spec, data, models)
            if single_logit(model, data):
                raise SkipCell(
                    "the binary model has one output, so the map of the other class is the label's negated: the "
                    "random-logit check is degenerate (screened_mlp_softmax has one logit per class)"
                )
            others = other_classes(data.y_explain, len(model.classes_), data.rng(self.name, "classes"))
            label = explain_again(spec, data, models, targets=np.asarray(data.y_explain))
            other = explain_again(spec, data, models, targets=others)
        else:
            label = explain_again(spec, data, models)
            other = explain_again(spec, data, models, stream=(self.name,))
        return self.compared(self.name, label, other, data.input_shape, data.rng(self.name, spec.name, "top_k"))


#: The registered instance: ``--scorer random_logit``.
RANDOM_LOGIT = register_scorer(RandomLogitScorer())
