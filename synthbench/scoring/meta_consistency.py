"""Meta-consistency of a verdict (MetaQuantus: Hedström et al., TMLR 2023): does it stay put under perturbations
that should not change its answer, and react to those that should?

For one method on one fold, the wrapped verdict (``verdict``, any scorer recording per-example values) is
measured on the fold as it is and on ``perturbations`` perturbed copies at two magnitudes, the method re-run on
each copy:

- ``perturbation="model"`` (MetaQuantus' model perturbation test): every parameter of the explained network's
  declared layers multiplied by noise drawn from N(1, sigma^2), minor sigma 0.001, disruptive 2.0 (MetaQuantus'
  setting for its MNIST networks);
- ``perturbation="input"`` (its input perturbation test): U(-delta, delta) added to the explained inputs
  (minor 0.001, disruptive 5.0), the method re-run on the perturbed inputs.

An example counts under minor noise where the explained model's prediction is unchanged, under disruptive noise
where it changed (MetaQuantus' rule). With ``q`` the verdict's headline value per example before and ``q'`` after:

- ``meta_iac_nr`` (intra-consistency, noise resilience): the mean over the minor perturbations of the two-sided
  Wilcoxon signed-rank p-value between ``q`` and ``q'`` on the counted examples (zero differences split);
  near 1 the verdict does not move;
- ``meta_iac_ar`` (adversary reactivity): the mean of 1 - p under the disruptive perturbations;
- ``meta_iec_ar``: the share of (perturbation, counted example) pairs where ``q'`` is worse than ``q`` by the
  verdict's direction.

The fourth criterion, ``IEC_NR`` (the share of (example, method) pairs whose rank among the fold's methods is
unchanged under minor noise), needs every method of the fold: the cell records ``q`` (``meta_unperturbed``),
each minor ``q'`` (``meta_minor_{k}``) and which examples count (``meta_kept_minor_{k}``) per example, and the
report computes it and the meta-consistency score MC = mean(IAC_NR, IAC_AR, IEC_NR, IEC_AR) (1 ideal).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from synthbench.methods.registry import MethodSpec, run_method
from synthbench.models import SharedModels, model_kind
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.base import (
    Abilities,
    Scorer,
    Scores,
    SkipCell,
    configure_scorer,
    explained_model,
    nanmean,
    register_scorer,
)
from synthbench.scoring.truth.metrics import Metric

__all__ = ["MetaConsistencyScorer", "META_CONSISTENCY", "MAX_PERTURBATIONS", "PERTURBATIONS", "perturbed_model"]

#: The most perturbations per magnitude: the per-example metrics are declared for each.
MAX_PERTURBATIONS = 5

#: Perturbation kind -> (minor, disruptive) magnitude (MetaQuantus' defaults).
PERTURBATIONS = {"model": (0.001, 2.0), "input": (0.001, 5.0)}


def perturbed_model(model: Any, layer_names: list[str], sigma: float, seed: int) -> Any:
    """A copy of the trained network ``model`` with every parameter of the layers ``layer_names`` multiplied by noise
    from N(1, sigma^2), drawn on the CPU from a generator seeded by ``seed`` (the same copy on every device)."""
    out = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for name in layer_names:
            for parameter in out.module.get_submodule(name).parameters(recurse=False):
                noise = 1.0 + sigma * torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
                parameter.mul_(noise.to(parameter.device, parameter.dtype))
    out.module.eval()
    return out


def _metrics() -> dict[str, Metric]:
    kinds = ("tabular", "image")
    out = [
        Metric(
            "meta_iac_nr",
            "higher",
            "mean Wilcoxon p-value between the verdict's per-example values before and after minor noise "
            "(MetaQuantus IAC, noise resilience)",
            kinds=kinds,
        ),
        Metric(
            "meta_iac_ar",
            "higher",
            "mean 1 - Wilcoxon p-value between the verdict's per-example values before and after disruptive "
            "noise (MetaQuantus IAC, adversary reactivity)",
            kinds=kinds,
        ),
        Metric(
            "meta_iec_ar",
            "higher",
            "share of examples whose verdict value got worse under disruptive noise (MetaQuantus IEC, "
            "adversary reactivity)",
            kinds=kinds,
        ),
        Metric(
            "meta_unperturbed",
            "higher",
            "the verdict's headline value, unperturbed (its mean over examples)",
            limits=(-np.inf, np.inf),
            kinds=kinds,
        ),
    ]
    for k in range(MAX_PERTURBATIONS):
        out.append(
            Metric(
                f"meta_minor_{k}",
                "higher",
                f"the verdict's headline value under minor perturbation {k}",
                limits=(-np.inf, np.inf),
                kinds=kinds,
            )
        )
        out.append(
            Metric(
                f"meta_kept_minor_{k}",
                "higher",
                f"share of examples whose prediction minor perturbation {k} kept",
                kinds=kinds,
            )
        )
    return {m.name: m for m in out}


@dataclass(frozen=True)
class MetaConsistencyScorer(Scorer):
    """MetaQuantus' criteria of the verdict ``verdict`` on one method (see the module docstring).

    Parameters
    ----------
    verdict : the registered scorer judged (it must record per-example values: ROAD, ROAR, KAR, the randomisation
        checks, fragility)
    verdict_options : options of that scorer (a table of name -> value), as a suite block gives them
    perturbation : ``"model"`` (networks only) or ``"input"``
    perturbations : perturbations per magnitude, 1 to :data:`MAX_PERTURBATIONS` (MetaQuantus' experiments: 5)
    """

    abilities: ClassVar[Abilities] = Abilities(judges_model=True, judges_verdict=True)

    name: str = "meta_consistency"
    verdict: str = "road"
    verdict_options: Mapping[str, Any] = field(default_factory=dict)
    perturbation: str = "model"
    perturbations: int = 3
    metrics: Mapping[str, Metric] = field(default_factory=_metrics)

    def __post_init__(self) -> None:
        if self.perturbation not in PERTURBATIONS:
            raise ValueError(f"perturbation must be one of {', '.join(PERTURBATIONS)}, got {self.perturbation!r}")
        if int(self.perturbations) != self.perturbations or not 1 <= self.perturbations <= MAX_PERTURBATIONS:
            raise ValueError(
                f"perturbations must be a whole number in 1..{MAX_PERTURBATIONS}, got {self.perturbations}"
            )
        if self.verdict == self.name:
            raise ValueError("meta_consistency cannot judge itself")
        self.judged()  # the verdict and its options exist

    def judged(self) -> Scorer:
        """The configured verdict this scorer judges."""
        return configure_scorer(self.verdict, dict(self.verdict_options))

    def params_for(self, kind: str) -> dict[str, Any]:
        """The parameters that define the values: the verdict with its own parameters, the perturbation and its
        magnitudes (recorded in the cell id)."""
        minor, disruptive = PERTURBATIONS[self.perturbation]
        return {
            "verdict": self.verdict,
            "verdict_params": self.judged().params_for(kind),
            "perturbation": self.perturbation,
            "perturbations": int(self.perturbations),
            "minor": minor,
            "disruptive": disruptive,
            "kept": "minor: prediction unchanged; disruptive: prediction changed",
        }

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> Scores:
        """The verdict before and under each perturbation, and MetaQuantus' per-method criteria."""
        from scipy import stats

        verdict = self.judged()
        metric, before = self._headline(verdict, verdict.score(output, data, spec, models))
        direction = verdict.metrics[metric].direction
        kind, model = explained_model(spec, data, models)
        predicted = np.asarray(model.predict(data.X_explain))[: len(before)]
        minor, disruptive = PERTURBATIONS[self.perturbation]
        values: dict[str, float] = {"meta_unperturbed": nanmean(before)}
        per_example: dict[str, np.ndarray] = {"meta_unperturbed": before}
        iac_nr, iac_ar, worse = [], [], []
        for magnitude, size in (("minor", minor), ("disruptive", disruptive)):
            for k in range(int(self.perturbations)):
                after, kept = self._perturbed(verdict, metric, size, (magnitude, k), spec, data, models, kind, model)
                kept &= predicted == after[1] if magnitude == "minor" else predicted != after[1]
                q, q_hat = before[kept], after[0][kept]
                p = _wilcoxon_p(q, q_hat, stats)
                if magnitude == "minor":
                    iac_nr.append(p)
                    values[f"meta_minor_{k}"] = nanmean(after[0])
                    values[f"meta_kept_minor_{k}"] = float(kept.mean())
                    per_example[f"meta_minor_{k}"] = after[0]
                    per_example[f"meta_kept_minor_{k}"] = kept.astype(np.float64)
                else:
                    iac_ar.append(1.0 - p)
                    finite = np.isfinite(q) & np.isfinite(q_hat)
                    worse += list((q_hat < q if direction == "higher" else q_hat > q)[finite])
        values.update(
            meta_iac_nr=nanmean(np.array(iac_nr)),
            meta_iac_ar=nanmean(np.array(iac_ar)),
            meta_iec_ar=float(np.mean(worse)) if worse else np.nan,
        )
        kept_values = {k: v for k, v in values.items() if np.isfinite(v)}
        return Scores(kept_values, per_example={k: v for k, v in per_example.items() if k in kept_values})

    def _headline(self, verdict: Scorer, scores: dict[str, float]) -> tuple[str, np.ndarray]:
        """The verdict's first declared metric with per-example values, and those values."""
        per_example = getattr(scores, "per_example", {})
        metric = next((m for m in verdict.metrics if m in per_example), None)
        if metric is None:
            raise SkipCell(f"{self.verdict} recorded no per-example values for this method: nothing to compare")
        return metric, per_example[metric]

    def _perturbed(
        self,
        verdict: Scorer,
        metric: str,
        size: float,
        stream: tuple[str, int],
        spec: MethodSpec,
        data: FoldData,
        models: SharedModels,
        kind: str,
        model: Any,
    ) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
        """``((values, predictions), counted)``: the verdict's per-example values after one perturbation, the
        perturbed model's (or inputs') predictions, and the examples both the verdict and the original measured."""
        if self.perturbation == "model":
            layers_of = model_kind(kind).layers
            if layers_of is None:
                raise SkipCell(f"the {kind} {spec.name} explains declares no layers to perturb: use perturbation=input")
            names = [layer.name for layer in layers_of(model)]
            seed = data.random_state(self.name, *stream)
            view = models.with_model(kind, perturbed_model(model, names, size, seed))
            scores = verdict.score(run_method(spec, data, view), data, spec, view)
            predictions = np.asarray(view.get(kind).predict(data.X_explain))
        else:
            rng = data.rng(self.name, *stream)
            noise = rng.uniform(-size, size, data.X_explain.shape).astype(data.X_explain.dtype)
            moved = data.X_explain + noise
            same_rows = data.X_test.shape == data.X_explain.shape and np.array_equal(data.X_test, data.X_explain)
            changed = dataclasses.replace(data, X_explain=moved, X_test=moved if same_rows else data.X_test)
            scores = verdict.score(run_method(spec, changed, models), changed, spec, models)
            predictions = np.asarray(model.predict(moved))
        after = getattr(scores, "per_example", {}).get(metric)
        n = len(predictions) if after is None else len(after)
        values = np.full(n, np.nan) if after is None else np.asarray(after, dtype=np.float64)
        return (values, predictions[:n]), np.isfinite(values)


def _wilcoxon_p(q: np.ndarray, q_hat: np.ndarray, stats: Any) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired values (zero differences split; 1 where every difference is
    0: no shift to detect; NaN without a finite pair)."""
    finite = np.isfinite(q) & np.isfinite(q_hat)
    q, q_hat = q[finite], q_hat[finite]
    if not len(q):
        return float("nan")
    if np.all(q == q_hat):
        return 1.0
    return float(stats.wilcoxon(q, q_hat, zero_method="zsplit", alternative="two-sided").pvalue)


#: The registered instance: ``--scorer meta_consistency`` (``--scorer-option verdict=road``).
META_CONSISTENCY = register_scorer(MetaConsistencyScorer())
