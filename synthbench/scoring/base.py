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

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from synthbench.catalogue import Abilities, find_metric
from synthbench.kinds import get_kind
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels, TrainRequest
from synthbench.protocol import FoldData, MethodOutput
from synthbench.registry import Registry
from synthbench.scoring.truth.metrics import Metric

__all__ = [
    "Scorer",
    "Abilities",
    "Scores",
    "Curve",
    "SkipCell",
    "SCORERS",
    "register_scorer",
    "get_scorer",
    "scorer_names",
    "get_metric",
    "configure_scorer",
    "scorer_options",
    "explained_kind",
    "explained_model",
    "nanmean",
]


def nanmean(values: np.ndarray, axis: int | None = None) -> Any:
    """The mean of the finite entries of ``values`` (along ``axis``), NaN where there is none, without a warning."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    counts = finite.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(finite, values, 0.0).sum(axis=axis) / counts  # 0 / 0: NaN
    return float(out) if axis is None else out


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


class Scores(dict[str, float]):
    """A scorer's metric values for one cell (a ``dict`` name -> float), with the curves behind them.

    ``curves`` maps a curve's name (``"morf"``, ``"roar"``, ...) to its :class:`Curve`; the runner
    stores them beside the values, so a report can draw them and a resumed run recomputes nothing.
    ``examples``: image maps ``(m, C, H, W)`` the scorer made of the fold's first explained images
    (fragility: after an attack), which the runner stores as the cell's example maps in place of
    the method's own. ``per_example`` maps a metric's name to its value on each explained example
    (``(n,)`` float, the examples in the fold's explain order, the same for every method of the
    fold; the metric is their mean, NaN entries left out), for the metrics that are a mean over
    examples: what reliability across examples (Krippendorff's alpha) is computed from. A scorer
    that measures no curve may return a plain ``dict``.
    """

    def __init__(
        self,
        values: Mapping[str, float] | None = None,
        curves: Mapping[str, Curve] | None = None,
        examples: np.ndarray | None = None,
        per_example: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        super().__init__(values or {})
        self.curves: dict[str, Curve] = dict(curves or {})
        self.examples = examples
        self.per_example: dict[str, np.ndarray] = {}
        for name, values_ in (per_example or {}).items():
            array = np.asarray(values_, dtype=np.float64)
            if array.ndim != 1:
                raise ValueError(f"per-example values of {name!r} must be one per example (n,), got {array.shape}")
            self.per_example[name] = array


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


class Scorer:
    """What every scorer is: the class a scorer derives from (the registry takes nothing else).

    A scorer sets ``name`` (the name cells and the CLI use, ``--scorer``) and ``metrics`` (name ->
    :class:`Metric`, every metric it may report, with its truth-based parts when it has them) and
    implements :meth:`score`. It may override what is declared here with its defaults:
    :attr:`abilities`, :meth:`retraining`, :meth:`chance`, :meth:`params_for`, :meth:`check_kind` and
    :meth:`check_layers`.
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

    def retraining(
        self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels
    ) -> tuple[str, list[TrainRequest]] | None:
        """The models :meth:`score` will ask :meth:`~synthbench.models.SharedModels.train_many_on` for, as ``(kind,
        requests)``, so that a task trains those of all its cells as one batch before scoring them
        (:meth:`~synthbench.models.SharedModels.prefetch`); default None: it retrains nothing, or says nothing."""
        return None

    def chance(self, data: FoldData) -> dict[str, float]:
        """Each metric's value for a uniformly random ranking on this fold, for those that have one (default: none;
        a metric's ``control`` method, measured in the same run, then stands beside each method)."""
        return {}

    def params_for(self, kind: str) -> dict[str, Any]:
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
        raise TypeError(
            f"a scorer derives from synthbench.scoring.Scorer (its abilities and defaults); "
            f"{type(scorer).__name__} does not"
        )
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
    return [
        f.name for f in dataclasses.fields(scorer) if f.name not in ("name", "metrics") and not f.metadata.get("fixed")
    ]


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
        raise ValueError(
            f"scorer {name!r} has no option {', '.join(map(repr, unknown))}; its options: {', '.join(valid) or 'none'}"
        )
    try:
        configured: Scorer = dataclasses.replace(cast(Any, scorer), **options)  # a dataclass: it has options
        return configured
    except (ValueError, TypeError) as exc:  # the scorer's own check, which may not say what it was given
        alone = [k for k in options if _refuses(scorer, k, options[k])] or list(options)
        given = ", ".join(f"{k}={options[k]!r}" for k in alone)
        raise ValueError(f"scorer {name!r} refuses {given}: {exc}") from None


def _refuses(scorer: Scorer, option: str, value: Any) -> bool:
    """Whether ``scorer`` refuses ``option=value`` on its own."""
    try:
        dataclasses.replace(cast(Any, scorer), **{option: value})
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
    found: Metric = find_metric(name, [get_scorer(scorer)] if scorer is not None else SCORERS.values())
    return found
