"""The scorer protocol and the one registry of scorers.

A scorer turns a method's output on one fold into named metric values. It sits above methods
and models: it receives the method's :class:`~synthbench.methods.registry.MethodSpec` and the
fold's :class:`~synthbench.models.SharedModels`, so it may rerun the method on other inputs or
on a randomised model, and may train models (remove-and-retrain). Each scorer declares its
metrics, with their metadata, as :class:`~synthbench.scoring.metrics.Metric` objects; the
leaderboard and the report read them through the scorer (:func:`get_metric`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.metrics import Metric

__all__ = ["Scorer", "register_scorer", "get_scorer", "scorer_names", "get_metric"]


class Scorer(Protocol):
    """Protocol every scorer implements.

    Attributes
    ----------
    name : the name cells and the CLI use (``--scorer``)
    metrics : name -> :class:`Metric`, every metric it may report
    """

    name: str
    metrics: Mapping[str, Metric]

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> dict[str, float]:
        """Metric values for the method ``spec`` on one fold; random draws come from ``data.rng(...)``."""
        ...

    def chance(self, data: FoldData) -> dict[str, float]:
        """Each metric's value for a uniformly random ranking on this fold (those that have one)."""
        ...

    def params_for(self, kind: str) -> dict:
        """Parameters that define the scorer's values on ``kind`` inputs; they enter the cell id (``{}``: none)."""
        ...


_SCORERS: dict[str, Scorer] = {}


def register_scorer(scorer: Scorer) -> Scorer:
    """Add ``scorer`` to the registry under its ``name``."""
    if scorer.name in _SCORERS:
        raise ValueError(f"scorer {scorer.name!r} is already registered")
    _SCORERS[scorer.name] = scorer
    return scorer


def scorer_names() -> list[str]:
    """Names of the registered scorers, in registration order."""
    return list(_SCORERS)


def get_scorer(name: str) -> Scorer:
    """The scorer registered as ``name``; the KeyError lists the valid names."""
    try:
        return _SCORERS[name]
    except KeyError:
        raise KeyError(f"unknown scorer {name!r}; valid names: {', '.join(_SCORERS)}") from None


def get_metric(name: str, scorer: str | None = None) -> Metric:
    """Metric ``name`` as ``scorer`` declares it; without ``scorer``, as the scorers that declare it do.

    Raises
    ------
    KeyError
        When no scorer (or not ``scorer``) declares it, or several declare it differently and none
        was named.
    """
    owners = [get_scorer(scorer)] if scorer is not None else list(_SCORERS.values())
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
