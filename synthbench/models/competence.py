"""What the data allow, and how much of it a model learned: the fold's learnability ceiling and a model's competence.

The *ceiling* of a fold is the best held-out accuracy (and that model's AUROC) reached by the
model kinds that declare ``ceiling=True`` (the forest, the booster and the network of the fold's
preset) when trained on the fold's relevant inputs only (the truth's columns), with the fold's own
training rows and seeds. It is one number per fold and preset, shared by every model kind, so a
weak kind cannot look competent against a weak ceiling of its own, and no model stands above it
beyond fold noise: the network takes part because on a ring's curved boundary it beats both trees
(the default run's screened network reached 0.96-1.00 on ring / 100 where the trees' best on the two
relevant columns was 0.92-0.97, competence up to 1.17 against a ceiling without it). The network on
a few columns costs seconds per fold, once per fold and preset with a disk cache.

Where the generator's label rule makes it computable, the fold also carries the *Bayes
accuracy* of its held-out rows (:attr:`~synthbench.protocol.FoldData.bayes_accuracy`: 1 for a
noiseless rule such as ``xor``). Data without global truth (images: a glyph's position changes
from image to image, so no input element is relevant everywhere and nothing can be trained "on
the relevant inputs only") take the Bayes accuracy as their ceiling where the generator declares
it; without either, competence is unknown and said so.

*Competence* of a fitted model is ``(accuracy - chance) / (ceiling - chance)``, ``chance`` the
held-out rate of the majority class: 0 for a model no better than always answering the majority
class, 1 for one that reaches the ceiling; 0 on a fold where not even the ceiling clears chance by
more than its noise (nothing is learnable there at this sample size). A model is *competent* when its competence is at
least the threshold (:data:`COMPETENCE_THRESHOLD` unless a run or report states another).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, roc_auc_score

from synthbench.defaults import COMPETENCE_THRESHOLD, check_threshold
from synthbench.protocol import FoldData

__all__ = [
    "Ceiling",
    "CEILING_VERSION",
    "learnability_ceiling",
    "competence",
    "competence_fields",
    "competent",
    "check_threshold",
    "COMPETENCE_THRESHOLD",
    "chance_rate",
    "held_out_quality",
    "relevant_only",
]


#: Part of the ceiling cache's key (:func:`~synthbench.models.cache.cached_ceiling`); bump it whenever a change moves
#: a ceiling, the training of a kind that takes part in it included.
CEILING_VERSION = 3

#: The least gap between the ceiling and chance for anything to be learnable on a fold (see :attr:`Ceiling.learnable`).
_MIN_GAP = 0.02


def chance_rate(y: np.ndarray) -> float:
    """The accuracy of always answering the majority class of ``y`` (0 for no rows)."""
    y = np.asarray(y)
    return float(np.bincount(y).max() / len(y)) if len(y) else 0.0


@dataclass(frozen=True)
class Ceiling:
    """The learnability ceiling of one fold.

    Attributes
    ----------
    accuracy : the best held-out accuracy on the relevant inputs only, or None without global truth
    auroc : the held-out AUROC of the model that reached ``accuracy`` (binary labels), else None
    model : the model kind that reached it, or None
    bayes_accuracy : the expected accuracy of the Bayes classifier on the held-out rows, or None
    chance : the held-out majority-class rate
    n_test : the number of held-out rows
    seconds : the time the ceiling's trainings took
    """

    accuracy: float | None
    auroc: float | None
    model: str | None
    bayes_accuracy: float | None
    chance: float
    n_test: int = 0
    seconds: float = 0.0

    @property
    def value(self) -> float | None:
        """The ceiling competence is measured against: ``accuracy``, else ``bayes_accuracy``, else None."""
        return self.accuracy if self.accuracy is not None else self.bayes_accuracy

    @property
    def learnable(self) -> bool | None:
        """Whether the ceiling clears chance by more than its noise: by two standard errors of an accuracy at chance
        on ``n_test`` rows, and by at least 0.02 (None when there is no ceiling)."""
        if self.value is None:
            return None
        noise = 2.0 * np.sqrt(self.chance * (1.0 - self.chance) / self.n_test) if self.n_test else 0.0
        return bool(self.value - self.chance >= max(_MIN_GAP, noise))


def relevant_only(data: FoldData) -> FoldData:
    """The fold restricted to its globally relevant inputs (tables: the truth's columns, in the fold's order)."""
    if data.relevant is None or data.kind != "tabular":
        raise ValueError("only a table with global truth can be restricted to its relevant columns")
    cols = np.flatnonzero(data.relevant)
    return dataclasses.replace(
        data,
        X_train=np.ascontiguousarray(data.X_train[:, cols]),
        X_test=np.ascontiguousarray(data.X_test[:, cols]),
        X_explain=np.ascontiguousarray(data.X_explain[:, cols]),
        relevant=np.ones(len(cols), dtype=bool),
        relevant_local=None if data.relevant_local is None else data.relevant_local[:, cols],
    )


def held_out_quality(model: Any, data: FoldData) -> dict[str, float]:
    """A fitted model on the fold's held-out rows: ``test_accuracy``, ``chance`` (:func:`chance_rate`) and, for
    binary labels, ``test_auroc``."""
    proba = model.predict_proba(data.X_test)
    pred = model.classes_[np.argmax(proba, axis=1)]
    out = {"test_accuracy": float(accuracy_score(data.y_test, pred)), "chance": chance_rate(data.y_test)}
    if len(model.classes_) == 2 and len(np.unique(data.y_test)) == 2:
        out["test_auroc"] = float(roc_auc_score(data.y_test, proba[:, 1]))
    return out


def learnability_ceiling(data: FoldData, trainers: Mapping[str, Callable[[FoldData], Any]]) -> Ceiling:
    """The fold's :class:`Ceiling`: each of ``trainers`` (model kind -> ``fn(data) -> model``) fitted on the
    relevant inputs only and measured on the held-out rows; the best accuracy wins (the first on ties).

    The model kinds pass the trainers (:meth:`~synthbench.models.shared.SharedModels.ceiling`:
    every kind declaring ``ceiling`` that trains on the fold's input kind, with the seed it uses
    on the full fold).
    """
    t0 = time.perf_counter()
    chance = chance_rate(data.y_test)
    best: tuple[float, float | None, str] | None = None
    if data.relevant is not None and data.kind == "tabular" and data.relevant.any():
        restricted = relevant_only(data)
        for name, train in trainers.items():
            quality = held_out_quality(train(restricted), restricted)
            if best is None or quality["test_accuracy"] > best[0]:
                best = (quality["test_accuracy"], quality.get("test_auroc"), name)
    accuracy, auroc, model = best or (None, None, None)
    return Ceiling(accuracy, auroc, model, data.bayes_accuracy, chance, len(data.y_test), time.perf_counter() - t0)


def competence(accuracy: float, ceiling: Ceiling) -> float | None:
    """``(accuracy - chance) / (ceiling - chance)``; None without a ceiling. Where the ceiling does not clear chance
    (:attr:`Ceiling.learnable`) nothing is learnable on the fold at this sample size, and every model's competence
    is 0."""
    if ceiling.learnable is None:
        return None
    if not ceiling.learnable or ceiling.value is None:  # a ceiling is learnable only with a value
        return 0.0
    return (float(accuracy) - ceiling.chance) / (ceiling.value - ceiling.chance)


def competence_fields(quality: dict[str, float], ceiling: Ceiling) -> dict[str, Any]:
    """What a model's record carries of the ceiling beside its own held-out quality (JSON-ready, None for unknown),
    with the :data:`CEILING_VERSION` it was measured by (a record without one predates the network's part in it)."""
    return {
        "chance": ceiling.chance,
        "ceiling_accuracy": ceiling.value,
        "ceiling_model": ceiling.model,
        "ceiling_auroc": ceiling.auroc,
        "bayes_accuracy": ceiling.bayes_accuracy,
        "ceiling_seconds": ceiling.seconds,
        "ceiling_version": CEILING_VERSION,
        "competence": competence(quality["test_accuracy"], ceiling),
    }


def competent(info: dict[str, Any], threshold: float = COMPETENCE_THRESHOLD) -> bool | None:
    """Whether a model record (:meth:`SharedModels.get`'s ``info``) reaches ``threshold``; None when its competence
    is unknown."""
    value = info.get("competence")
    return None if value is None else bool(value >= threshold)
