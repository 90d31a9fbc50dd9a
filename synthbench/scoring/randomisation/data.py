"""The data-randomisation sanity check (Adebayo et al. 2018): do a method's maps change when the
labels it learnt from are permuted?

The fold's training labels are permuted (seeded by the fold, the same permutation for every
method), every model the method needs is retrained on them, and the method is rerun on the permuted fold with the
retrained models: the neural methods explain the
network trained on noise, the forest's importances and TreeSHAP read the forest grown on it,
mRMR and the embedded selectors select against the permuted labels. Each explained example's map
is compared with its map on the real labels by every similarity measure of
:mod:`~synthbench.scoring.randomisation.similarity`; lower passes. A method that gives only global scores is
compared on them (one row). The explained rows and their labels are the real ones; the explained
class follows ``target`` as in :mod:`~synthbench.scoring.randomisation.model`.

Networks are retrained "until they fit" the permuted labels: their preset's architecture and
optimiser, with no held-out rows and no early stopping, the last weights kept, for ``epochs``
epochs, then from scratch for twice as many, and so on until their training accuracy on the
permuted labels reaches ``fit`` or ``max_epochs`` were run (a small network on few features
memorises slowly). Whether they fit is measured, not assumed: ``data_randomisation_fit`` is the lowest
training accuracy on the permuted labels among the retrained models, and
``data_randomisation_held_out`` the highest accuracy on the real held-out labels (near chance
when the permutation destroyed the signal); a method that needs no model (a filter, a control,
an embedded selector training its own networks) has neither. The forest grows full trees and fits as it is.
Every retrained model is trained once per fold and shared by the fold's methods; with a disk cache, the
networks of every fold of the setting train as one batch, each round of doubling with the folds still unfit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from synthbench.methods.recipe import TARGET_RULES
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels, TrainRequest, model_kind
from synthbench.models.loop import TrainingFailed, unwrap
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.base import Abilities, Scorer, Scores, register_scorer
from synthbench.scoring.randomisation.similarity import ComparisonOptions, similarity_metrics
from synthbench.scoring.reexplain import explain_again
from synthbench.scoring.truth.metrics import Metric

__all__ = ["DataRandomisationScorer", "DATA_RANDOMISATION", "permuted_labels"]


def permuted_labels(data: FoldData) -> FoldData:
    """The fold with its training labels permuted (the fold's own stream ``("data_randomisation", "labels")``).

    The held-out and explained rows keep their real labels.
    """
    rng = data.rng("data_randomisation", "labels")
    return dataclasses.replace(data, y_train=rng.permutation(data.y_train))


def _diagnostics(name: str) -> dict[str, Metric]:
    return {
        m.name: m
        for m in [
            Metric(
                f"{name}_fit",
                "higher",
                "lowest training accuracy on the permuted labels among the retrained models "
                "(the check is valid when they fit)",
                unit="accuracy",
                kinds=("tabular", "image"),
            ),
            Metric(
                f"{name}_held_out",
                "lower",
                "highest held-out accuracy (real labels) among the models retrained on "
                "permuted labels (near chance when the signal is gone)",
                unit="accuracy",
                kinds=("tabular", "image"),
            ),
        ]
    }


@dataclass(frozen=True)
class DataRandomisationScorer(ComparisonOptions, Scorer):
    """Similarity of each example's map before and after every model is retrained on permuted labels.

    Attributes
    ----------
    name : ``"data_randomisation"``
    epochs : epochs of a network's first training on the permuted labels (no early stopping,
        last weights); doubled, from scratch, until it fits
    fit : the training accuracy on the permuted labels at which a network fits
    max_epochs : the most epochs of one training (the last try runs exactly these)
    target : the explained class, a rule of :data:`~synthbench.methods.recipe.TARGET_RULES`
    absolute, normalise, top_k : how maps are compared
        (:class:`~synthbench.scoring.randomisation.similarity.ComparisonOptions`)
    metrics : one per similarity measure, and the two fit diagnostics
    """

    abilities: ClassVar[Abilities] = Abilities(judges_model=True, retrains=True)

    name: str = "data_randomisation"
    epochs: int = 300
    fit: float = 0.95
    max_epochs: int = 2400
    target: str = "label"
    metrics: Mapping[str, Metric] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if int(self.epochs) != self.epochs or self.epochs < 1 or int(self.max_epochs) != self.max_epochs:
            raise ValueError(f"epochs and max_epochs must be whole numbers >= 1, got {self.epochs}, {self.max_epochs}")
        if self.max_epochs < self.epochs:
            raise ValueError(f"max_epochs ({self.max_epochs}) must be at least epochs ({self.epochs})")
        if not 0.0 < float(self.fit) <= 1.0:
            raise ValueError(f"fit must be in (0, 1], got {self.fit}")
        if self.target not in TARGET_RULES:
            raise ValueError(f"target must be one of {', '.join(TARGET_RULES)}, got {self.target!r}")
        self.check_comparison()
        if not self.metrics:
            metrics = similarity_metrics(
                self.name, "the maps before and after the labels were permuted", {"": "mean over the examples"}
            )
            object.__setattr__(self, "metrics", {**metrics, **_diagnostics(self.name)})

    def params_for(self, kind: str) -> dict:
        """The parameters that define the values (recorded in the cell id)."""
        return {
            "epochs": int(self.epochs),
            "fit": float(self.fit),
            "max_epochs": int(self.max_epochs),
            "target": self.target,
            "absolute": self.absolute,
            "normalise": self.normalise,
            "top_k": float(self.top_k),
            "labels": "permuted per fold",
            "training": "no early stopping, last weights",
        }

    def retrained(self, data: FoldData, models: SharedModels, kind: str) -> Any:
        """The fold's model of ``kind`` retrained on :func:`permuted_labels` until it fits, once per fold (shared),
        trained with those of every fold of the setting as one batch
        (:meth:`~synthbench.models.SharedModels.across_setting`)."""
        tag = (self.name, int(self.epochs), float(self.fit), int(self.max_epochs))
        model, _ = models.shared(
            (*tag, kind),
            lambda: models.across_setting(
                kind, tag, lambda folds: self._fitted([permuted_labels(f) for f in folds], models, kind)
            ),
        )
        return unwrap(model)

    def _fitted(self, permuted: Sequence[FoldData], models: SharedModels, kind: str) -> list[tuple[Any, float]]:
        """A model of ``kind`` trained on each of ``permuted`` (or its ``TrainingFailed``) and the seconds it took:
        networks with epochs doubled until they fit, every fold's network that does not fit yet retrained from the
        start with the others of its round as one batch."""
        if not model_kind(kind).training:  # trains as it does (the forest grows full trees)
            out = []
            for fold in permuted:
                t0 = time.perf_counter()
                out.append((models.train_on(kind, fold), time.perf_counter() - t0))
            return out
        done: list[tuple[Any, float]] = [(None, 0.0)] * len(permuted)
        todo, epochs = list(range(len(permuted))), int(self.epochs)
        while todo:
            training = {"validation": "none", "restore": "last", "max_epochs": epochs}
            trained = models.train_many_on(kind, [TrainRequest(permuted[i]) for i in todo], training)
            unfit = []
            for i, model in zip(todo, trained, strict=True):
                seconds = done[i][1] + float(getattr(model, "train_seconds", 0.0))
                done[i] = (model, seconds)
                last = isinstance(model, TrainingFailed) or epochs >= self.max_epochs
                if not last and np.mean(model.predict(permuted[i].X_train) == permuted[i].y_train) < self.fit:
                    unfit.append(i)
            todo, epochs = unfit, min(2 * epochs, int(self.max_epochs))
        return done

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> Scores:
        """Each measure's mean over the explained examples, with the retrained models' fit."""
        permuted = permuted_labels(data)
        view, fit, held_out = models, [], []
        for kind in dict.fromkeys(spec.needs_for(data.kind)):
            model = self.retrained(data, models, kind)
            view = view.with_model(kind, model)
            fit.append(float(np.mean(model.predict(data.X_train) == permuted.y_train)))
            held_out.append(float(np.mean(model.predict(data.X_test) == data.y_test)))
        before = explain_again(spec, data, models, target=self.target)
        after = explain_again(spec, permuted, view, target=self.target, stream=(self.name,))
        out = self.compared(self.name, before, after, data.input_shape, data.rng(self.name, spec.name, "top_k"))
        if fit:
            out.update({f"{self.name}_fit": min(fit), f"{self.name}_held_out": max(held_out)})
        return out


#: The registered instance: ``--scorer data_randomisation``.
DATA_RANDOMISATION = register_scorer(DataRandomisationScorer())
