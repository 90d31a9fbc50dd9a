"""Model-parameter randomisation sanity checks (Adebayo et al. 2018; sMPRT and eMPRT, Hedström et al. 2024).

The check asks whether a method's maps change when the explained model's weights are re-drawn
from their initialisers. The explained model (:func:`~synthbench.scoring.base.explained_kind`;
a method that explains none, such as a control, is judged on the input kind's default network)
declares its parametrised layers in forward order (:mod:`synthbench.models.randomise`); each
layer is re-drawn from its own initialiser with a seed of its own from the cell's seed, the same
for every method of the fold, so all methods are compared on the same randomised models.

Model states (``order``), over the chosen layers ``l_1 .. l_L`` in forward order:

``"top_down"`` (the 2018 test, cascading)
    state ``s`` randomises the ``s`` layers closest to the output, ``s = 1 .. L``;
``"bottom_up"`` (cascading, sMPRT's order)
    state ``s`` randomises the ``s`` layers closest to the input;
``"independent"``
    state ``s`` randomises layer ``l_s`` alone.

Each state's maps are compared with the trained model's, example by example
(:mod:`~synthbench.scoring.randomisation.similarity`: Spearman of ``|a|`` and of signed ``a``, top-k
intersection, and on images SSIM and the Spearman of HOG features), after the stated
preprocessing (``absolute``, ``normalise``, per example). The curve of each measure
(x = the state's number, 0 = the trained model explained again with a fresh random stream: 1 for
a deterministic method, the noise floor of a stochastic one, about 0 for the ``random`` control)
is stored; the values are each measure's mean over the states ``1 .. L`` and, as ``*_final``,
its value at the fully randomised model. Lower similarity passes the check; the chance
reference is the ``random`` control in the same run, redrawn for every model state (each state
explains with a fresh stream of the method, ``("randomisation", s)``), so its maps share no
covariance with the trained model's and it passes the check perfectly (Binder et al. 2023,
claim (i)): the check cannot rank methods by itself, which is why the report sets it beside the
ground truth. A method that reads no model and is not a control (a filter: ``mi``, ``anova``,
``mrmr``) is not rerun per state: its maps cannot change with the model, so every state compares
its cell's maps with themselves (it fails the check by construction, and reports leave it out of
the verdict's ordering).

With the top-down order over every layer, the cell also stores the curve ``activation_scale``
(:mod:`~synthbench.scoring.randomisation.activation_scale`, Binder et al.'s claim (ii): how far the randomised
output is carried by the units with large trained activations), the same for every method of
the fold.

``noise_samples > 0`` (sMPRT): each map is the mean of the method's maps of ``noise_samples``
noisy copies of the explained inputs (Gaussian noise of sd ``noise_level`` x the training
inputs' range, drawn once per cell and shared by every state), explained in one batch.

``variant="entropy"`` (eMPRT): two states only, trained and fully randomised; the value is the
mean over examples of the relative rise of the entropy of each map's histogram
(``n_bins`` equal bins between the map's own minimum and maximum, so the scale does not matter):
``(H_random - H_trained) / H_trained``; higher passes.

The explained class after randomisation (``target``): each example's label (default), or the
randomised model's own prediction (what the 2018 code did); a binary MLP has one logit.

Deliberate differences from Quantus 0.6 (``MPRT``, ``SmoothMPRT``, ``EfficientMPRT``), shown by
``tests/test_randomisation_quantus.py``: layers are randomised in forward order with their own
initialisers and a seed per layer (Quantus calls each module's ``reset_parameters`` after
``torch.manual_seed(seed + 1)``, so layers of one shape get identical weights); normalisation is
per example (Quantus' ``normalise`` divides a batch by one maximum); the mean over states leaves
out the trained model (Quantus' MPRT average includes its "original" step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

import numpy as np

from synthbench.methods.recipe import TARGET_RULES
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels, model_kind
from synthbench.models.randomise import randomised
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
from synthbench.scoring.randomisation.activation_scale import activation_scale_curve
from synthbench.scoring.randomisation.similarity import (
    IMAGE_MEASURES,
    TABLE_MEASURES,
    ComparisonOptions,
    preprocess,
    similarity_metrics,
)
from synthbench.scoring.reexplain import explain_again
from synthbench.scoring.truth.metrics import Metric

__all__ = ["RandomisationScorer", "RANDOMISATION", "SMPRT", "EMPRT", "ORDERS", "VARIANTS", "cascade", "map_entropy"]

#: The orders in which layers are randomised (see the module docstring).
ORDERS = ("top_down", "bottom_up", "independent")
#: ``"similarity"``: MPRT and sMPRT; ``"entropy"``: eMPRT.
VARIANTS = ("similarity", "entropy")


def cascade(names: list[str], order: str) -> list[tuple[str, ...]]:
    """The randomised layers of each state ``1 .. L`` of ``order`` over ``names`` (forward order)."""
    if order == "top_down":
        return [tuple(names[len(names) - s :]) for s in range(1, len(names) + 1)]
    if order == "bottom_up":
        return [tuple(names[:s]) for s in range(1, len(names) + 1)]
    if order == "independent":
        return [(name,) for name in names]
    raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")


def map_entropy(maps: np.ndarray, n_bins: int) -> np.ndarray:
    """Shannon entropy (nats) of each map's histogram, ``(n, *shape) -> (n,)``.

    ``n_bins`` equal bins between the map's own minimum and maximum (numpy's default range); a
    constant map has entropy 0.
    """
    flat = maps.reshape(len(maps), -1)
    out = np.empty(len(flat))
    for i, row in enumerate(flat):
        counts, _ = np.histogram(row, bins=n_bins)
        p = counts[counts > 0] / counts.sum()
        out[i] = float(-(p * np.log(p)).sum())
    return out


def _similarity_metrics(name: str) -> dict[str, Metric]:
    return similarity_metrics(
        name,
        "the trained and randomised models' maps",
        {"": "mean over the randomised states", "_final": "at the fully randomised model"},
    )


def _entropy_metrics(name: str) -> dict[str, Metric]:
    m = Metric(
        f"{name}_rise",
        "higher",
        "relative rise of the maps' histogram entropy from the trained to the fully randomised model (eMPRT)",
        limits=(-1.0, np.inf),
        unit="relative entropy rise",
        kinds=("tabular", "image"),
        control="random",
    )
    return {m.name: m}


@dataclass(frozen=True)
class RandomisationScorer(ComparisonOptions, Scorer):
    """Model-parameter randomisation: how much a method's maps change as the explained model's layers are re-drawn.

    Attributes
    ----------
    name : ``"randomisation"`` (MPRT), ``"smprt"``, ``"emprt"``
    variant : ``"similarity"`` or ``"entropy"`` (:data:`VARIANTS`; fixed per registered scorer)
    order : :data:`ORDERS` (similarity variant)
    target : the explained class after randomisation, a rule of
        :data:`~synthbench.methods.recipe.TARGET_RULES`
    absolute, normalise, top_k : how maps are compared
        (:class:`~synthbench.scoring.randomisation.similarity.ComparisonOptions`)
    noise_samples : sMPRT's noisy copies per map (0: plain maps)
    noise_level : sMPRT's noise sd as a share of the training inputs' range
    n_bins : eMPRT's histogram bins
    measures : the similarity measures to compute, of
        :data:`~synthbench.scoring.randomisation.similarity.IMAGE_MEASURES` (empty: every measure of the input kind;
        ``ssim`` and ``hog`` are computed on images only); fewer measures, less time per state
    layers : positions of the declared layers to randomise, in forward order (0: the layer
        nearest the input; empty: all); a position the model does not have is refused before
        anything runs (a network config's ``n_layers``)
    metrics : built from ``name`` and ``variant``
    """

    abilities: ClassVar[Abilities] = Abilities(
        judges_model=True,
        randomises_layers=True,
        judges_parameters=True,
        curve_axis="model state (layers re-drawn; 0 = the trained model explained again)",
        model_curves=("activation_scale",),
    )

    name: str = "randomisation"
    variant: str = field(default="similarity", metadata={"fixed": True})
    order: str = "top_down"
    target: str = "label"
    noise_samples: int = 0
    noise_level: float = 0.1
    n_bins: int = 100
    measures: tuple[str, ...] = ()
    layers: tuple[int, ...] = ()
    metrics: Mapping[str, Metric] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _choice("variant", self.variant, VARIANTS)
        _choice("order", self.order, ORDERS)
        _choice("target", self.target, TARGET_RULES)
        self.check_comparison()
        if int(self.noise_samples) != self.noise_samples or self.noise_samples < 0:
            raise ValueError(f"noise_samples must be a whole number >= 0, got {self.noise_samples}")
        if not self.noise_level > 0:
            raise ValueError(f"noise_level must be positive, got {self.noise_level}")
        if int(self.n_bins) != self.n_bins or self.n_bins < 2:
            raise ValueError(f"n_bins must be a whole number >= 2, got {self.n_bins}")
        measures = (self.measures,) if isinstance(self.measures, str) else tuple(self.measures)
        unknown = [m for m in measures if m not in IMAGE_MEASURES]
        if unknown or len(set(measures)) < len(measures):
            raise ValueError(f"measures must be distinct names of {', '.join(IMAGE_MEASURES)}, got {self.measures!r}")
        if measures and self.variant == "entropy":
            raise ValueError(f"{self.name} compares histogram entropies, not similarity measures: it takes no measures")
        object.__setattr__(self, "measures", measures)
        layers = (self.layers,) if isinstance(self.layers, int) else tuple(self.layers)
        if any(isinstance(i, bool) or int(i) != i or i < 0 for i in layers) or len(set(layers)) < len(layers):
            raise ValueError(
                f"layers must be distinct positions >= 0 (0: the layer nearest the input), got {self.layers!r}"
            )
        object.__setattr__(self, "layers", tuple(sorted(int(i) for i in layers)))
        if not self.metrics:
            build = _entropy_metrics if self.variant == "entropy" else _similarity_metrics
            object.__setattr__(self, "metrics", build(self.name))

    def params_for(self, kind: str) -> dict:
        """The parameters that define the values on ``kind`` inputs (recorded in the cell id)."""
        out = {
            "variant": self.variant,
            "target": self.target,
            "absolute": self.absolute,
            "normalise": self.normalise,
            "layers": list(self.layers),
            "seeds": "per layer",
            "init": "own initialiser",
        }
        if self.variant == "entropy":
            out["n_bins"] = int(self.n_bins)
        else:
            out.update(order=self.order, top_k=float(self.top_k))
        if self.noise_samples:
            out.update(noise_samples=int(self.noise_samples), noise_level=float(self.noise_level))
        if self.measures:  # every measure (the default) leaves the id as it was
            out["measures"] = list(self._measures_for(kind))
        return out

    def _measures_for(self, kind: str) -> tuple[str, ...]:
        """The measures computed on ``kind`` inputs: :attr:`measures` (all when empty) that apply to it."""
        applicable = IMAGE_MEASURES if kind == "image" else TABLE_MEASURES
        return tuple(m for m in self.measures or applicable if m in applicable)

    def check_layers(self, n_layers: int, what: str) -> None:
        """ValueError when :attr:`layers` names a position beyond ``n_layers`` layers of ``what``."""
        beyond = [i for i in self.layers if i >= n_layers]
        if beyond:
            raise ValueError(
                f"{self.name}: layers {', '.join(map(str, beyond))} do not exist; {what} has {n_layers} "
                f"parametrised layers (positions 0 to {n_layers - 1}, 0 nearest the input)"
            )

    def score(self, output: MethodOutput, data: FoldData, spec: MethodSpec, models: SharedModels) -> Scores:
        """The similarity (or entropy) values and curves of the method's maps over the randomised states."""
        if spec.explains(data.kind) is None and spec.needs_for(data.kind):
            raise SkipCell(
                f"{spec.name} needs several models ({', '.join(spec.needs_for(data.kind))}); the check "
                "randomises the one model a method explains"
            )
        kind, model = explained_model(spec, data, models)
        layers_of = model_kind(kind).layers
        if layers_of is None:
            raise ValueError(f"{self.name} randomises layers, and the {kind} {spec.name} explains declares none")
        declared = layers_of(model)
        self.check_layers(len(declared), f"the {kind}")
        names = [layer.name for i, layer in enumerate(declared) if not self.layers or i in self.layers]
        seeds = {n: data.random_state("randomisation", "layer", n) for n in names}
        states = [tuple(names)] if self.variant == "entropy" else cascade(names, self.order)
        final = self.order != "independent"  # the last cascading state is the fully randomised model
        noisy = self._noisy(data)

        def maps(state: tuple[str, ...], stream: tuple) -> np.ndarray:
            substitute = randomised(model, declared, state, seeds) if state else None
            return self._maps(spec, noisy, models, substitute, stream)

        trained = maps((), ())
        if spec.explains(data.kind) is None and not spec.control:  # its maps cannot change with the model: not rerun
            maps = lambda state, stream: trained  # noqa: E731
        if self.variant == "entropy":
            return self._entropy(trained, maps(states[0], ("randomisation", 1)))
        measures = self._measures_for(data.kind)
        if not measures:
            raise SkipCell(f"measures {', '.join(self.measures)} compare images only")
        rng = data.rng(self.name, spec.name, "top_k")
        compare = partial(self.comparison(trained, data.input_shape, measures).per_example, rng=rng)
        rows = [compare(maps((), ("randomisation", 0)))]  # per state, each measure per example (n,)
        rows += [compare(maps(state, ("randomisation", s))) for s, state in enumerate(states, start=1)]
        last = rows[-1] if final else compare(maps(tuple(names), ("randomisation", "all")))
        values, curves, per_example = {}, {}, {}
        x = np.arange(len(rows), dtype=np.float64)
        for measure in rows[0]:
            states_by_example = np.array([row[measure] for row in rows])  # (states + 1, n)
            curve = np.array([nanmean(r) for r in states_by_example])
            curves[measure] = Curve(x, curve)
            values[f"{self.name}_{measure}"] = float(np.mean(curve[1:]))
            values[f"{self.name}_{measure}_final"] = nanmean(last[measure])
            if states_by_example.shape[1] == len(data.X_explain):  # per-instance maps, not one global row
                per_example[f"{self.name}_{measure}"] = nanmean(states_by_example[1:], axis=0)
                per_example[f"{self.name}_{measure}_final"] = last[measure]
        if self.order == "top_down" and not self.layers:  # Binder's claim (ii), the same for every method of the fold
            curves["activation_scale"] = models.shared(
                ("activation_scale", kind), lambda: activation_scale_curve(model, declared, seeds, data)
            )
        kept = {k: v for k, v in values.items() if np.isfinite(v)}
        return Scores(kept, curves, per_example={k: v for k, v in per_example.items() if k in kept})

    def _noisy(self, data: FoldData) -> FoldData:
        """The fold with sMPRT's noisy copies as its explained rows (the fold itself without noise)."""
        if not self.noise_samples:
            return data
        n = int(self.noise_samples)
        sd = self.noise_level * float(data.X_train.max() - data.X_train.min())
        rng = data.rng("randomisation", "noise")
        X = np.concatenate(
            [data.X_explain + rng.normal(0.0, sd, data.X_explain.shape).astype(np.float32) for _ in range(n)]
        )
        return dataclasses.replace(data, X_explain=X, y_explain=np.tile(data.y_explain, n), relevant_local=None)

    def _maps(self, spec: MethodSpec, data: FoldData, models: SharedModels, model, stream: tuple) -> np.ndarray:
        """One state's maps ``(n, *shape)`` (or ``(1, *shape)`` global scores), sMPRT copies averaged."""
        out = explain_again(spec, data, models, model=model, stream=stream, target=self.target)
        if self.noise_samples and len(out) > 1:
            return np.asarray(out.reshape(int(self.noise_samples), -1, *out.shape[1:]).mean(axis=0))
        return out

    def _entropy(self, trained: np.ndarray, random: np.ndarray) -> Scores:
        """eMPRT: mean relative entropy rise over the examples whose trained map is not constant."""

        def entropy(maps: np.ndarray) -> np.ndarray:
            return map_entropy(preprocess(maps, absolute=self.absolute, normalise=self.normalise), self.n_bins)

        before, after = entropy(trained), entropy(random)
        ok = before > 0
        if not ok.any():
            return Scores()
        rises = np.where(ok, (after - before) / np.where(ok, before, 1.0), np.nan)  # (n,), NaN where undefined
        curve = Curve(np.array([0.0, 1.0]), np.array([before.mean(), after.mean()]))
        metric = f"{self.name}_rise"
        return Scores({metric: nanmean(rises)}, {"entropy": curve}, per_example={metric: rises})


def _choice(what: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"{what} must be one of {', '.join(valid)}, got {value!r}")


#: The registered instances: ``--scorer randomisation`` (MPRT, top-down cascading, the 2018 test),
#: ``--scorer smprt`` (bottom-up, maps averaged over 20 noisy copies) and ``--scorer emprt``.
RANDOMISATION = register_scorer(RandomisationScorer())
SMPRT = register_scorer(RandomisationScorer(name="smprt", order="bottom_up", noise_samples=20))
EMPRT = register_scorer(RandomisationScorer(name="emprt", variant="entropy", order="bottom_up"))
