"""Fragility of explanations under label-preserving perturbations, measured against the truth.

Ghorbani, Abid and Zou (2019) showed that inputs that look the same and keep their label can get
very different explanations, under random noise and far more under targeted perturbations.
``--scorer fragility`` perturbs a cell's explained examples inside a budget
(:mod:`~synthbench.scoring.fragility.budget`: L-infinity, or L2, of radius ``eps`` in input units; on
tables a share of each feature's standard deviation), at each ``eps`` of the run, with:

``random``    one random-sign perturbation (the baseline at the same budget);
``topk``      the top-k attack: move the map's relevance off its original top-k elements;
``center``    (images) move the relevance's centre of mass;
``targeted``  raise the relevance on a region drawn per example (k features outside the original
              top-k on tables, a square patch of about k pixels on images);
``truth``     the truth attack, which no other tool has: move the relevance off the example's
              true features (tables) or signal mask (images) onto decoys or distractors.

(:mod:`~synthbench.scoring.fragility.attacks`.) Every kept perturbation keeps the label the original model
predicts; each example keeps its best label-preserving iterate (none: the original input). A
method whose maps are differentiable in the inputs (a recipe whose attribution function declares
``create_graph``: gradient, saliency, input x gradient, integrated gradients, the SmoothGrad
family, GradientSHAP) is attacked along the gradient of the objective through a smooth surrogate
of the explained network (:mod:`~synthbench.models.surrogate`, Softplus of ``beta`` for ReLU, a
smoothed leaky ReLU for the MLP presets); every iterate is evaluated and explained on the
original network. Every other method with per-example maps (the layer rules, perturbation
methods, TreeSHAP, the controls) gets the random baseline and a black-box random search
(:func:`~synthbench.scoring.fragility.attacks.random_search`) in place of the gradient attacks
(:func:`attack_access`; ``--list`` shows it). A method that returns only global scores fitted on
the training rows cannot change with the explained inputs: its cell is skipped with the reason.

Measures, between each example's original map ``a`` and its map ``b`` at the kept perturbation,
both on the original network (relevance ``|a|``, summed over an image's channels): the top-k
intersection (``k``: the number of true features on tables, 5 % of the pixels on images, or
``top_k`` x the elements), the Spearman correlation of the relevance, the share of the original
top-k elements whose sign flipped, the shift of the centre of mass in pixels (images), the share
of examples with a kept perturbation (``success``), and the ground-truth score of the maps after
the attack, example by example (tables: the share of an example's true features among its top k,
with ``k`` the number of true features, and the AUROC of its ``|b|``; images: rank accuracy against
its mask), and its drop from before. In the same scorer, from ``samples``
uniform draws of the budget per ``eps``: max- and average-sensitivity and a local Lipschitz
estimate (:mod:`~synthbench.scoring.fragility.sensitivity`, cross-checked against captum and Quantus).

Values are at the largest ``eps``; every measure is also stored as a curve over ``eps``
(``{attack}_{measure}``, and the sensitivities by name). An image cell stores, as its example maps,
the maps after the truth attack at the largest ``eps`` (:data:`EXAMPLE_ATTACKS`). The chance reference is the ``random``
control in the same run, whose maps of perturbed inputs are drawn afresh (a random map of a
changed input is a new draw); every other method explains each perturbed input with its cell's
own random stream, so a stochastic method's noise is the same before and after and only the
perturbation moves its map.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import torch

from synthbench.attribution import ATTRIBUTION_METHODS
from synthbench.methods.recipe import explained_targets
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels
from synthbench.models.surrogate import smooth_surrogate
from synthbench.protocol import FoldData, MethodOutput
from synthbench.scoring.base import (
    Abilities,
    Curve,
    Scorer,
    Scores,
    SkipCell,
    explained_model,
    nanmean,
    register_scorer,
)
from synthbench.scoring.fragility.attacks import (
    AttackResult,
    center_objective,
    center_of_mass,
    gradient_attack,
    random_perturbation,
    random_search,
    region_objective,
    relevance,
    top_k_objective,
)
from synthbench.scoring.fragility.budget import NORMS, Budget
from synthbench.scoring.fragility.sensitivity import SENSITIVITY_MEASURES, sensitivities
from synthbench.scoring.randomisation.similarity import spearman_rows, top_k_intersection
from synthbench.scoring.ranking import top_k_mask
from synthbench.scoring.reexplain import explain_again
from synthbench.scoring.truth import metrics as M
from synthbench.scoring.truth.localisation import pixel_masks, rank_accuracy
from synthbench.scoring.truth.localisation import top_k as image_top_k
from synthbench.scoring.truth.metrics import Metric

__all__ = ["FragilityScorer", "FRAGILITY", "ATTACKS", "DEFAULT_EPS", "attack_access", "parse_eps"]

#: Every attack, in the order values are reported.
ATTACKS = ("random", "topk", "center", "targeted", "truth")
#: The input kinds an attack applies to (others: every kind).
ATTACK_KINDS = {"center": ("image",)}
#: The attacks run on each kind when ``attacks`` is left empty.
DEFAULT_ATTACKS = {"tabular": ("random", "topk", "targeted", "truth"), "image": ATTACKS}
#: Whose maps after the attack (at the largest eps) an image cell stores for reports: the first run of these.
EXAMPLE_ATTACKS = ("truth", "topk", "center", "targeted", "random")
#: The radii run on each kind when ``eps`` is left empty (tables: shares of each feature's sd; images: pixel units).
DEFAULT_EPS = {"tabular": (0.05, 0.1, 0.2), "image": (2 / 255, 8 / 255)}
#: The gradient-attack steps on each kind when ``iterations`` is 0.
DEFAULT_ITERATIONS = {"tabular": 100, "image": 20}

_ATTACK_WORDS = {
    "random": "a random-sign perturbation",
    "topk": "the top-k attack",
    "center": "the centre-of-mass attack",
    "targeted": "the targeted attack",
    "truth": "the truth attack",
}
_AT = "at the largest eps"
_TRUTH = "tables: the share of its true features in its top k; images: rank accuracy"
#: The metrics a leaderboard shows first: the headline (robustness to the top-k attack), the truth attack's
#: damage, the random baseline and max-sensitivity.
_LEADING = ("topk_intersection", "truth_truth_drop", "random_intersection", "max_sensitivity")


def parse_eps(eps: Any) -> tuple[float, ...]:
    """``eps`` (a number, a fraction such as ``"8/255"``, or several) as sorted distinct positive floats."""
    items = eps if isinstance(eps, (tuple, list)) else (eps,)
    try:
        values = tuple(float(Fraction(str(e).strip())) if isinstance(e, str) else float(e) for e in items)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"eps must be numbers or fractions such as 8/255, got {eps!r}") from None
    bad = [v for v in values if not v > 0 or not math.isfinite(v)]
    if bad:
        raise ValueError(f"eps must be positive, got {', '.join(map(str, bad))}")
    if len(set(values)) < len(values):
        raise ValueError(f"eps values must be distinct, got {values}")
    return tuple(sorted(values))


def attack_access(spec: MethodSpec, kind: str) -> str:
    """How ``spec`` is attacked on ``kind`` inputs: ``"gradient"`` (its maps are differentiable in the
    inputs: gradient attacks through a smooth surrogate), ``"black-box"`` (random search), or
    ``"none"`` (it returns no per-example maps, :attr:`MethodSpec.maps`: its cells are skipped)."""
    recipe = spec.recipe
    if not spec.maps:
        return "none"
    if recipe is not None and ATTRIBUTION_METHODS[recipe.function].create_graph and spec.explains(kind):
        return "gradient"
    return "black-box"


def _metrics(name: str) -> dict[str, Metric]:
    out = []
    for attack in ("topk", *(a for a in ATTACKS if a != "topk")):  # the top-k attack's block first
        kinds = ATTACK_KINDS.get(attack, ("tabular", "image"))
        words = f"{_ATTACK_WORDS[attack]} {_AT}"
        out += [
            Metric(
                f"{name}_{attack}_intersection",
                "higher",
                f"top-k intersection of the maps before and after {words}",
                unit="share of top-k elements kept",
                kinds=kinds,
                control="random",
            ),
            Metric(
                f"{name}_{attack}_spearman_abs",
                "higher",
                f"Spearman correlation of |a| before and after {words}",
                limits=(-1.0, 1.0),
                unit="Spearman correlation",
                kinds=kinds,
                control="random",
                variant_of=f"{name}_{attack}_intersection",
            ),
            Metric(
                f"{name}_{attack}_sign_flips",
                "lower",
                f"share of the original top-k elements whose sign flipped under {words}",
                unit="share of top-k elements",
                kinds=kinds,
                control="random",
            ),
            Metric(
                f"{name}_{attack}_success",
                "lower",
                f"share of examples with a kept label-preserving perturbation under {words}",
                unit="share of examples",
                kinds=kinds,
                control="random",
            ),
            Metric(
                f"{name}_{attack}_truth",
                "higher",
                f"ground-truth score of each example's map after {words} ({_TRUTH})",
                kinds=kinds,
                control="random",
            ),
            Metric(
                f"{name}_{attack}_truth_drop",
                "lower",
                f"drop of the ground-truth score under {words}",
                limits=(-1.0, 1.0),
                kinds=kinds,
                control="random",
            ),
            Metric(
                f"{name}_{attack}_truth_auroc",
                "higher",
                f"AUROC of each example's |a| against its truth after {words}",
                kinds=("tabular",) if "tabular" in kinds else (),
                control="random",
            ),
            Metric(
                f"{name}_{attack}_center_shift",
                "lower",
                f"shift of the relevance's centre of mass under {words}",
                limits=(0.0, np.inf),
                unit="pixels",
                kinds=("image",),
                control="random",
            ),
        ]
    out += [
        Metric(
            f"{name}_truth_before",
            "higher",
            f"ground-truth score of each attacked example's map before any attack ({_TRUTH})",
            kinds=("tabular", "image"),
            control="random",
        )
    ]
    sensitivity = {
        "max_sensitivity": "max-sensitivity ||a' - a|| / ||a|| over uniform draws",
        "avg_sensitivity": "average-sensitivity ||a' - a|| / ||a|| over uniform draws",
        "local_lipschitz": "local Lipschitz estimate ||a' - a|| / ||x' - x|| over uniform draws",
    }
    out += [
        Metric(
            f"{name}_{m}",
            "lower",
            f"{sensitivity[m]} {_AT}",
            limits=(0.0, np.inf),
            unit="ratio",
            kinds=("tabular", "image"),
            control="random",
        )
        for m in SENSITIVITY_MEASURES
    ]
    first = [f"{name}_{m}" for m in _LEADING]
    out = sorted((m for m in out if m.kinds), key=lambda m: first.index(m.name) if m.name in first else len(first))
    return {m.name: m for m in out}


@dataclass(frozen=True)
class FragilityScorer(Scorer):
    """How far a label-preserving perturbation moves a method's maps, and off the truth.

    Attributes
    ----------
    name : ``"fragility"``
    eps : the budget's radii (a curve over them); empty: :data:`DEFAULT_EPS` of the input kind.
        Numbers or fractions (``"8/255"``)
    norm : :data:`~synthbench.scoring.fragility.budget.NORMS`
    attacks : names of :data:`ATTACKS`; empty: :data:`DEFAULT_ATTACKS` of the input kind
    iterations : gradient-attack steps; 0: :data:`DEFAULT_ITERATIONS` of the input kind
    step : each gradient step's length as a share of eps (0: ``2.5 / iterations``)
    search_steps : black-box search steps (methods without gradient attacks)
    samples : uniform draws per eps for the sensitivities (captum's default, 10)
    beta : the smooth surrogate's Softplus sharpness
    top_k : the top-k as a share of the input's elements (pixels on images), in (0, 1]; 0: the
        number of true features on tables, 5 % of the pixels on images
    max_examples : the most explained examples attacked (the cell's first, :meth:`FoldData.first`: those
        whose maps a report draws)
    metrics : every metric it may report (built from ``name``)
    """

    #: Its curves a report draws, random against adversarial: the top-k intersection under the random baseline and
    #: the top-k attack, the ground-truth score under the random baseline and the truth attack.
    abilities: ClassVar[Abilities] = Abilities(
        judges_model=True,
        curve_axis="eps (the perturbation budget; tables: share of each feature's sd)",
        report_curves=("random_intersection", "topk_intersection", "random_truth", "truth_truth"),
        examples_caption="after the truth attack at the largest eps",
    )

    name: str = "fragility"
    eps: tuple[float, ...] = ()
    norm: str = "linf"
    attacks: tuple[str, ...] = ()
    iterations: int = 0
    step: float = 0.0
    search_steps: int = 10
    samples: int = 10
    beta: float = 10.0
    top_k: float = 0.0
    max_examples: int = 200
    metrics: Mapping[str, Metric] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", parse_eps(self.eps) if self.eps != () else ())
        attacks = (self.attacks,) if isinstance(self.attacks, str) else tuple(self.attacks)
        unknown = [a for a in attacks if a not in ATTACKS]
        if unknown or len(set(attacks)) < len(attacks):
            raise ValueError(f"attacks must be distinct names of {', '.join(ATTACKS)}, got {self.attacks!r}")
        object.__setattr__(self, "attacks", attacks)
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {self.norm!r}")
        for what in ("iterations", "search_steps", "samples", "max_examples"):
            value, least = getattr(self, what), 0 if what == "iterations" else 1
            if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < least:
                raise ValueError(f"{what} must be a whole number >= {least}, got {value!r}")
        if not 0 <= self.step or not self.step <= 1:
            raise ValueError(f"step must be a share of eps in (0, 1] (0: 2.5 / iterations), got {self.step}")
        if not self.beta > 0:
            raise ValueError(f"beta must be positive, got {self.beta}")
        if not 0 <= self.top_k <= 1:
            raise ValueError(f"top_k must be a share in (0, 1] (0: the truth's size), got {self.top_k}")
        if not self.metrics:
            object.__setattr__(self, "metrics", _metrics(self.name))

    def eps_for(self, kind: str) -> tuple[float, ...]:
        """The radii run on ``kind`` inputs."""
        return self.eps or DEFAULT_EPS[kind]

    def attacks_for(self, kind: str) -> tuple[str, ...]:
        """The attacks run on ``kind`` inputs."""
        return self.attacks or DEFAULT_ATTACKS[kind]

    def iterations_for(self, kind: str) -> int:
        """The gradient-attack steps on ``kind`` inputs."""
        return int(self.iterations or DEFAULT_ITERATIONS[kind])

    def step_for(self, kind: str) -> float:
        """Each gradient step's length on ``kind`` inputs, as a share of eps."""
        return float(self.step or 2.5 / self.iterations_for(kind))

    def check_kind(self, kind: str) -> None:
        """ValueError for an attack that does not apply to ``kind`` inputs (``center`` on tables)."""
        bad = [a for a in self.attacks_for(kind) if kind not in ATTACK_KINDS.get(a, (kind,))]
        if bad:
            raise ValueError(
                f"{self.name}: the {', '.join(bad)} attack applies to "
                f"{' and '.join(ATTACK_KINDS[bad[0]])} inputs only, not {kind}"
            )

    def params_for(self, kind: str) -> dict:
        """The parameters that define the values on ``kind`` inputs (recorded in the cell id)."""
        return {
            "eps": list(self.eps_for(kind)),
            "norm": self.norm,
            "attacks": list(self.attacks_for(kind)),
            "iterations": self.iterations_for(kind),
            "step": self.step_for(kind),
            "search_steps": int(self.search_steps),
            "samples": int(self.samples),
            "beta": float(self.beta),
            "top_k": float(self.top_k),
            "max_examples": int(self.max_examples),
        }

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> Scores:
        """Every attack's measures at each eps (curves) and at the largest (values), with the sensitivities; the top-k
        intersection and Spearman per example (the first ``max_examples``) at the largest eps."""
        self.check_kind(data.kind)
        if spec.explains(data.kind) is None and spec.needs_for(data.kind):
            raise SkipCell(
                f"{spec.name} needs several models ({', '.join(spec.needs_for(data.kind))}); fragility "
                "keeps the label of the one model a method explains"
            )
        _, model = explained_model(spec, data, models)
        cell = _Cell(self, spec, data.first(self.max_examples), models, model)
        eps_list = self.eps_for(data.kind)
        rows = [cell.measure(eps) for eps in eps_list]
        x = np.asarray(eps_list, dtype=np.float64)
        values, curves = {}, {}
        for measure in rows[-1]:
            curve = np.array([row.get(measure, np.nan) for row in rows])
            curves[measure] = Curve(x, curve)
            values[f"{self.name}_{measure}"] = float(curve[-1])
        values[f"{self.name}_truth_before"] = cell.truth_before
        shown = next((cell.after[a] for a in EXAMPLE_ATTACKS if a in cell.after), None)
        kept = {k: v for k, v in values.items() if k in self.metrics and np.isfinite(v)}
        return Scores(
            kept,
            curves,
            examples=shown if data.kind == "image" else None,
            per_example={f"{self.name}_{k}": v for k, v in cell.by_example.items() if f"{self.name}_{k}" in kept},
        )


class _Cell:
    """One cell's attacks: the method, its model, its original maps and the truth, shared by every eps."""

    def __init__(
        self, scorer: FragilityScorer, spec: MethodSpec, data: FoldData, models: SharedModels, model: Any
    ) -> None:
        self.scorer, self.spec, self.data, self.models, self.model = scorer, spec, data, models, model
        self.fresh = itertools.count()  # a control's maps of perturbed inputs are new draws
        self.x0 = data.X_explain
        self.maps0 = self.explain(self.x0, original=True)
        if self.maps0.shape != self.x0.shape:
            raise SkipCell(
                f"{spec.name} returns global scores fitted on the training rows, not a map per example: "
                "perturbing the explained inputs cannot change them"
            )
        self.labels = self.predict(self.x0)
        self.rel0 = relevance(torch.as_tensor(self.maps0)).numpy()
        self.k = self._k()
        self.top0 = top_k_mask(self.rel0, self.k, data.rng("fragility", "top"))
        self.signed_top = self._signed_top()
        self.truth = self._truth()
        self.truth_before = self._truth_score(self.maps0, self.truth)[0] if self.truth is not None else np.nan
        self.gradient = attack_access(spec, data.kind) == "gradient"
        self.surrogate = smooth_surrogate(model, scorer.beta) if self.gradient else None
        self.after: dict[str, np.ndarray] = {}  # attack -> the maps it kept at the last eps measured
        #: ``{attack}_{measure}`` -> its value per example (n,) at the last eps measured (intersection, spearman_abs)
        self.by_example: dict[str, np.ndarray] = {}

    def explain(self, x: np.ndarray, *, original: bool = False) -> np.ndarray:
        """The method's maps of ``x`` on the original network: the cell's stream (a control: a fresh one)."""
        stream = ("fragility", next(self.fresh)) if self.spec.control and not original else ()
        return explain_again(
            self.spec,
            dataclasses.replace(self.data, X_explain=np.ascontiguousarray(x, np.float32)),
            self.models,
            stream=stream,
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict(x))

    def _k(self) -> int:
        d = self.rel0.shape[1]
        if self.scorer.top_k:
            return max(1, math.ceil(self.scorer.top_k * d))
        if self.data.kind == "image":
            return image_top_k(d)
        return int(self.data.k) if self.data.k else max(1, math.ceil(0.1 * d))

    def _truth(self) -> np.ndarray | None:
        """Bool ``(n, d)``: each example's true elements (tables) or signal pixels (images), or None."""
        data = self.data
        if data.kind == "image":
            return None if data.relevant_local is None else pixel_masks(data.relevant_local).reshape(len(self.x0), -1)
        if data.relevant_local is not None:
            return np.asarray(data.relevant_local, dtype=bool)
        if data.relevant is None:
            return None
        return np.broadcast_to(np.asarray(data.relevant, dtype=bool), self.rel0.shape)

    def _truth_score(self, maps: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
        """Each example's map against its own truth, averaged over the examples: (tables: the share of its
        top-k that is true, ``k`` the number of true features, and its AUROC; images: rank accuracy, NaN)."""
        rng = lambda what: self.data.rng("fragility", "ties", what)  # noqa: E731 - the same ties before and after
        if self.data.kind == "image":
            h, w = self.data.input_shape[1:]
            return rank_accuracy(np.abs(maps).sum(axis=1), truth.reshape(-1, h, w), rng("rank_accuracy")), np.nan
        kept = truth.any(axis=1)  # an example with no true feature (a switch's) has no score
        ties = rng("auroc")
        auroc = [M.auroc(a, t, ties) for a, t in zip(maps[kept], truth[kept]) if not t.all()]
        return M.local_tpr_at_k(maps, truth, rng("best_k")), nanmean(np.array(auroc))

    def _objective(self, attack: str):
        """The objective ``attack`` raises (see :mod:`~synthbench.scoring.fragility.attacks`)."""
        if attack == "topk":
            return top_k_objective(torch.as_tensor(self.top0))
        if attack == "center":
            return center_objective(center_of_mass(torch.as_tensor(self.maps0)))
        if attack == "truth":
            if self.truth is None:
                raise ValueError("the truth attack needs per-instance truth")
            return region_objective(torch.as_tensor(~self.truth))
        return region_objective(torch.as_tensor(self._target_region()))

    def _target_region(self) -> np.ndarray:
        """Bool ``(n, d)``: per example, k elements outside its original top-k (tables) or a square of about
        k pixels (images), drawn from the cell's stream."""
        rng = self.data.rng("fragility", "target")
        n, d = self.rel0.shape
        region = np.zeros((n, d), dtype=bool)
        if self.data.kind == "tabular":
            keys = np.where(self.top0, -1.0, rng.random((n, d)))
            np.put_along_axis(region, np.argsort(-keys, axis=1)[:, : self.k], True, axis=1)
            return region
        h, w = self.data.input_shape[1:]
        side = min(h, w, max(1, round(math.sqrt(self.k))))
        tops, lefts = rng.integers(0, h - side + 1, size=(n,)), rng.integers(0, w - side + 1, size=(n,))
        square = region.reshape(n, h, w)
        for i, (t, left) in enumerate(zip(tops, lefts)):
            square[i, t : t + side, left : left + side] = True
        return region

    def _surrogate_maps(self):
        targets = explained_targets(self.spec.recipe.target, self.model, self.data, self.x0)

        def maps(x: torch.Tensor) -> torch.Tensor:  # the cell's stream: the same noise at every iterate
            return explain_again(
                self.spec, self.data, self.models, model=self.surrogate, inputs=x, targets=targets, differentiable=True
            )

        return maps

    def attack(self, attack: str, budget: Budget) -> AttackResult:
        rng = self.data.rng("fragility", attack, f"eps={budget.eps!r}")
        common = dict(explain=self.explain, predict=self.predict)
        if attack == "random":
            return random_perturbation(budget, self.x0, self.maps0, self.labels, rng=rng, **common)
        objective = self._objective(attack)
        if not self.gradient:
            return random_search(
                objective, budget, self.x0, self.maps0, self.labels, steps=self.scorer.search_steps, rng=rng, **common
            )
        device = next(self.model.module.parameters()).device
        kind = self.data.kind
        return gradient_attack(
            objective,
            budget,
            self.x0,
            self.maps0,
            self.labels,
            surrogate=self._surrogate_maps(),
            iterations=self.scorer.iterations_for(kind),
            step=self.scorer.step_for(kind) * budget.eps,
            device=device,
            **common,
        )

    def measure(self, eps: float) -> dict[str, float]:
        """Every measure of every attack at ``eps``, and the sensitivities, keyed ``{attack}_{measure}``."""
        budget = Budget.for_fold(self.data, eps, self.scorer.norm)
        out: dict[str, float] = {}
        for attack in self.scorer.attacks_for(self.data.kind):
            if attack == "truth" and self.truth is None:
                continue
            result = self.attack(attack, budget)
            self.after[attack] = result.maps
            out.update({f"{attack}_{k}": v for k, v in self._compare(result, attack).items()})
        rng = self.data.rng("fragility", "samples", f"eps={eps!r}")
        start = torch.as_tensor(self.x0)
        xs = [budget.uniform(start, rng).numpy() for _ in range(self.scorer.samples)]
        found = sensitivities(self.x0, self.maps0, xs, [self.explain(x) for x in xs])
        out.update({m: float(np.nanmean(v)) if np.isfinite(v).any() else np.nan for m, v in found.items()})
        return out

    def _compare(self, result: AttackResult, attack: str) -> dict[str, float]:
        rel = relevance(torch.as_tensor(result.maps)).numpy()
        rng = self.data.rng("fragility", "compare", attack)
        self.by_example[f"{attack}_intersection"] = top_k_intersection(self.rel0, rel, self.k, rng)
        self.by_example[f"{attack}_spearman_abs"] = spearman_rows(self.rel0, rel)
        out = {
            "intersection": float(np.mean(self.by_example[f"{attack}_intersection"])),
            "spearman_abs": nanmean(self.by_example[f"{attack}_spearman_abs"]),
            "sign_flips": self._sign_flips(result.maps),
            "success": float(np.mean(result.kept)),
        }
        if self.data.kind == "image":
            shift = center_of_mass(torch.as_tensor(result.maps)) - center_of_mass(torch.as_tensor(self.maps0))
            out["center_shift"] = float(shift.norm(dim=1).mean())
        if self.truth is not None:
            after, auroc = self._truth_score(result.maps, self.truth)
            out.update(truth=after, truth_drop=self.truth_before - after)
            if self.data.kind == "tabular":
                out["truth_auroc"] = auroc
        return out

    def _signed_top(self) -> np.ndarray:
        """Each original map's top-k elements by ``|a|``, all channels (``k`` x channels), as a mask ``(n, elements)``:
        what :meth:`_sign_flips` compares, the same for every attack and eps."""
        a = self.maps0.reshape(len(self.maps0), -1)
        k = min(a.shape[1], self.k * (a.shape[1] // self.rel0.shape[1]))
        return top_k_mask(a, k, self.data.rng("fragility", "sign"))

    def _sign_flips(self, maps: np.ndarray) -> float:
        """Share of each example's top-k elements (all channels) by ``|a|`` whose sign changed, averaged."""
        n = len(maps)
        a, b = self.maps0.reshape(n, -1), maps.reshape(n, -1)
        top = self.signed_top  # the same count per row: the selections keep their rows
        before, after = a[top].reshape(n, -1), b[top].reshape(n, -1)
        signed = before != 0
        flips = (np.sign(before) != np.sign(after)) & signed
        counted = signed.sum(axis=1)
        return nanmean(np.where(counted > 0, flips.sum(axis=1) / np.maximum(counted, 1), np.nan))


#: The registered instance: ``--scorer fragility``.
FRAGILITY = register_scorer(FragilityScorer())
