"""The ROAD scorer (remove and debias, Rong et al. 2022): accuracy of the explained model as the
inputs its explanation ranks first (MoRF) or last (LeRF) are imputed, without retraining.

For each fraction ``t`` of :attr:`RoadScorer.fractions`, the ``floor(t * m)`` highest-ranked (MoRF)
or lowest-ranked (LeRF) of an explained example's ``m`` ranked units are imputed
(:mod:`~synthbench.scoring.removal.imputation`: noisy linear imputation on images, the Gaussian
conditional mean on tables), and the accuracy of the fold's model on the imputed explained
examples is measured. Units are ranked by ``|a|`` (``signed=False``) or by ``a``; ties are broken at
random with the cell's stream, so a constant map ranks like the random control.

Curves ``morf`` and ``lerf`` (x = fraction, 0 = the clean inputs) are stored with the cell; the
values are their means over the fractions (``road_morf``: lower is better, ``road_lerf``: higher
is better) and ``road_gap = road_lerf - road_morf``, ROAD's consistency of the two orders on one
cell (higher is better: the ranking separates the inputs the model uses from those it does not).
Their chance reference is the ``random`` control measured in the same run on the same model (a
control is judged on every model the grid's methods explain: ``random@forest`` beside ``rf``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.base import Abilities, Curve, Scorer, Scores, explained_model, register_scorer
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

__all__ = ["RoadScorer", "ROAD", "ROAD_METRICS"]

#: The ROAD scorer's metrics, headline (the leaderboard's default) first.
ROAD_METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric(
            "road_gap",
            "higher",
            "ROAD LeRF minus MoRF accuracy (the two orders' consistency)",
            limits=(-1.0, 1.0),
            unit="accuracy difference",
            kinds=("tabular", "image"),
            control="random",
        ),
        Metric(
            "road_morf",
            "lower",
            "mean accuracy of the explained model with the most relevant inputs imputed "
            "first (ROAD MoRF, over the fractions)",
            unit="accuracy",
            kinds=("tabular", "image"),
            control="random",
        ),
        Metric(
            "road_lerf",
            "higher",
            "mean accuracy of the explained model with the least relevant inputs "
            "imputed first (ROAD LeRF, over the fractions)",
            unit="accuracy",
            kinds=("tabular", "image"),
            control="random",
            variant_of="road_morf",
        ),
    ]
}


@dataclass(frozen=True)
class RoadScorer(Scorer):
    """Remove and debias: MoRF and LeRF accuracy curves of the explained model under imputation.

    Attributes
    ----------
    name : ``"road"``
    fractions : shares of the ranked units imputed, each in (0, 1), increasing
    noise : imputation noise (images: standard deviation added to each imputed value, 0.01 as
        the ROAD paper; tables: times each feature's training standard deviation)
    unit : images: ``"element"`` ranks each channel value on its own (each channel plane is
        imputed from its own neighbours), ``"pixel"`` ranks whole pixels by their channels' sum
        and imputes every channel of a removed pixel
    signed : rank by the signed attribution (True) or by its magnitude (False)
    ranking : tables: ``"global"`` ranks the features by the method's global scores, the same
        removed set for every row (every method returns them); ``"local"`` by each row's own
        attributions (methods without per-instance attributions then get no values)
    metrics : :data:`ROAD_METRICS`
    """

    abilities: ClassVar[Abilities] = Abilities(judges_model=True)

    name: str = "road"
    fractions: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
    noise: float = 0.01
    unit: str = "element"
    signed: bool = False
    ranking: str = "global"
    metrics: Mapping[str, Metric] = field(default_factory=lambda: dict(ROAD_METRICS))

    def __post_init__(self) -> None:
        object.__setattr__(self, "fractions", check_fractions(self.fractions))
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}, got {self.ranking!r}")
        if not self.noise >= 0:
            raise ValueError(f"noise must be non-negative, got {self.noise}")

    def params_for(self, kind: str) -> dict:
        """The parameters that define the values on ``kind`` inputs (recorded in the cell id)."""
        common = {"fractions": list(self.fractions), "noise": self.noise, "signed": self.signed}
        return {**common, "unit": self.unit} if kind == "image" else {**common, "ranking": self.ranking}

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> Scores:
        """ROAD values and curves of the method's ranking on the explained examples (empty when it has none)."""
        keys = ranking_keys(
            output.local, output.scores, data.kind, unit=self.unit, signed=self.signed, ranking=self.ranking
        )
        if keys is None:
            return Scores()
        _, model = explained_model(spec, data, models)
        X, y = data.X_explain, data.y_explain
        rng = data.rng("road", spec.name)
        order = rank(keys, rng, signed=self.signed)
        clean = correct(model, X, y)
        hits = {"morf": [clean], "lerf": [clean]}  # per fraction, whether each example is still labelled right
        impute = imputer(data.kind, data.X_train, noise=self.noise)
        for t in self.fractions:
            for name, removed in zip(("morf", "lerf"), removal_masks(order, t)):
                imputed = impute(X, removed.reshape(-1, *mask_shape(data, self.unit)), rng)
                hits[name].append(correct(model, imputed, y))
        morf, lerf = np.mean(hits["morf"][1:], axis=0), np.mean(hits["lerf"][1:], axis=0)  # (n,)
        per_example = {"road_morf": morf, "road_lerf": lerf, "road_gap": lerf - morf}
        x = np.array([0.0, *self.fractions])
        return Scores(
            {name: float(values.mean()) for name, values in per_example.items()},
            {k: Curve(x, np.mean(v, axis=1)) for k, v in hits.items()},
            per_example=per_example,
        )


#: The registered instance: ``--scorer road``.
ROAD = register_scorer(RoadScorer())
