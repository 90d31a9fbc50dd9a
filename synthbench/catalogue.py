"""What a reader of results needs to know of each scorer, metric and model kind, as plain data.

A scorer (:class:`~synthbench.scoring.Scorer`) declares its metrics and :class:`Abilities`; a model
kind (:class:`~synthbench.models.shared.ModelKind`) whether a preset configures it. The store records
them with the cells (:meth:`~synthbench.runner.store.ResultStore.catalogue`), as it records datasets
and methods, so the leaderboard and the report read a store with neither torch nor the registries
imported, and a plugin scorer's cells need no plugin to be reported. This module imports nothing
beyond the standard library.

A :class:`Catalogue` answers what :func:`~synthbench.scoring.get_scorer` and
:func:`~synthbench.scoring.get_metric` answer for the live registries, from what the store says.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

__all__ = [
    "RUNG_PARAM",
    "Abilities",
    "MetricInfo",
    "ScorerInfo",
    "ModelInfo",
    "Catalogue",
    "find_metric",
    "scorer_to_json",
    "scorer_from_json",
]


#: The method parameter a ladder rung's cells record its random share under (:mod:`synthbench.methods.ladder`): reports
#: tell the rungs, whose order is known, from the methods by it.
RUNG_PARAM = "random_share"


@dataclass(frozen=True)
class Abilities:
    """What a scorer does beyond scoring, declared once per scorer class (as Quantus declares a metric's
    metadata): the grid, the choice of the model a control is judged on, and the report read it from here.

    Attributes
    ----------
    judges_model : its values measure the model each method explains (:func:`~synthbench.scoring.explained_kind`),
        so a method that explains none is judged on the input kind's default model, one cell per preset of
        the grid, and a control also on each other model kind the grid's methods explain (its chance
        must be measured on their model)
    retrains : it trains fresh models of the kind each method explains, so a grid pairing it with a
        kind that is not ``retrainable`` is refused before anything runs
    judges_parameters : its values measure how a method's maps depend on the explained model's
        parameters or outputs (MPRT, sMPRT, eMPRT, RandomLogit): a method that reads no model gives the
        same map whatever the model by construction, so reports leave it out of the verdict's ordering
    randomises_layers : it re-draws layers of the model each method explains, so a grid pairing it with
        a kind that declares no ``layers`` (the forest) is refused (or those methods left out of a
        default method list) before anything runs, and :meth:`~synthbench.scoring.Scorer.check_layers` is
        asked of every preset
    curve_axis : what its curves' x is, for reports
    report_curves : the names of the curves a report draws and tabulates at every x, in order (None:
        every curve, tabulated at the last x)
    examples_caption : the scorer stores example maps of its own (:attr:`~synthbench.scoring.Scores.examples`);
        a report draws them beside the ground truth's, captioned "its map {examples_caption}" (None: it stores none)
    judges_verdict : its values judge another scorer (its ``verdict`` option: MetaQuantus' meta-consistency), not the
        methods: reports leave it out of the verdicts set beside the truth and show it beside the verdict it judges
    model_curves : names of curves that describe the fold's model rather than the method (the same in
        every cell of a fold), which reports draw once per setting
    """

    judges_model: bool = False
    retrains: bool = False
    judges_parameters: bool = False
    randomises_layers: bool = False
    curve_axis: str = "share of inputs removed"
    report_curves: tuple[str, ...] | None = None
    examples_caption: str | None = None
    model_curves: tuple[str, ...] = ()
    judges_verdict: bool = False


@dataclass(frozen=True)
class MetricInfo:
    """What readers rely on of a metric: the declared metadata of
    :class:`~synthbench.scoring.truth.metrics.Metric` (which derives from it and adds how the ground truth's
    metrics are computed).

    Attributes
    ----------
    name : str
    direction : ``"higher"`` or ``"lower"`` (which way is better)
    description : str, one phrase (the report writes "the {description}")
    limits : ``(lowest, highest)`` the metric can take for any input; reports clip confidence intervals to it
    unit : what a value counts, for axis labels ("" when the name says it all)
    kinds : the input kinds it applies to (``"tabular"``, ``"image"``)
    control : the control method (``"random"``) whose value in the same run is the metric's chance
        reference, shown beside every method; None when there is none
    scope : for a metric computed from the truth, ``"global"`` (the truth is one set of features) or ``"local"``
        (per instance); None otherwise
    truth_based : it is computed from a method's scores and the known truth (the ground truth's metrics), so a
        scorer declaring it scores against the truth rather than giving a verdict without one
    variant_of : another metric of the same scorer that measures the same thing another way (ROAD's LeRF of its
        MoRF): a verdict's internal consistency (Tomsett et al. 2020) compares the two on each example; None
    """

    name: str
    direction: Literal["higher", "lower"]
    description: str
    _: KW_ONLY
    limits: tuple[float, float] = (0.0, 1.0)
    unit: str = ""
    kinds: tuple[str, ...] = ("tabular",)
    control: str | None = None
    scope: Literal["global", "local"] | None = None
    truth_based: bool = False
    variant_of: str | None = None

    def metadata(self) -> tuple[object, ...]:
        """What two declarations of one metric must share to be the same metric: direction, limits, unit,
        description."""
        return self.direction, tuple(self.limits), self.unit, self.description


@dataclass(frozen=True)
class ScorerInfo:
    """A scorer as a store records it: its ``name``, its ``metrics`` (name -> :class:`MetricInfo`), its
    :class:`Abilities`, and the ``plugin`` that registers it (None for synthbench's own)."""

    name: str
    metrics: Mapping[str, MetricInfo]
    abilities: Abilities = field(default_factory=Abilities)
    plugin: str | None = None


@dataclass(frozen=True)
class ModelInfo:
    """A model kind as a store records it: whether a named preset configures it (its fits are labelled
    ``mlp@sparse_mlp``), its description and the ``plugin`` that registers it (None for synthbench's own)."""

    name: str
    uses_preset: bool
    description: str = ""
    plugin: str | None = None


def find_metric(name: str, owners: Iterable[Any]) -> Any:
    """Metric ``name`` as the ``owners`` that declare it do (scorers, or anything with ``name`` and ``metrics``).

    Raises
    ------
    KeyError
        When no owner declares it, or several declare it differently (:meth:`MetricInfo.metadata`).
    """
    owners = list(owners)
    found = [o for o in owners if name in o.metrics]
    if not found:
        valid = sorted({m for o in owners for m in o.metrics})
        raise KeyError(f"unknown metric {name!r}; valid names: {', '.join(valid)}")
    if len({o.metrics[name].metadata() for o in found}) > 1:
        raise KeyError(
            f"metric {name!r} is declared differently by several scorers ({', '.join(o.name for o in found)}); name one"
        )
    return found[0].metrics[name]


@dataclass(frozen=True)
class Catalogue:
    """The scorers and model kinds a store's cells use, by name, as the store records them."""

    scorers: Mapping[str, ScorerInfo] = field(default_factory=dict)
    models: Mapping[str, ModelInfo] = field(default_factory=dict)

    def scorer(self, name: str) -> ScorerInfo:
        """The scorer ``name``; the KeyError lists the names known."""
        if name not in self.scorers:
            raise KeyError(f"unknown scorer {name!r}; the store records {', '.join(self.scorers) or 'none'}")
        return self.scorers[name]

    def metric(self, name: str, scorer: str | None = None) -> MetricInfo:
        """Metric ``name`` as ``scorer`` declares it; without ``scorer``, as the scorers that declare it do
        (KeyError as :func:`find_metric`)."""
        found: MetricInfo = find_metric(name, [self.scorer(scorer)] if scorer is not None else self.scorers.values())
        return found

    def uses_preset(self, kind: str) -> bool:
        """Whether a preset configures model kind ``kind`` (False for a kind the store does not record)."""
        return kind in self.models and self.models[kind].uses_preset


def scorer_to_json(info: ScorerInfo) -> tuple[str, str]:
    """``(metrics, abilities)``: the JSON texts the store keeps of a scorer (:func:`scorer_from_json` reads them),
    metrics in the order the scorer declares them (a report leads with the first)."""
    metrics = {
        name: {f.name: getattr(m, f.name) for f in dataclasses.fields(MetricInfo) if f.name != "name"}
        for name, m in info.metrics.items()
    }
    return json.dumps(metrics), json.dumps(dataclasses.asdict(info.abilities))  # in declaration order: the first leads


def scorer_from_json(name: str, metrics: str, abilities: str, plugin: str | None = None) -> ScorerInfo:
    """The :class:`ScorerInfo` of the texts :func:`scorer_to_json` wrote (lists read back as tuples)."""

    def known(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:  # a later version's fields are left out
        names = {f.name for f in dataclasses.fields(cls)}
        return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in names and k != "name"}

    declared = {m: MetricInfo(m, **known(MetricInfo, values)) for m, values in json.loads(metrics).items()}
    return ScorerInfo(name, declared, Abilities(**known(Abilities, json.loads(abilities))), plugin)
