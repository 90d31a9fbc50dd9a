"""Remove and retrain (ROAR) and keep and retrain (KAR), Hooker et al. 2019, as scorers.

Every training and test example of the fold is explained by the method (its per-instance maps; for tables with
``ranking="global"`` its global ranking), and its units are ranked (:mod:`~synthbench.scoring.removal.base`).
For each fraction ``t`` of the ``m`` units, ROAR replaces the ``floor(t m)`` ranked first of every example,
KAR the ``floor(t m)`` ranked last (it keeps the top ``1 - t``), with the training set's mean (per channel for
images, per feature for tables; ``fill="train_mean"``, as the 2019 paper) or, with ``fill="imputed"``, with
ROAD's imputation (:func:`~synthbench.scoring.removal.imputation.imputer`: noisy linear imputation from the
kept neighbours on images, the Gaussian conditional mean on tables, noise ``fill_noise``), so a removed glyph
leaves no mean-coloured hole of its own shape for the retrained model to read. ``t`` is the share replaced for
both, as in the 2019 paper's figures, so ``t = 0`` is the clean data for both and KAR at ``t = 0.9`` keeps
only the top 10 %. A fresh model of the kind and configuration the method explains
(:func:`~synthbench.scoring.base.explained_kind`; a method that explains none is judged on the grid's preset
of the input kind's default model) is trained on the changed training rows ``repeats`` times, replicate ``r``
seeded like the fold's own replicate ``r``, and its accuracy on the changed test rows is measured. The clean
models (the fold's replicates ``0 .. repeats-1``, shared by every method) give ``t = 0``.

The curve ``roar`` (or ``kar``), x = fraction and one column per replicate, is stored with the
cell; the value is its mean over the fractions and replicates (``roar_accuracy``: lower is
better, the removed inputs mattered; ``kar_accuracy``: higher is better, the kept inputs
suffice). The chance reference is the ``random`` control of the same run, retrained as the kind
each method explains (``random@forest`` beside ``rf``), whose random maps are
fixed per example by default (``random_masks="fixed"``); with ``random_masks="epoch"`` the
control's training rows get a fresh random mask every epoch (as some ROAR code does without
saying so: the model then sees every input of an example over the epochs, which flatters the
control), its test rows keep one; a model kind trained without epochs (the forest, on which the
control is judged beside ``rf``) has none to redraw in and sees the fixed masks.

The method's maps of every training and test row are computed once per fold and method and
shared by ROAR and KAR (:meth:`~synthbench.models.SharedModels.shared`): the scorer that runs
first carries their seconds. The retrainings of every ROAR and KAR cell of a fold task (every method,
fraction and repeat: :meth:`RetrainScorer.retraining`) train as one batch before the first of those cells is
scored (:meth:`~synthbench.models.SharedModels.prefetch`, the kind's ``train_many``), and each cell counts
its models' shares of that batch in its seconds; the clean replicates train as one batch too. Each network is
the one it would be trained alone (:func:`~synthbench.models.loop.fit_networks`; an MLP's batch is one stacked
computation, a CNN's members train one after the other under one optimiser).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from synthbench.methods.registry import MethodSpec, run_method
from synthbench.models import SharedModels, TrainRequest, model_kind
from synthbench.models.loop import unwrap
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.base import Abilities, Curve, Scorer, Scores, explained_kind, register_scorer
from synthbench.scoring.ranking import rank
from synthbench.scoring.removal.base import (
    RANKINGS,
    UNITS,
    check_fractions,
    correct,
    mask_shape,
    ranking_keys,
    removal_masks,
)
from synthbench.scoring.removal.imputation import imputer
from synthbench.scoring.truth.metrics import Metric

__all__ = ["RetrainScorer", "ROAR", "KAR", "replace_by_mean", "RANDOM_MASKS", "FILLS"]

#: How the random control's masks are drawn: once per example, or anew every training epoch.
RANDOM_MASKS = ("fixed", "epoch")
#: What replaces a removed input: the training set's mean (Hooker et al. 2019), or ROAD's imputation (Rong et al.
#: 2022).
FILLS = ("train_mean", "imputed")

#: ``(X, removed, rng) -> X`` with its ``removed`` elements replaced (float32, ``X``'s shape).
Filler = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]


def replace_by_mean(X: np.ndarray, removed: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``X`` ``(n, *input_shape)`` with its ``removed`` elements (a mask that broadcasts to ``X``) set to ``mean``.

    ``mean`` broadcasts to one example: ``(C, 1, 1)`` per channel for images, ``(p,)`` per feature.
    """
    mask = np.broadcast_to(removed, X.shape)
    return np.where(mask, np.broadcast_to(mean, X.shape), X).astype(np.float32)


@dataclass(frozen=True)
class RetrainScorer(Scorer):
    """ROAR (``keep=False``) or KAR (``keep=True``): test accuracy of models retrained without the ranked inputs.

    Attributes
    ----------
    name : ``"roar"`` or ``"kar"``
    keep : KAR replaces the bottom fraction (keeps the rest); ROAR replaces the top fraction
    fractions : each in (0, 1), increasing
    repeats : retrainings per fraction (each its own seed), at least 1
    unit, signed, ranking : as for :class:`~synthbench.scoring.removal.road.RoadScorer` (images rank each
        channel value by default, as the 2019 code does)
    random_masks : ``"fixed"`` (each example of the random control keeps its one random mask) or
        ``"epoch"`` (the control's training rows get a fresh random mask every epoch)
    fill : :data:`FILLS`: the training set's mean, or ROAD's imputation (each fraction's training and test rows
        from their own seeded stream)
    fill_noise : the imputation's noise with ``fill="imputed"`` (as :class:`~synthbench.scoring.removal.road.
        RoadScorer`'s ``noise``); recorded in the cell id only then
    """

    abilities: ClassVar[Abilities] = Abilities(judges_model=True, retrains=True)

    name: str = "roar"
    keep: bool = field(default=False, metadata={"fixed": True})
    fractions: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
    repeats: int = 5
    unit: str = "element"
    signed: bool = False
    ranking: str = "global"
    random_masks: str = "fixed"
    fill: str = "train_mean"
    fill_noise: float = 0.01
    metrics: Mapping[str, Metric] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fractions", check_fractions(self.fractions))
        if int(self.repeats) < 1 or int(self.repeats) != self.repeats:
            raise ValueError(f"repeats must be a whole number of at least 1, got {self.repeats}")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}, got {self.ranking!r}")
        if self.random_masks not in RANDOM_MASKS:
            raise ValueError(f"random_masks must be one of {', '.join(RANDOM_MASKS)}, got {self.random_masks!r}")
        if self.fill not in FILLS:
            raise ValueError(f"fill must be one of {', '.join(FILLS)}, got {self.fill!r}")
        if not self.fill_noise >= 0:
            raise ValueError(f"fill_noise must be non-negative, got {self.fill_noise}")
        if not self.metrics:
            what = (
                "the bottom fraction of inputs replaced (KAR: the top kept)"
                if self.keep
                else "the top fraction of inputs replaced (ROAR)"
            )
            metric = Metric(
                f"{self.name}_accuracy",
                "higher" if self.keep else "lower",
                f"mean test accuracy of models retrained with {what}, over the fractions and repeats",
                unit="accuracy",
                kinds=("tabular", "image"),
                control="random",
            )
            object.__setattr__(self, "metrics", {metric.name: metric})

    def params_for(self, kind: str) -> dict:
        """The parameters that define the values on ``kind`` inputs (recorded in the cell id)."""
        common = {
            "fractions": list(self.fractions),
            "repeats": int(self.repeats),
            "signed": self.signed,
            "replacement": self.fill,
            "random_masks": self.random_masks,
            **({"fill_noise": self.fill_noise} if self.fill == "imputed" else {}),
        }
        return {**common, "unit": self.unit} if kind == "image" else {**common, "ranking": self.ranking}

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> Scores:
        """The retrained accuracy curve of the method's ranking and its mean (empty when it gives none)."""
        plan = self._plan(output, data, spec, models)
        if plan is None:
            return Scores()
        kind, requests, tests = plan
        clean = models.get_many(kind, list(range(self.repeats)))
        values = [[correct(model, data.X_test, data.y_test) for model in clean]]
        retrained = iter(models.train_many_on(kind, requests))  # every fraction and repeat as one batch
        for X_test in tests:
            values.append([correct(unwrap(next(retrained)), X_test, data.y_test) for _ in range(self.repeats)])
        hits = np.array(values)  # (fractions + 1, repeats, n): whether each test row is labelled right
        curve = Curve(np.array([0.0, *self.fractions]), hits.mean(axis=2))
        per_example = hits[1:].mean(axis=(0, 1))
        metric = f"{self.name}_accuracy"
        return Scores({metric: float(per_example.mean())}, {self.name: curve}, per_example={metric: per_example})

    def retraining(
        self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels
    ) -> tuple[str, list[TrainRequest]] | None:
        """Every fraction's and repeat's retraining :meth:`score` asks for, to be trained with a task's others."""
        plan = self._plan(output, data, spec, models)
        return None if plan is None else (plan[0], plan[1])

    def _plan(
        self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels
    ) -> tuple[str, list[TrainRequest], list[np.ndarray]] | None:
        """The kind retrained, one request per fraction and repeat (in that order) and each fraction's changed test
        rows; None where the method gives no ranking. Deterministic: the same plan for every call."""
        kind = explained_kind(spec, data.kind)
        train_keys, test_keys = self._keys(output, data, spec, models)
        if train_keys is None or test_keys is None:  # both or neither
            return None
        rng = data.rng(self.name, spec.name)
        orders = rank(train_keys, rng, signed=self.signed), rank(test_keys, rng, signed=self.signed)
        fill = self._filler(data)
        redraw = self.random_masks == "epoch" and spec.name == self._control and model_kind(kind).epoch_inputs
        requests, tests = [], []
        for i, t in enumerate(self.fractions):
            changed = [
                self._changed(X, order, t, fill, data, data.rng(self.name, spec.name, "fill", i, part))
                for part, X, order in zip(("train", "test"), (data.X_train, data.X_test), orders)
            ]
            retrain = dataclasses.replace(
                data,
                X_train=changed[0],
                X_test=changed[1],
                X_explain=changed[1],
                y_explain=data.y_test,
                relevant_local=None,
            )
            tests.append(changed[1])
            for r in range(self.repeats):
                epochs = self._redrawn(data, train_keys.shape, t, fill, spec.name, i, r) if redraw else None
                requests.append(TrainRequest(retrain, r, epochs))
        return kind, requests, tests

    @property
    def _control(self) -> str | None:
        """The control method whose value is the metrics' chance (``"random"``)."""
        return next(iter(self.metrics.values())).control

    def _redrawn(
        self,
        data: FoldData,
        key_shape: tuple[int, ...],
        fraction: float,
        fill: Filler,
        method: str,
        i: int,
        replicate: int,
    ) -> Callable[[int], np.ndarray]:
        """``fn(epoch)``: the training rows with a random mask drawn for that epoch (seeded by fraction, replicate,
        epoch)."""

        def inputs(epoch: int) -> np.ndarray:
            rng = data.rng(self.name, method, "epoch", i, replicate, epoch)
            return self._changed(data.X_train, rank(rng.random(key_shape), rng), fraction, fill, data, rng)

        return inputs

    def _keys(
        self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Ranking keys of the training rows and of the test rows (a shared row each for global tables)."""
        if data.kind == "tabular" and self.ranking == "global":
            keys = ranking_keys(None, output.scores, data.kind, unit=self.unit, signed=self.signed, ranking="global")
            return keys, keys
        local = models.shared(("train_test_maps", spec.name), lambda: _train_test_maps(spec, data, models))
        keys = ranking_keys(local, None, data.kind, unit=self.unit, signed=self.signed, ranking="local")
        if keys is None:
            return None, None
        return keys[: len(data.X_train)], keys[len(data.X_train) :]

    def _filler(self, data: FoldData) -> Filler:
        """What replaces the removed elements (:attr:`fill`): the training set's mean per channel ``(C, 1, 1)`` or
        per feature ``(p,)``, or ROAD's imputation fitted to the training rows."""
        if self.fill == "imputed":
            impute = imputer(data.kind, data.X_train, noise=self.fill_noise)
            return lambda X, removed, rng: impute(X, removed, rng).astype(np.float32)
        if data.kind == "image":
            mean = data.X_train.mean(axis=(0, 2, 3), dtype=np.float64)[:, None, None]
        else:
            mean = data.X_train.mean(axis=0, dtype=np.float64)
        return lambda X, removed, rng: replace_by_mean(X, removed, mean)

    def _changed(
        self,
        X: np.ndarray,
        order: np.ndarray,
        fraction: float,
        fill: Filler,
        data: FoldData,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """``X`` with its first (ROAR) or last (KAR) ``floor(fraction m)`` ranked units replaced by ``fill`` (with
        ``rng``, which the mean does not draw from)."""
        top, bottom = removal_masks(order, fraction)
        removed = bottom if self.keep else top
        return fill(X, removed.reshape(-1, *mask_shape(data, self.unit)), rng)


def _train_test_maps(spec: MethodSpec, data: FoldData, models: SharedModels) -> np.ndarray | None:
    """The method's per-instance maps of the fold's training rows followed by its test rows (None: it draws none)."""
    rows = np.concatenate([data.X_train, data.X_test])
    both = run_method(
        spec,
        dataclasses.replace(
            data, X_explain=rows, relevant_local=None, y_explain=np.concatenate([data.y_train, data.y_test])
        ),
        models,
    )
    return both.local


#: The registered instances: ``--scorer roar`` and ``--scorer kar``.
ROAR = register_scorer(RetrainScorer())
KAR = register_scorer(RetrainScorer(name="kar", keep=True))
