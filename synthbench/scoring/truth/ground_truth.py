"""The ground-truth scorer: a method's ranking against the dataset's known relevant features.

Tables: global rankings against the relevant features, per-instance attributions against the
per-instance truth (:mod:`~synthbench.scoring.truth.metrics`). Images: each explained image's map,
aggregated over channels (``channel_aggregation``), against its signal mask
(:mod:`~synthbench.scoring.truth.localisation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.base import Scorer, register_scorer
from synthbench.scoring.truth import metrics as M
from synthbench.scoring.truth.localisation import (
    CHANNEL_AGGREGATIONS,
    LOCALISATION_METRICS,
    aggregate_channels,
    pixel_masks,
)
from synthbench.scoring.truth.metrics import Metric

__all__ = ["GroundTruthScorer", "GROUND_TRUTH"]


@dataclass(frozen=True)
class GroundTruthScorer(Scorer):
    """Compares a ranking with the dataset's known relevant features.

    Global metrics apply when the dataset has global truth and the method returned global
    scores; local ones when the dataset has per-instance truth and the method returned
    per-instance attributions. Ties are broken with a stream derived from the cell (seed, fold,
    method) and the metric's name, so adding a metric changes no other.

    Attributes
    ----------
    name : ``"ground_truth"``
    metrics : the metrics it reports (default: every one of :data:`synthbench.scoring.truth.metrics.METRICS`
        and :data:`synthbench.scoring.truth.localisation.LOCALISATION_METRICS`), each truth-based
        (:attr:`Metric.truth_based`); each applies to the input kinds it declares
    channel_aggregation : how image attributions ``(n, C, H, W)`` become the maps ``(n, H, W)`` the
        localisation metrics read (:data:`~synthbench.scoring.truth.localisation.CHANNEL_AGGREGATIONS`);
        recorded with every image cell (:meth:`params_for`)
    """

    name: str = "ground_truth"
    metrics: Mapping[str, Metric] = field(default_factory=lambda: {**M.METRICS, **LOCALISATION_METRICS})
    channel_aggregation: str = "sum_abs"

    def __post_init__(self) -> None:
        computed = [name for name, m in self.metrics.items() if not m.truth_based]
        if computed:
            raise ValueError(
                f"the ground truth computes its metrics from scores and truth; {', '.join(computed)} "
                "declare no fn, scope, bounds and chance"
            )
        if self.channel_aggregation not in CHANNEL_AGGREGATIONS:
            raise ValueError(
                f"channel_aggregation must be one of {', '.join(CHANNEL_AGGREGATIONS)}, "
                f"got {self.channel_aggregation!r}"
            )

    def params_for(self, kind: str) -> dict[str, str]:
        """The scorer's parameters that define its values on ``kind`` inputs (recorded in the cell id)."""
        return {"channel_aggregation": self.channel_aggregation} if kind == "image" else {}

    def metric_names(self, data: FoldData, output: MethodOutput) -> list[str]:
        """The metrics this fold and output allow."""
        has_global = data.relevant is not None and output.scores is not None
        has_local = data.relevant_local is not None and output.local is not None
        return [
            n
            for n, m in self.metrics.items()
            if data.kind in m.kinds and (has_global if m.scope == "global" else has_local)
        ]

    def _local(self, output: MethodOutput, data: FoldData) -> tuple[np.ndarray, np.ndarray]:
        """The per-instance attributions and truth a local metric reads: image maps and pixel masks on images."""
        if output.local is None or data.relevant_local is None:
            raise ValueError("a local metric needs per-instance maps and per-instance truth")
        if data.kind == "image":
            return aggregate_channels(output.local, self.channel_aggregation), pixel_masks(data.relevant_local)
        return output.local, data.relevant_local

    def score(
        self, output: MethodOutput, data: FoldData, spec: MethodSpec | str, models: SharedModels | None = None
    ) -> dict[str, float]:
        """Every applicable metric; raises ValueError if one falls outside its declared bounds.

        ``spec`` is the method's spec (or its name): ties are broken with a stream of the fold,
        the method's name and the metric's name.
        """
        method = spec if isinstance(spec, str) else spec.name
        values = {}
        names = self.metric_names(data, output)
        local = self._local(output, data) if any(self.metrics[n].scope == "local" for n in names) else None
        for name in names:
            metric = self.metrics[name]
            stream = data.rng("ties", method, name)
            if metric.scope == "global":
                ranking = (
                    output.scores_2k if metric.reads_2k_ranking and output.scores_2k is not None else output.scores
                )
                if ranking is None or data.relevant is None:  # metric_names keeps a global metric only with both
                    raise ValueError(f"{name} needs a global ranking and global truth")
                truth, value = data.relevant, metric(ranking, data.relevant, stream)
            else:
                assert local is not None  # computed above when any local metric applies
                truth, value = local[1], metric(local[0], local[1], stream)
            if metric.bounds is None:
                raise TypeError(f"{name} is not computed from the truth; the ground truth declares only such metrics")
            lo, hi = metric.bounds(truth)
            if not (lo - 1e-9 <= value <= hi + 1e-9) and value == value:
                raise ValueError(f"{name} = {value} outside its declared bounds [{lo}, {hi}]")
            values[name] = value
        return values

    def chance(self, data: FoldData) -> dict[str, float]:
        """Each metric's expected value under a random ranking, for this fold's truth."""
        local = data.relevant_local
        if local is not None and data.kind == "image":
            local = pixel_masks(local)  # what the localisation metrics read, computed once
        out = {}
        for name, metric in self.metrics.items():
            truth = data.relevant if metric.scope == "global" else local
            if data.kind in metric.kinds and truth is not None and metric.chance is not None:
                out[name] = metric.chance(truth)
        return out


#: The registered instance: ``--scorer ground_truth``, every cell's default.
GROUND_TRUTH = register_scorer(GroundTruthScorer())
