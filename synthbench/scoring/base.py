"""The scorer base class, its declared abilities, and the one registry of scorers.

A scorer turns a method's output on one fold into named metric values. It sits above methods
and models: it receives the method's :class:`~synthbench.methods.registry.MethodSpec` and the
fold's :class:`~synthbench.models.SharedModels`, so it may rerun the method on other inputs or
on a randomised model, and may train models (remove-and-retrain). Each scorer declares its
metrics, with their metadata, as :class:`~synthbench.scoring.truth.metrics.Metric` objects; the
leaderboard and the report read them through the scorer (:func:`get_metric`), and what it does beyond
scoring (judging the explained model, retraining, re-drawing layers, its curves) as :class:`Abilities`.
"""

from __future__ import annotations

from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from synthbench.kinds import get_kind
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput
from synthbench.registry import Registry
from synthbench.scoring.truth.metrics import Metric

__all__ = ["Scorer", "Abilities", "Scores", "Curve", "SkipCell", "SCORERS", "register_scorer", "get_scorer",
           "scorer_names", "get_metric", "configure_scorer", "scorer_options", "explained_kind",
           "explained_model"]


class SkipCell(Exception):
    """A scorer cannot judge this method on this fold (a method it cannot rerun on a substitute
    model, a class it cannot choose): the runner records the cell as ``skipped`` with the message,
    which says why."""


@dataclass(frozen=True)
class Curve:
    """One curve a scorer measured on a cell: ``values[i, r]`` at ``x[i]`` for replicate ``r``.

    ``x`` is ``(m,)`` float (for example the fraction of inputs removed, 0 for the clean model);
    ``values`` is ``(m, R)`` float, one column per replicate (R = 1 for a curve measured once).
    """

    x: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        x, v = np.asarray(self.x, dtype=np.float64), np.asarray(self.values, dtype=np.float64)
        v = v.reshape(len(x), -1) if v.ndim == 1 else v
        if x.ndim != 1 or v.ndim != 2 or v.shape[0] != x.shape[0]:
            raise ValueError(f"a curve needs x (m,) and values (m, R); got {x.shape} and {np.shape(self.values)}")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "values", v)


class Scores(dict):
    """A scorer's metric values for one cell (a ``dict`` name -> float), with the curves behind them.

    ``curves`` maps a curve's name (``"morf"``, ``"roar"``, ...) to its :class:`Curve`; the runner
    stores them beside the values, so a report can draw them and a resumed run recomputes nothing.
    ``examples``: image maps ``(m, C, H, W)`` the scorer made of the fold's first explained images
    (fragility: after an attack), which the runner stores as the cell's example maps in place of
    the method's own. A scorer that measures no curve may return a plain ``dict``.
    """

    def __init__(self, values: Mapping[str, float] = (), curves: Mapping[str, Curve] | None = None,
                 examples: np.ndarray | None = None) -> None:
        super().__init__(values)
        self.curves: dict[str, Curve] = dict(curves or {})
        self.examples = examples




def explained_kind(spec: MethodSpec, kind: str) -> str:
    """The model kind ``spec`` explains (or is judged on) on ``kind`` inputs, else the input kind's default model.

    A method that needs exactly one model on this input kind explains it (``gradient`` the MLP or
    CNN, ``treeshap`` the forest); a method that needs none (``random``, ``sobel``, ``mrmr``) or
    several is judged on the model its spec names for the kind (``spec.judged``, set by
    :meth:`~synthbench.methods.registry.MethodSpec.judged_on`: a control judged on the forest) or
    else on the input kind's default model (:attr:`~synthbench.kinds.InputKind.default_model`), shared with every
    other method.
    """
    return spec.explains(kind) or spec.judged.get(kind) or get_kind(kind).default_model


def explained_model(spec: MethodSpec, data: FoldData, models: SharedModels) -> tuple[str, Any]:
    """``(kind, model)``: the fold's model of :func:`explained_kind`."""
    kind = explained_kind(spec, data.kind)
    return kind, models.get(kind)


@dataclass(frozen=True)
class Abilities:
    """What a scorer does beyond scoring, declared once per scorer class (as Quantus declares a metric's
    metadata): the grid, the choice of the model a control is judged on, and the report read it from here.

    Attributes
    ----------
    judges_model : its values measure the model each method explains (:func:`explained_kind`), so a
        method that explains none is judged on the input kind's default model, one cell per preset of
        the grid, and a control also on each other model kind the grid's methods explain (its chance
        must be measured on their model)
    retrains : it trains fresh models of the kind each method explains, so a grid pairing it with a
        kind that is not ``retrainable`` is refused before anything runs
    judges_parameters : its values measure how a method's maps depend on the explained model's
        parameters or outputs (MPRT, sMPRT, eMPRT, RandomLogit): a method that reads no model gives the
        same map whatever the model by construction, so reports leave it out of the verdict's ordering
    randomises_layers : it re-draws layers of the model each method explains, so a grid pairing it with
        a kind that declares no ``layers`` (the forest) is refused (or those methods left out of a
        default method list) before anything runs, and :meth:`Scorer.check_layers` is asked of
        every preset
    curve_axis : what its curves' x is, for reports
    report_curves : the names of the curves a report draws and tabulates at every x, in order (None:
        every curve, tabulated at the last x)
    examples_caption : the scorer stores example maps of its own (:attr:`Scores.examples`); a report
        draws them beside the ground truth's, captioned "its map {examples_caption}" (None: it stores none)
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


class Scorer:
    """What every scorer is: the class a scorer derives from (the registry takes nothing else).

    A scorer sets ``name`` (the name cells and the CLI use, ``--scorer``) and ``metrics`` (name ->
    :class:`Metric`, every metric it may report, with its truth-based parts when it has them) and
    implements :meth:`score`. It may override what is declared here with its defaults:
    :attr:`abilities`, :meth:`chance`, :meth:`params_for`, :meth:`check_kind` and :meth:`check_layers`.
    Options are the fields of a dataclass scorer (:func:`scorer_options`).
    """

    name: str
    metrics: Mapping[str, Metric]
    #: What it does beyond scoring (nothing, by default).
    abilities: ClassVar[Abilities] = Abilities()

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> dict[str, float]:
        """Metric values for the method ``spec`` on one fold; random draws come from ``data.rng(...)``.

        A :class:`Scores` carries the curves measured on the way (stored with the cell).
        """
        raise NotImplementedError

    def chance(self, data: FoldData) -> dict[str, float]:
        """Each metric's value for a uniformly random ranking on this fold, for those that have one (default: none;
        a metric's ``control`` method, measured in the same run, then stands beside each method)."""
        return {}

    def params_for(self, kind: str) -> dict:
        """Parameters that define the scorer's values on ``kind`` inputs; they enter the cell id (default ``{}``:
        none)."""
        return {}

    def check_kind(self, kind: str) -> None:
        """ValueError for settings that ``kind`` inputs cannot take (fragility's centre-of-mass attack on tables);
        the grid asks it of each input kind it holds before anything runs. Default: every kind is fine."""

    def check_layers(self, n_layers: int, what: str) -> None:
        """A scorer that ``randomises_layers``: ValueError for layers a network of ``n_layers`` (``what``) does not
        have; the grid asks it of every preset before anything runs. Default: any network is fine."""


#: Every registered scorer, by name, in registration order.
SCORERS: Registry[Scorer] = Registry("scorer")


def register_scorer(scorer: Scorer) -> Scorer:
    """Add ``scorer`` to the registry under its ``name`` (ValueError when the name is taken, TypeError for an object
    that does not derive from :class:`Scorer`)."""
    if not isinstance(scorer, Scorer):
        raise TypeError(f"a scorer derives from synthbench.scoring.Scorer (its abilities and defaults); "
                        f"{type(scorer).__name__} does not")
    return SCORERS.add(scorer.name, scorer)


def scorer_names() -> list[str]:
    """Names of the registered scorers, in registration order."""
    return SCORERS.names()


def get_scorer(name: str) -> Scorer:
    """The scorer registered as ``name``; the KeyError lists the valid names."""
    return SCORERS[name]


def scorer_options(name: str) -> list[str]:
    """The options ``name`` takes: the fields of a dataclass scorer, less its name, its metrics and
    the fields marked ``metadata={"fixed": True}`` (what makes it the scorer it is, such as KAR's ``keep``).

    A scorer records every option in :meth:`Scorer.params_for` (so in the cell id) for the input
    kinds it affects.
    """
    scorer = get_scorer(name)
    if not dataclasses.is_dataclass(scorer):
        return []
    return [f.name for f in dataclasses.fields(scorer)
            if f.name not in ("name", "metrics") and not f.metadata.get("fixed")]


def configure_scorer(name: str, options: Mapping[str, Any] | tuple[tuple[str, Any], ...] = ()) -> Scorer:
    """The registered scorer ``name`` with ``options`` changed (``{"repeats": 3}``); itself without options.

    Raises
    ------
    ValueError
        For an option the scorer does not take, or a value it refuses (its own check).
    """
    scorer = get_scorer(name)
    options = dict(options)
    if not options:
        return scorer
    valid = scorer_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"scorer {name!r} has no option {', '.join(map(repr, unknown))}; "
                         f"its options: {', '.join(valid) or 'none'}")
    try:
        return dataclasses.replace(scorer, **options)
    except (ValueError, TypeError) as exc:  # the scorer's own check, which may not say what it was given
        alone = [k for k in options if _refuses(scorer, k, options[k])] or list(options)
        given = ", ".join(f"{k}={options[k]!r}" for k in alone)
        raise ValueError(f"scorer {name!r} refuses {given}: {exc}") from None


def _refuses(scorer: Scorer, option: str, value: Any) -> bool:
    """Whether ``scorer`` refuses ``option=value`` on its own."""
    try:
        dataclasses.replace(scorer, **{option: value})
    except (ValueError, TypeError):
        return True
    return False


def get_metric(name: str, scorer: str | None = None) -> Metric:
    """Metric ``name`` as ``scorer`` declares it; without ``scorer``, as the scorers that declare it do.

    Raises
    ------
    KeyError
        When no scorer (or not ``scorer``) declares it, or several declare it differently and none
        was named.
    """
    owners = [get_scorer(scorer)] if scorer is not None else SCORERS.values()
    found = [s for s in owners if name in s.metrics]
    if not found:
        valid = sorted({m for s in owners for m in s.metrics})
        raise KeyError(f"unknown metric {name!r}; valid names: {', '.join(valid)}")
    if len({_metadata(s.metrics[name]) for s in found}) > 1:
        raise KeyError(f"metric {name!r} is declared differently by several scorers ({', '.join(s.name for s in found)}); "
                       "name one")
    return found[0].metrics[name]


def _metadata(metric: Metric) -> tuple:
    """What a metric's readers rely on: its direction, limits, unit and description."""
    return metric.direction, metric.limits, metric.unit, metric.description
