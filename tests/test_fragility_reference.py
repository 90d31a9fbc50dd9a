"""The fragility scorer's sensitivities against captum 0.9 and Quantus 0.6, on identical perturbations.

Both sides run on one model (a small xor fold's trained ``sparse_mlp``, ``Linear(p, 256) ->
LeakyReLU -> Linear(256, 1)``, cast to float64 with its inputs for the direct cross-checks, so a
LeakyReLU kink within float32 rounding cannot take another slope on another CPU's kernels),
the same explained rows and the same perturbed copies: ``m``
uniform draws of the L-infinity budget (:meth:`~synthbench.scoring.fragility.budget.Budget.uniform`, radius
``EPS`` feature standard deviations) from a seeded numpy generator, handed to the reference
implementation through a ``perturb_func`` that returns them in the order it is called:

* captum's ``sensitivity_max`` expands every example ``c`` times with ``repeat_interleave``
  (rows ``i * c .. i * c + c - 1`` are copies of example ``i``) and calls ``perturb_func`` once
  per chunk of ``c`` samples (``c = n_perturb_samples`` without ``max_examples_per_batch``,
  otherwise ``max_examples_per_batch // n``, the last chunk the rest), then takes the element-wise
  maximum over the chunks. :func:`_captum_perturb_func` checks each call's input is that
  expansion and returns copies ``offset .. offset + c - 1`` of each example in the same layout.
* Quantus' ``MaxSensitivity``, ``AvgSensitivity`` and ``LocalLipschitzEstimate``
  (``evaluate_batch``) call ``perturb_func(arr=x.reshape(n, -1), indices=...)`` once per sample
  step on the whole batch (``batch_size=n``): :func:`_quantus_perturb_func` returns copy ``j`` at
  call ``j`` and records the calls.

Definitions (captum ``captum/metrics/_core/sensitivity.py``, Quantus
``quantus/metrics/robustness/*.py``): max-sensitivity ``max_j ||a_j - a||_F / ||a||_F`` (captum: the
norm of the original explanation, ``expl_inputs_norm_expanded``; Quantus: ``difference`` /
``fro_norm`` / ``fro_norm``), average-sensitivity the mean of the same ratio, the local Lipschitz
estimate ``max_j ||a_j - a||_2 / (||x_j - x||_2 + 1e-10)`` (Quantus' ``lipschitz_constant`` with
``distance_euclidean`` for both norms). Where they differ (an all-zero map; Quantus' label check on
a one-logit model) the difference is asserted.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import quantus
import torch
from captum.attr import IntegratedGradients, Saliency
from captum.metrics import sensitivity_max
from conftest import FLOAT64_RTOL

from synthbench.attribution import attribute
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, cell_fold
from synthbench.scoring import configure_scorer
from synthbench.scoring.fragility import sensitivity as S
from synthbench.scoring.fragility.budget import Budget

#: Perturbed copies per example.
M = 5
#: The budget's radius in feature standard deviations.
EPS = 0.1
#: The seed of the perturbations drawn for the direct cross-checks.
DRAW_SEED = 2024
#: Tolerance of the direct cross-checks on the same maps, every side in float64.
RTOL = 1e-9
#: Tolerance against captum's own explainer in float64: its integrated gradients weigh the steps by
#: float32 quadrature weights (``torch.tensor(step_sizes)``), which the ratio of a small change
#: amplifies (observed: 3e-9 apart); the project's float64 bound (``FLOAT64_RTOL``).
RTOL_CAPTUM_EXPLAINER = FLOAT64_RTOL
#: Tolerance of the scorer end to end, which explains with the fold's float32 model (saliency through
#: LeakyReLU: a product of float32 weights; observed: up to 2e-7).
RTOL_FLOAT32 = 1e-5
#: Each attribution function's parameters, on both sides.
PARAMS = {"saliency": {}, "integrated_gradients": {"n_steps": 50}}


@dataclasses.dataclass
class Fold:
    """The small xor fold, its trained MLP, the draws and synthbench's maps of them."""

    data: FoldData
    models: SharedModels
    module: torch.nn.Module  # the trained float32 network
    module64: torch.nn.Module  # the same, cast to float64: the direct cross-checks run on it
    budget: Budget
    perturbed: list[np.ndarray]  # M arrays (n, p), copy j of every example in the j-th

    @property
    def x(self) -> np.ndarray:
        return np.asarray(self.data.X_explain, dtype=np.float64)

    @property
    def n(self) -> int:
        return len(self.data.X_explain)

    def maps(self, name: str, x: np.ndarray) -> np.ndarray:
        """synthbench's ``name`` maps of ``x`` (the one logit) on the float64 twin."""
        return attribute(name, self.module64, torch.as_tensor(x, dtype=torch.float64), **PARAMS[name]).numpy()

    def ours(self, name: str) -> dict[str, np.ndarray]:
        """:func:`sensitivities` of the ``name`` maps on the drawn copies."""
        return S.sensitivities(
            self.x, self.maps(name, self.x), self.perturbed, [self.maps(name, xp) for xp in self.perturbed]
        )


@pytest.fixture(scope="module")
def fold() -> Fold:
    data, _ = cell_fold("xor", n_samples=300, seed=3, n_decoys=10, n_folds=2, fold=0)
    models = SharedModels(data, preset="sparse_mlp")
    module = models.get("mlp").module
    assert not module.training
    assert module[-1].out_features == 1  # the binary MLP's one logit (captum's target 0)
    budget = Budget.for_fold(data, EPS, "linf")
    rng = np.random.default_rng(DRAW_SEED)
    perturbed = [budget.uniform(torch.as_tensor(data.X_explain), rng).numpy().astype(np.float64) for _ in range(M)]
    return Fold(data, models, module, copy.deepcopy(module).double(), budget, perturbed)


#: Quantus seeds torch's and numpy's global generators: every test here leaves both as it found them.
pytestmark = pytest.mark.usefixtures("global_random_state_restored")


# --------------------------------------------------------------------------------------------------------------------
# captum
# --------------------------------------------------------------------------------------------------------------------


def _captum_perturb_func(
    x: np.ndarray, perturbed: list[np.ndarray], radius: float, calls: list[int]
) -> Callable[[torch.Tensor, float], torch.Tensor]:
    """captum's ``perturb_func`` returning the pre-drawn copies, chunk after chunk, in captum's row layout.

    captum passes ``repeat_interleave(x, c)`` (``n * c`` rows) and the radius; the answer's row
    ``i * c + s`` is copy ``offset + s`` of example ``i``. ``calls`` gets each call's ``c``.
    """
    original = torch.as_tensor(x)
    n = len(x)

    def perturb_func(inputs: torch.Tensor, perturb_radius: float) -> torch.Tensor:
        assert perturb_radius == radius
        assert inputs.shape[0] % n == 0
        c = inputs.shape[0] // n
        assert torch.equal(inputs, torch.repeat_interleave(original, c, dim=0)), "captum's expansion changed"
        offset = sum(calls)
        assert offset + c <= len(perturbed), "captum asked for more samples than drawn"
        calls.append(c)
        chunk = np.stack(perturbed[offset : offset + c], axis=1)  # (n, c, *shape): example-major, as captum expands
        return torch.as_tensor(chunk.reshape(n * c, *x.shape[1:]), dtype=inputs.dtype)

    return perturb_func


def _captum_explainer(name: str, module: torch.nn.Module) -> Callable[..., torch.Tensor]:
    explainer = {"saliency": Saliency, "integrated_gradients": IntegratedGradients}[name](module)

    def explain(inputs: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return explainer.attribute(inputs, **kwargs, **PARAMS[name])

    return explain


def _as_captum(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    """``fn`` of one tensor as captum's ``explanation_func``: captum passes the original inputs as a
    one-tensor tuple and iterates over the answer as a tuple (``for expl_input in expl_inputs``, not
    re-formatted: a bare tensor would be iterated row by row), the perturbed inputs as a tensor."""

    def explain(inputs: torch.Tensor | tuple[torch.Tensor, ...], **kwargs: Any) -> Any:
        if isinstance(inputs, tuple):
            return tuple(fn(x, **kwargs) for x in inputs)
        return fn(inputs, **kwargs)

    return explain


def _synthbench_explainer(name: str, module: torch.nn.Module) -> Callable[..., Any]:
    return _as_captum(lambda x, target=0: attribute(name, module, x, target, **PARAMS[name]))


def _captum_sensitivity_max(
    explain: Callable[..., torch.Tensor],
    x: np.ndarray,
    perturbed: list[np.ndarray],
    max_examples_per_batch: int | None = None,
) -> tuple[np.ndarray, list[int]]:
    """captum's per-example max-sensitivity on the pre-drawn copies, and the chunk sizes it asked for."""
    calls: list[int] = []
    values = sensitivity_max(
        explain,
        torch.as_tensor(x),
        perturb_func=_captum_perturb_func(x, perturbed, EPS, calls),
        perturb_radius=EPS,
        n_perturb_samples=len(perturbed),
        max_examples_per_batch=max_examples_per_batch,
        target=0,
    )
    assert sum(calls) == len(perturbed)
    return values.detach().numpy().astype(np.float64), calls


@pytest.mark.parametrize("per_batch", [None, 2], ids=["one_chunk", "chunks_of_2"])
@pytest.mark.parametrize("name", ["saliency", "integrated_gradients"])
def test_max_sensitivity_equals_captum(fold: Fold, name: str, per_batch: int | None):
    """Per example, synthbench's max-sensitivity equals captum's ``sensitivity_max`` on the same copies,
    with captum's own explainer (``Saliency``, ``IntegratedGradients``, target 0) and with synthbench's
    attribution function as the explainer; ``chunks_of_2``: ``max_examples_per_batch = 2 n``, so
    captum asks for the samples in chunks 2, 2, 1 and takes the maximum over them."""
    ours = fold.ours(name)["max_sensitivity"]
    assert np.isfinite(ours).all() and (ours > 0).all()
    limit = None if per_batch is None else per_batch * fold.n
    theirs, calls = _captum_sensitivity_max(_captum_explainer(name, fold.module64), fold.x, fold.perturbed, limit)
    assert calls == ([M] if per_batch is None else [2, 2, 1])
    np.testing.assert_allclose(ours, theirs, rtol=RTOL_CAPTUM_EXPLAINER, atol=0)
    same_maps, _ = _captum_sensitivity_max(_synthbench_explainer(name, fold.module64), fold.x, fold.perturbed, limit)
    np.testing.assert_allclose(ours, same_maps, rtol=RTOL, atol=0)


def test_captum_rows_line_up_with_the_draws(fold: Fold):
    """The copies reach captum's explainer in the layout assumed: with a recording explainer the
    perturbed batch of each chunk is ``stack(copies, axis=1)``, example-major, never the transposed
    (sample-major) order."""
    seen: list[torch.Tensor] = []

    def recording(x: torch.Tensor, target: int = 0) -> torch.Tensor:
        seen.append(x.clone())
        return attribute("saliency", fold.module64, x, target)

    _, calls = _captum_sensitivity_max(_as_captum(recording), fold.x, fold.perturbed, 2 * fold.n)
    assert len(seen) == 1 + len(calls)  # the originals, then one batch per chunk
    torch.testing.assert_close(seen[0], torch.as_tensor(fold.x), rtol=0, atol=0)
    offset = 0
    for batch, c in zip(seen[1:], calls):
        expected = np.stack(fold.perturbed[offset : offset + c], axis=1).reshape(fold.n * c, -1)
        np.testing.assert_array_equal(batch.numpy(), expected)
        offset += c


# --------------------------------------------------------------------------------------------------------------------
# Quantus
# --------------------------------------------------------------------------------------------------------------------


def _quantus_perturb_func(x: np.ndarray, perturbed: list[np.ndarray], calls: list[tuple[int, ...]]):
    """Quantus' ``perturb_func``: copy ``j`` of the whole batch at call ``j``; ``calls`` gets each ``arr``'s shape."""
    n = len(x)
    flat = x.reshape(n, -1)

    def perturb_func(arr: np.ndarray, indices: np.ndarray, **kwargs: Any) -> np.ndarray:
        assert len(calls) < len(perturbed), "Quantus asked for more samples than drawn"
        np.testing.assert_array_equal(arr, flat)  # the whole unperturbed batch, flattened
        assert indices.shape == flat.shape
        out = perturbed[len(calls)].reshape(n, -1).astype(arr.dtype)
        calls.append(tuple(arr.shape))
        return out

    return perturb_func


def _quantus_explain_func(fold: Fold, name: str) -> Callable[..., np.ndarray]:
    """The ``name`` maps on the float64 twin of the model Quantus holds (Quantus' label check casts the
    inputs it predicts on to float32, so it is handed the float32 network where it checks labels)."""

    def explain_func(model: torch.nn.Module, inputs: np.ndarray, targets: np.ndarray, **kwargs: Any) -> np.ndarray:
        return fold.maps(name, np.asarray(inputs, dtype=np.float64))

    return explain_func


QUANTUS_METRICS = {
    "max_sensitivity": lambda **kw: quantus.MaxSensitivity(**kw),
    "avg_sensitivity": lambda **kw: quantus.AvgSensitivity(**kw),
    "local_lipschitz": lambda **kw: quantus.LocalLipschitzEstimate(normalise=False, abs=False, **kw),
}


def _quantus(
    fold: Fold,
    measure: str,
    *,
    name: str = "saliency",
    return_nan: bool = False,
    perturbed: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    perturbed = fold.perturbed if perturbed is None else perturbed
    calls: list[tuple[int, ...]] = []
    metric = QUANTUS_METRICS[measure](
        nr_samples=len(perturbed),
        return_nan_when_prediction_changes=return_nan,
        disable_warnings=True,
        perturb_func=_quantus_perturb_func(fold.x, perturbed, calls),
    )
    values = metric(
        model=fold.module if return_nan else fold.module64,
        x_batch=fold.x,
        y_batch=np.asarray(fold.data.y_explain),
        explain_func=_quantus_explain_func(fold, name),
        batch_size=fold.n,
    )
    return np.asarray(values, dtype=np.float64), calls


@pytest.mark.parametrize("measure", list(QUANTUS_METRICS))
def test_sensitivities_equal_quantus(fold: Fold, measure: str):
    """Per example, each of synthbench's sensitivities equals Quantus' metric on the same copies
    (``MaxSensitivity`` and ``AvgSensitivity`` with their defaults: ``difference``, ``fro_norm`` /
    ``fro_norm``, no normalising, signed; ``LocalLipschitzEstimate`` with ``normalise=False``,
    ``abs=False``), every copy counted. Quantus calls ``perturb_func`` once per sample step on the
    whole batch (``batch_size = n``): ``M`` calls of shape ``(n, p)``."""
    ours = fold.ours("saliency")[measure]
    theirs, calls = _quantus(fold, measure)
    assert calls == [(fold.n, fold.x.shape[1])] * M
    assert np.isfinite(ours).all() and (ours > 0).all()
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=0)


def test_quantus_prediction_check_is_blind_on_a_one_logit_model(fold: Fold):
    """Quantus' ``return_nan_when_prediction_changes`` compares ``predict(x).argmax(axis=-1)`` before and
    after: on the one-logit binary MLP both are always 0, so even copies that flip the label are
    counted, as synthbench counts every copy. Twenty-five standard deviations flip some labels; no
    value becomes NaN."""
    far = Budget.for_fold(fold.data, 25.0, "linf")
    rng = np.random.default_rng(DRAW_SEED + 1)
    perturbed = [far.uniform(torch.as_tensor(fold.x), rng).numpy() for _ in range(2)]
    labels = np.asarray(fold.models.get("mlp").predict(fold.x))
    flipped = np.any([np.asarray(fold.models.get("mlp").predict(xp)) != labels for xp in perturbed], axis=0)
    assert flipped.any()
    theirs, _ = _quantus(fold, "max_sensitivity", return_nan=True, perturbed=perturbed)
    assert np.isfinite(theirs).all()
    ours = S.sensitivities(
        fold.x, fold.maps("saliency", fold.x), perturbed, [fold.maps("saliency", xp) for xp in perturbed]
    )["max_sensitivity"]
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=0)


def test_all_zero_map_nan_here_unnormalised_in_captum_inf_in_quantus(fold: Fold):
    """An example whose map is all zero (here ``relu(x)`` of the zero vector) has no relative
    sensitivity: synthbench returns NaN (the scorer's mean skips it); captum replaces the zero norm
    by 1 (``torch.where(expl_inputs_norm_expanded == 0.0, 1.0, ...)``) and returns ``max_j ||a_j||``;
    Quantus divides by zero, ``inf`` (``np.nanmax``). The other examples agree."""
    x = fold.x[:4].copy()
    x[0] = 0.0
    perturbed = [fold.budget.uniform(torch.as_tensor(x), np.random.default_rng(j)).numpy() for j in range(3)]
    relu_maps = [np.maximum(p, 0.0).astype(np.float64) for p in perturbed]
    ours = S.sensitivities(x, np.maximum(x, 0.0), perturbed, relu_maps)["max_sensitivity"]
    assert np.isnan(ours[0]) and np.isfinite(ours[1:]).all()

    theirs, _ = _captum_sensitivity_max(_as_captum(lambda x, target=0: torch.relu(x)), x, perturbed)
    np.testing.assert_allclose(theirs[0], max(np.linalg.norm(m[0]) for m in relu_maps), rtol=RTOL)
    np.testing.assert_allclose(ours[1:], theirs[1:], rtol=RTOL)

    calls: list[tuple[int, ...]] = []
    metric = quantus.MaxSensitivity(
        nr_samples=len(perturbed),
        return_nan_when_prediction_changes=False,
        disable_warnings=True,
        perturb_func=_quantus_perturb_func(x, perturbed, calls),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        quantus_values = np.asarray(
            metric(
                model=fold.module64,
                x_batch=x,
                y_batch=np.asarray(fold.data.y_explain[:4]),
                explain_func=lambda model, inputs, targets, **kw: np.maximum(inputs, 0.0),
                batch_size=len(x),
            ),
            dtype=np.float64,
        )
    assert quantus_values[0] == np.inf
    np.testing.assert_allclose(ours[1:], quantus_values[1:], rtol=RTOL)


# --------------------------------------------------------------------------------------------------------------------
# The scorer end to end
# --------------------------------------------------------------------------------------------------------------------


def test_scorer_max_sensitivity_is_the_mean_of_captum(fold: Fold):
    """The stored ``fragility_max_sensitivity`` of a saliency cell (eps 0.1, 3 samples, the random attack
    only) is the mean over the explained rows of captum's ``sensitivity_max`` (``Saliency``, target 0)
    on the scorer's own draws: ``data.rng("fragility", "samples", f"eps={eps!r}")``, ``samples`` calls of
    :meth:`Budget.uniform` on the (un-subsetted) explained rows."""
    scorer = configure_scorer(
        "fragility", {"eps": (0.1,), "attacks": ("random",), "samples": 3, "iterations": 1, "search_steps": 1}
    )
    spec = get_method("saliency")
    data, models = fold.data, fold.models
    scores = scorer.score(run_method(spec, data, models), data, spec, models)

    subset = data.first(scorer.max_examples)
    assert subset is data  # max_examples >= the explained rows: every row is measured
    budget = Budget.for_fold(subset, 0.1, scorer.norm)
    rng = subset.rng("fragility", "samples", "eps=0.1")  # _Cell.measure's stream: f"eps={eps!r}"
    start = torch.as_tensor(subset.X_explain)
    draws = [budget.uniform(start, rng).numpy() for _ in range(scorer.samples)]
    theirs, calls = _captum_sensitivity_max(_captum_explainer("saliency", fold.module), subset.X_explain, draws)
    assert calls == [3]
    assert scores["fragility_max_sensitivity"] == pytest.approx(float(np.mean(theirs)), rel=RTOL_FLOAT32)
    curve = scores.curves["max_sensitivity"]
    np.testing.assert_allclose(np.asarray(curve.x), [0.1])
    assert np.asarray(curve.values).ravel()[-1] == pytest.approx(float(np.mean(theirs)), rel=RTOL_FLOAT32)
