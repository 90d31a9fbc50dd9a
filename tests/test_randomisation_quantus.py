"""Model-parameter randomisation scorers against Quantus 0.6 (MPRT, SmoothMPRT, EfficientMPRT, RandomLogit).

Both sides run on one model (the small tabular fold's trained MLP, ``Linear(8, 16) -> Linear(16, 16)
-> Linear(16, 1)``), the same explained rows and the same explanation function: the ``gradient``
method's recipe (:meth:`~synthbench.methods.recipe.AttributionRecipe.explain`), which Quantus
calls through :func:`_synthbench_explain_func` on the (randomised) ``torch`` module it passes in.

Where the definitions can be aligned the values must agree per example; where they differ on
purpose (issue 22 §6: Quantus' seeding, batch normalisation, its mean including the unrandomised
model, SmoothMPRT's explainer and noise, RandomLogit's class choice) the difference is asserted,
never skipped:

* Model states. Quantus re-draws each module with ``reset_parameters()`` after
  ``torch.manual_seed(seed + 1)`` (``PyTorchModel.get_random_layer_generator``); synthbench re-draws
  each declared layer from its kind's own initialiser with a seed of its own. For the cross-checks
  the MLP kind's layer declaration is replaced (in :mod:`synthbench.scoring.randomisation.model` only,
  :func:`quantus_aligned`) by the same layers with Quantus' re-draw as their initialiser, so both
  sides explain identical model states; the cascade, the explaining, the comparison and the means
  are synthbench's own.
* Spearman correlation is invariant to dividing a map by a positive number, so per-example (synthbench)
  and per-batch (Quantus) normalisation give the same similarities; the difference is shown on the
  normalised maps themselves.
* Quantus' global random state (``torch.manual_seed``, ``np.random.seed``) is saved and restored
  around every test (``global_random_state_restored`` in conftest.py).
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
from quantus.functions.complexity_func import discrete_entropy
from quantus.functions.n_bins_func import freedman_diaconis_rule
from quantus.functions.similarity_func import correlation_spearman
from quantus.helpers.model.pytorch_model import PyTorchModel

from synthbench.methods import get_method, run_method
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels
from synthbench.models.mlp import MLPConfig, TrainedMLP, build_seeded_mlp, mlp_layers
from synthbench.models.randomise import Layer, randomised
from synthbench.protocol import FoldData
from synthbench.scoring.randomisation import model as R
from synthbench.scoring.randomisation import similarity as S
from synthbench.scoring.randomisation.similarity import preprocess
from synthbench.testing import small_fold

#: Quantus' default ``seed`` of every randomisation metric (its modules are reset after
#: ``torch.manual_seed(seed + 1)``).
QUANTUS_SEED = 42
#: SmoothMPRT's maps per state in the cross-check (Quantus: ``nr_samples - 1`` noisy copies and the clean input).
NR_SAMPLES = 4


# --------------------------------------------------------------------------------------------------------------------
# Shared set-up
# --------------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Fold:
    """The small tabular fold, its trained MLP and the explained method."""

    data: FoldData
    models: SharedModels
    trained: TrainedMLP
    spec: MethodSpec

    @property
    def X(self) -> np.ndarray:
        """The explained rows, float32 ``(n, p)``."""
        return self.data.X_explain

    @property
    def y(self) -> np.ndarray:
        """The explained rows' labels."""
        return np.asarray(self.data.y_explain)

    @property
    def n(self) -> int:
        """The number of explained rows (Quantus' ``batch_size``, so each state is explained in one batch)."""
        return len(self.data.X_explain)


@pytest.fixture(scope="module")
def fold() -> Fold:
    data = small_fold("tabular")
    models = SharedModels(data)
    trained = models.get("mlp")
    assert [type(m).__name__ for m in trained.module] == [
        "GaussianNoise",
        "Linear",
        "LeakyReLU",
        "Linear",
        "LeakyReLU",
        "Linear",
    ]
    assert trained.module[-1].out_features == 1  # the binary MLP's one logit
    return Fold(data, models, trained, get_method("gradient"))


#: Quantus seeds torch's and numpy's global generators: every test here leaves both as it found them.
pytestmark = pytest.mark.usefixtures("global_random_state_restored")


def _synthbench_explain_func(fold: Fold) -> Callable[..., np.ndarray]:
    """Quantus' ``explain_func``: the method's recipe on the torch module Quantus passes, as numpy float64.

    The module replaces the trained MLP's (a shallow copy keeps its classes and device). The
    recipe's target rule chooses the explained output, so on the one-logit MLP Quantus' ``targets``
    are not read (every rule explains the one logit).
    """
    params = fold.spec.params_for(fold.data.kind)

    def explain_func(model: torch.nn.Module, inputs: np.ndarray, targets: np.ndarray, **kwargs: Any) -> np.ndarray:
        network = copy.copy(fold.trained)
        network.module = model
        maps = fold.spec.recipe.explain(
            network, fold.data, np.random.default_rng(0), params, inputs=np.asarray(inputs, dtype=np.float32)
        )
        return maps.detach().cpu().numpy().astype(np.float64)

    return explain_func


def _quantus_reset(layer: torch.nn.Module, generator: torch.Generator) -> None:
    """Quantus' re-draw of one module as a synthbench initialiser: ``reset_parameters()`` after
    ``torch.manual_seed(QUANTUS_SEED + 1)``; synthbench's per-layer ``generator`` is not used, and torch's
    global generator is restored afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(QUANTUS_SEED + 1)
        layer.reset_parameters()


def _quantus_layers(model: TrainedMLP) -> tuple[Layer, ...]:
    """The MLP's declared layers (:func:`~synthbench.models.mlp.mlp_layers`) with Quantus' re-draw as initialiser."""
    return tuple(dataclasses.replace(layer, initialise=_quantus_reset) for layer in mlp_layers(model))


@pytest.fixture
def quantus_aligned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The randomisation scorers see the MLP kind with :func:`_quantus_layers` as its layer declaration."""
    real = R.model_kind

    def model_kind(name: str):
        kind = real(name)
        return dataclasses.replace(kind, layers=_quantus_layers) if name == "mlp" else kind

    monkeypatch.setattr(R, "model_kind", model_kind)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[np.ndarray]]:
    """The scorer's per-example values as it computes them: ``similarity`` per measure (one array per
    comparison, in order: x = 0, then the states) and ``entropy`` (one array per :func:`map_entropy` call)."""
    out: dict[str, list[np.ndarray]] = {}
    real_per_example, real_entropy = S.Comparison.per_example, R.map_entropy

    def per_example(self: S.Comparison, other: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        values = real_per_example(self, other, rng)
        for measure, v in values.items():
            out.setdefault(measure, []).append(np.array(v))
        return values

    def map_entropy(maps: np.ndarray, n_bins: int) -> np.ndarray:
        values = real_entropy(maps, n_bins)
        out.setdefault("entropy", []).append(np.array(values))
        return values

    monkeypatch.setattr(S.Comparison, "per_example", per_example)
    monkeypatch.setattr(R, "map_entropy", map_entropy)
    return out


def _score(scorer: R.RandomisationScorer, fold: Fold):
    return scorer.score(run_method(fold.spec, fold.data, fold.models), fold.data, fold.spec, fold.models)


def _on_fold(
    metric: Callable[..., Any], fold: Fold, y_batch: np.ndarray, explain_func: Callable[..., Any], **kwargs: Any
):
    """A Quantus metric run on the fold's trained network and explained inputs, in one batch, with labels
    ``y_batch`` and ``explain_func`` (``kwargs``: the metric's other call arguments)."""
    return metric(
        model=fold.trained.module,
        x_batch=fold.X,
        y_batch=y_batch,
        explain_func=explain_func,
        batch_size=fold.n,
        **kwargs,
    )


def _layer_names(fold: Fold) -> list[str]:
    return [layer.name for layer in mlp_layers(fold.trained)]


def _quantus_states(module: torch.nn.Module, order: str) -> list[tuple[str, dict[str, torch.Tensor]]]:
    """Quantus' model states: (the module it just reset, a copy of the model's weights), in its order."""
    wrapped = PyTorchModel(model=module, channel_first=True, softmax=False)
    return [
        (name, {k: v.clone() for k, v in model.state_dict().items()})
        for name, model in wrapped.get_random_layer_generator(order=order, seed=QUANTUS_SEED)
    ]


# --------------------------------------------------------------------------------------------------------------------
# MPRT (top-down cascading)
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["top_down", "bottom_up"])
def test_aligned_initialiser_reproduces_quantus_model_states(fold: Fold, order: str):
    """With Quantus' re-draw as the layers' initialiser, synthbench's cascade (:func:`cascade`) and
    :func:`randomised` give Quantus' model states, state by state, bit for bit."""
    names = _layer_names(fold)
    quantus_states = _quantus_states(fold.trained.module, order)
    states = R.cascade(names, order)
    assert len(states) == len(quantus_states) == 3
    for state, (reset, weights) in zip(states, quantus_states):
        assert reset in state  # the module Quantus reset last is one of the state's randomised layers
        ours = randomised(fold.trained, _quantus_layers(fold.trained), state, dict.fromkeys(state, 0)).module
        for key, value in ours.state_dict().items():
            assert torch.equal(value, weights[key]), f"{order}, state {state}: {key} differs from Quantus'"


@pytest.mark.parametrize("absolute", [True, False])
def test_mprt_per_state_similarities_equal_quantus_per_layer_scores(fold: Fold, quantus_aligned, recorded, absolute):
    """Top-down MPRT, Spearman: synthbench's similarity of every example at every state (x = 0, the trained
    model explained again, then 1..L) equals Quantus' score of the example at "original" and each layer.

    ``absolute``: Quantus' ``abs`` takes ``|a|`` before its similarity, which is synthbench's
    ``spearman_abs``; without it, synthbench's signed ``spearman``. Quantus normalises the batch by
    its maximum, synthbench each example by its own ("max"); Spearman does not see either.
    """
    scorer = R.RandomisationScorer(order="top_down", normalise="max", absolute=absolute)
    scores = _score(scorer, fold)
    measure = "spearman_abs" if absolute else "spearman"
    per_state = recorded[measure]

    metric = quantus.MPRT(
        layer_order="top_down",
        seed=QUANTUS_SEED,
        similarity_func=correlation_spearman,
        abs=absolute,
        normalise=True,
        disable_warnings=True,
    )
    theirs = _on_fold(metric, fold, fold.y, _synthbench_explain_func(fold))
    names = _layer_names(fold)
    assert list(theirs) == ["original"] + names[::-1]  # top-down: the output layer first
    assert len(per_state) == len(theirs) == 4
    for s, (step, values) in enumerate(theirs.items()):
        np.testing.assert_allclose(per_state[s], values, rtol=0, atol=1e-9, err_msg=f"state {s} ({step})")
    curve = scores.curves[measure].values[:, 0]
    np.testing.assert_allclose(curve, [np.mean(v) for v in theirs.values()], rtol=0, atol=1e-12)
    assert curve[0] == 1.0  # the gradient is deterministic: the trained model explained again is the same map
    assert scores[f"randomisation_{measure}_final"] == pytest.approx(np.mean(theirs[names[0]]), abs=1e-12)


def test_mprt_mean_quantus_includes_original_synthbench_leaves_it_out(fold: Fold, quantus_aligned):
    """Quantus' average correlation of an example is over "original" and the L layers
    (``recompute_average_correlation_per_sample`` skips a key ``"orig"`` that MPRT never writes);
    synthbench's value is the mean over the states 1..L. With a deterministic method "original" is 1, so
    Quantus' mean is ``(1 + L m) / (L + 1)`` for synthbench's mean ``m``: higher, a worse verdict."""
    scores = _score(R.RandomisationScorer(order="top_down"), fold)
    ours = scores["randomisation_spearman_abs"]
    curve = scores.curves["spearman_abs"].values[:, 0]
    n_layers = len(curve) - 1
    assert ours == pytest.approx(curve[1:].mean(), abs=1e-12)

    metric = quantus.MPRT(
        layer_order="top_down",
        seed=QUANTUS_SEED,
        similarity_func=correlation_spearman,
        abs=True,
        normalise=True,
        return_average_correlation=True,
        disable_warnings=True,
    )
    per_example = _on_fold(metric, fold, fold.y, _synthbench_explain_func(fold))
    theirs = float(np.mean(per_example))
    assert theirs == pytest.approx((1.0 + n_layers * ours) / (n_layers + 1), abs=1e-9)
    assert theirs == pytest.approx(curve.mean(), abs=1e-9)
    difference = theirs - ours
    assert difference == pytest.approx((1.0 - ours) / (n_layers + 1), abs=1e-9)
    assert difference > 0.1, f"Quantus {theirs:.4f} vs synthbench {ours:.4f}: the 'original' step adds {difference:.4f}"


def test_quantus_gives_layers_of_one_shape_identical_weights_synthbench_does_not():
    """A depth-3 MLP has two ``Linear(16, 16)``. Quantus resets each after the same ``torch.manual_seed``,
    so at its fully randomised state both hold the same weights (and torch's global generator is
    re-seeded); synthbench draws each from a seed of its own and leaves the global generator alone."""
    config = MLPConfig(depth=3)
    module = build_seeded_mlp(6, config, torch.Generator().manual_seed(3)).eval()
    model = TrainedMLP(
        module=module,
        config=config,
        n_features_in_=6,
        epochs_run=0,
        best_epoch=0,
        history={},
        validation_indices=np.arange(0),
        device=torch.device("cpu"),
    )
    layers = mlp_layers(model)
    names = [layer.name for layer in layers]
    assert names == ["1", "3", "5", "7"]
    square = [name for name in names if tuple(module.get_submodule(name).weight.shape) == (16, 16)]
    assert square == ["3", "5"]

    torch.manual_seed(0)
    _, last = _quantus_states(module, "bottom_up")[-1]
    after_quantus = torch.rand(3)
    torch.manual_seed(1)
    _quantus_states(module, "bottom_up")
    assert torch.equal(torch.rand(3), after_quantus)  # whatever the seed before, Quantus left the same state
    for part in ("weight", "bias"):
        assert torch.equal(last[f"3.{part}"], last[f"5.{part}"])

    small = small_fold("tabular")
    seeds = {name: small.random_state("randomisation", "layer", name) for name in names}
    torch.manual_seed(7)
    before = torch.random.get_rng_state()
    ours = randomised(model, layers, names, seeds).module
    assert torch.equal(torch.random.get_rng_state(), before)
    assert not torch.equal(ours.get_submodule("3").weight, ours.get_submodule("5").weight)
    for name in names:  # every layer re-drawn, none kept
        assert not torch.equal(ours.get_submodule(name).weight, module.get_submodule(name).weight)


def test_quantus_draws_every_layer_from_one_stream_synthbench_from_one_seed_each(fold: Fold):
    """On the fold's MLP (no two layers of one shape) Quantus' layers are still not independent: each reset
    restarts the same stream, so ``Linear(8, 16)``'s 128 weights are the first 128 of ``Linear(16, 16)``'s,
    rescaled (Kaiming bounds ``1 / sqrt(fan_in)``: ratio ``sqrt(2)``), and the output layer's 16 weights
    the first 16. synthbench's layers, each from its own seed (the scorer's), are uncorrelated."""
    names = _layer_names(fold)
    _, last = _quantus_states(fold.trained.module, "bottom_up")[-1]
    first, middle, output = (last[f"{name}.weight"].flatten().numpy() for name in names)
    np.testing.assert_allclose(first, np.sqrt(2.0) * middle[: first.size], rtol=1e-5)
    np.testing.assert_allclose(np.corrcoef(output, middle[: output.size])[0, 1], 1.0, rtol=1e-6)

    seeds = {name: fold.data.random_state("randomisation", "layer", name) for name in names}
    ours = randomised(fold.trained, mlp_layers(fold.trained), names, seeds).module
    first, middle, output = (ours.get_submodule(name).weight.detach().flatten().numpy() for name in names)
    assert abs(np.corrcoef(first, middle[: first.size])[0, 1]) < 0.3
    assert abs(np.corrcoef(output, middle[: output.size])[0, 1]) < 0.7


def test_quantus_normalises_a_batch_by_one_maximum_synthbench_each_example(fold: Fold):
    """Quantus' default ``normalise_by_max`` divides the whole batch by its largest ``|a|``: an example's
    normalised map depends on the other examples of its batch (only one map reaches 1). synthbench's
    ``normalise="max"`` scales each example by its own maximum, whatever the batch."""
    metric = quantus.MPRT(abs=True, normalise=True, disable_warnings=True)
    metric.explain_func, metric.explain_func_kwargs = _synthbench_explain_func(fold), {}
    batch = metric.explain_batch(fold.trained.module, fold.X, fold.y)
    alone = metric.explain_batch(fold.trained.module, fold.X[:1], fold.y[:1])
    peaks = batch.max(axis=1)
    assert np.sum(np.isclose(peaks, 1.0)) == 1 and peaks.min() < 0.5
    assert alone[0].max() == pytest.approx(1.0)
    assert not np.allclose(batch[0], alone[0])

    maps = _synthbench_explain_func(fold)(fold.trained.module, fold.X, fold.y)
    ours = preprocess(maps, absolute=True, normalise="max")
    np.testing.assert_allclose(ours.max(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(preprocess(maps[:1], absolute=True, normalise="max")[0], ours[0], rtol=1e-12)
    np.testing.assert_allclose(ours, np.abs(maps) / np.abs(maps).max(axis=1, keepdims=True), rtol=1e-12)


# --------------------------------------------------------------------------------------------------------------------
# SmoothMPRT (bottom-up, maps averaged over noisy copies)
# --------------------------------------------------------------------------------------------------------------------


class _Replay:
    """``np.random.randn`` replaced by a fixed cycle of standard normal draws, so every SmoothMPRT state
    gets the same noise (as synthbench's, drawn once per cell)."""

    def __init__(self, draws: list[np.ndarray]) -> None:
        self.draws = draws
        self.calls = 0

    def __call__(self, *shape: int) -> np.ndarray:
        draw = self.draws[self.calls % len(self.draws)]
        assert draw.shape == shape
        self.calls += 1
        return draw.copy()


def _refuse(**kwargs: Any) -> np.ndarray:
    raise AssertionError("SmoothMPRT called the explain_func it was given")


def _recording_quantus_explain(monkeypatch: pytest.MonkeyPatch) -> list[tuple[np.ndarray, dict]]:
    """Every call SmoothMPRT makes to ``quantus.explain``: (the inputs as float32, the keyword arguments)."""
    calls: list[tuple[np.ndarray, dict]] = []
    real = quantus.explain

    def explain(model, inputs, targets, **kwargs):
        calls.append((np.asarray(inputs, dtype=np.float32), dict(kwargs)))
        return real(model, inputs, targets, **kwargs)

    monkeypatch.setattr(quantus, "explain", explain)
    return calls


def test_smooth_mprt_ignores_the_explain_func_passed_to_it(fold: Fold, monkeypatch: pytest.MonkeyPatch):
    """SmoothMPRT checks that ``explain_func`` is callable and never calls it: every map, the reference
    included, comes from ``quantus.explain`` with ``explain_func_kwargs`` (captum ``Gradient`` here). Its
    explainer reads ``y_batch`` as the output column, so on the one-logit MLP the labels (column 1)
    fail and only ``y = 0`` runs; synthbench explains through the method's own recipe and rule."""
    calls = _recording_quantus_explain(monkeypatch)
    metric = quantus.SmoothMPRT(
        nr_samples=2,
        layer_order="bottom_up",
        seed=QUANTUS_SEED,
        abs=True,
        similarity_func=correlation_spearman,
        disable_warnings=True,
    )
    scores = _on_fold(metric, fold, np.zeros(fold.n, dtype=int), _refuse, explain_func_kwargs={"method": "Gradient"})
    assert list(scores) == ["original"] + _layer_names(fold)
    assert len(calls) == 2 * (2 + 3)  # nr_samples maps for the reference, "original" and each of 3 layers
    assert all(kwargs["method"] == "Gradient" for _, kwargs in calls)
    with pytest.raises(RuntimeError, match="out of bounds"):
        _on_fold(metric, fold, np.ones(fold.n, dtype=int), _refuse, explain_func_kwargs={"method": "Gradient"})


def test_smooth_mprt_per_state_similarities_equal_on_the_same_noisy_inputs(
    fold: Fold, quantus_aligned, recorded, monkeypatch: pytest.MonkeyPatch
):
    """Bottom-up sMPRT, Spearman of ``|a|``, with the noise matched: Quantus' draws are replayed so every
    state uses the same ``nr_samples - 1`` noisy copies and the clean input, and synthbench explains
    exactly those inputs (its noisy fold is replaced by the ones Quantus explained, see
    :func:`test_smprt_noise_is_not_quantus_noise` for why the noise itself cannot be matched). The
    explainer is Quantus' own (captum ``Gradient``, since SmoothMPRT ignores ``explain_func``) against
    synthbench's ``gradient``: the averaged maps and every example's similarity at every state agree."""
    draws = [np.random.default_rng(k).standard_normal(fold.X.shape) for k in range(NR_SAMPLES - 1)]
    replay = _Replay(draws)
    monkeypatch.setattr(np.random, "randn", replay)
    calls = _recording_quantus_explain(monkeypatch)
    metric = quantus.SmoothMPRT(
        nr_samples=NR_SAMPLES,
        noise_magnitude=0.1,
        layer_order="bottom_up",
        seed=QUANTUS_SEED,
        abs=True,
        similarity_func=correlation_spearman,
        disable_warnings=True,
    )
    theirs = _on_fold(metric, fold, np.zeros(fold.n, dtype=int), _refuse, explain_func_kwargs={"method": "Gradient"})
    inputs = [x for x, _ in calls]
    assert len(inputs) == NR_SAMPLES * 5 and replay.calls == (NR_SAMPLES - 1) * 5
    for k, x in enumerate(inputs):  # the same copies at every state, the clean input last
        np.testing.assert_array_equal(x, inputs[k % NR_SAMPLES])
    np.testing.assert_array_equal(inputs[NR_SAMPLES - 1], fold.X)

    noisy = np.concatenate(inputs[:NR_SAMPLES])

    def quantus_noise(self, data: FoldData) -> FoldData:
        return dataclasses.replace(
            data, X_explain=noisy, y_explain=np.tile(data.y_explain, NR_SAMPLES), relevant_local=None
        )

    monkeypatch.setattr(R.RandomisationScorer, "_noisy", quantus_noise)
    scorer = R.RandomisationScorer(name="smprt", order="bottom_up", noise_samples=NR_SAMPLES, normalise="second_moment")
    scores = _score(scorer, fold)
    per_state = recorded["spearman_abs"]
    assert list(theirs) == ["original"] + _layer_names(fold)
    assert len(per_state) == 4
    for s, (step, values) in enumerate(theirs.items()):
        np.testing.assert_allclose(per_state[s], values, rtol=0, atol=1e-9, err_msg=f"state {s} ({step})")
    np.testing.assert_allclose(
        scores.curves["spearman_abs"].values[1:, 0],
        [np.mean(theirs[name]) for name in _layer_names(fold)],
        rtol=0,
        atol=1e-12,
    )


def test_smprt_noise_is_not_quantus_noise(fold: Fold, monkeypatch: pytest.MonkeyPatch):
    """Why the noise is replaced in the cross-check, pinned on both sides.

    Quantus: the noise comes from numpy's global generator, fresh for every model state; its sd is
    ``noise_magnitude`` x each example's own range; the last of the ``nr_samples`` maps is of the
    clean input. synthbench: the noise comes from the cell's generator, drawn once and shared by
    every state; its sd is ``noise_level`` x the training inputs' range, one sd for all examples;
    every copy is noisy.
    """
    calls = _recording_quantus_explain(monkeypatch)
    np.random.seed(0)
    metric = quantus.SmoothMPRT(
        nr_samples=NR_SAMPLES, noise_magnitude=0.1, layer_order="bottom_up", abs=True, disable_warnings=True
    )
    _on_fold(metric, fold, np.zeros(fold.n, dtype=int), _refuse, explain_func_kwargs={"method": "Gradient"})
    inputs = [x for x, _ in calls]
    reference, original = inputs[:NR_SAMPLES], inputs[NR_SAMPLES : 2 * NR_SAMPLES]
    np.testing.assert_array_equal(reference[-1], fold.X)
    assert not np.array_equal(reference[0], original[0])  # new draws for the same (trained) model
    per_example_range = fold.X.max(axis=1, keepdims=True) - fold.X.min(axis=1, keepdims=True)
    np.random.seed(0)
    for x in reference[:-1]:  # numpy's global stream, scaled by each example's range
        np.testing.assert_allclose(
            x, fold.X + np.random.randn(*fold.X.shape) * (0.1 * per_example_range), rtol=0, atol=1e-6
        )

    scorer = R.RandomisationScorer(name="smprt", order="bottom_up", noise_samples=NR_SAMPLES, noise_level=0.1)
    first, second = scorer._noisy(fold.data).X_explain, scorer._noisy(fold.data).X_explain
    np.testing.assert_array_equal(first, second)  # drawn from the cell's seed: the same for every state
    noise = first.reshape(NR_SAMPLES, fold.n, -1) - fold.X[None]
    assert (np.abs(noise).reshape(NR_SAMPLES, -1).max(axis=1) > 0).all()  # no clean copy
    train_range = float(fold.data.X_train.max() - fold.data.X_train.min())
    assert noise.std() == pytest.approx(0.1 * train_range, rel=0.05)
    assert abs(np.corrcoef(noise.std(axis=(0, 2)), per_example_range[:, 0])[0, 1]) < 0.5  # one sd for all


# --------------------------------------------------------------------------------------------------------------------
# EfficientMPRT (relative rise of the maps' histogram entropy)
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("absolute", [False, True])
def test_emprt_rise_equals_quantus_with_fixed_bins(fold: Fold, quantus_aligned, recorded, absolute):
    """eMPRT with 100 equal bins (``complexity_func_kwargs={"n_bins": 100}``, so no rule chooses them):
    the entropy of every example's map on the trained and on the fully randomised model, and the
    mean relative rise ``(b - a) / a``, equal Quantus' on the same model states."""
    scorer = R.RandomisationScorer(name="emprt", variant="entropy", absolute=absolute, normalise="none", n_bins=100)
    scores = _score(scorer, fold)
    before, after = recorded["entropy"]
    assert (before > 0).all()

    metric = quantus.EfficientMPRT(
        complexity_func_kwargs={"n_bins": 100},
        layer_order="bottom_up",
        seed=QUANTUS_SEED,
        abs=absolute,
        normalise=False,
        disable_warnings=True,
    )
    theirs = _on_fold(metric, fold, fold.y, _synthbench_explain_func(fold))
    entropies = metric.explanation_scores_by_layer
    assert list(entropies) == ["orig", _layer_names(fold)[-1]]  # skip_layers: the fully randomised model only
    np.testing.assert_allclose(before, entropies["orig"], rtol=1e-12)
    np.testing.assert_allclose(after, entropies[_layer_names(fold)[-1]], rtol=1e-12)
    np.testing.assert_allclose((after - before) / before, theirs, rtol=1e-12, atol=1e-12)
    assert scores["emprt_rise"] == pytest.approx(np.mean(theirs), rel=1e-12)
    np.testing.assert_allclose(
        scores.curves["entropy"].values[:, 0], [np.mean(entropies["orig"]), np.mean(after)], rtol=1e-12
    )


@pytest.mark.parametrize("shape", [(6, 8), (5, 1, 12, 12), (3, 3, 8, 8)])
@pytest.mark.parametrize("n_bins", [10, 100])
def test_map_entropy_equals_quantus_discrete_entropy(shape, n_bins):
    """:func:`map_entropy` of each map equals ``discrete_entropy`` (numpy histogram, scipy entropy in
    nats), skewed, signed and constant maps included."""
    rng = np.random.default_rng(sum(shape) + n_bins)
    maps = rng.standard_normal(shape) ** 3
    maps[1] = 0.7  # a constant map: one full bin, entropy 0
    maps[2] = np.round(maps[2], 1)  # many ties
    ours = R.map_entropy(maps, n_bins)
    theirs = np.array([discrete_entropy(a=m, x=m, n_bins=n_bins) for m in maps])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    assert ours[1] == 0.0


def test_quantus_freedman_diaconis_rule_counts_dimensions_not_samples():
    """Why the eMPRT cross-check fixes ``n_bins``: Quantus 0.6's Freedman–Diaconis rule takes
    ``a_batch[0].ndim`` (1 for a table, 3 for an image) as the sample count, so the bin width is
    ``2 IQR`` on tables whatever the number of maps or features (the rule says ``2 IQR / n^(1/3)``)."""
    rng = np.random.default_rng(0)
    for n, p in ((10, 8), (1000, 8), (10, 500)):
        a = rng.standard_normal((n, p))
        iqr = np.percentile(a, 75) - np.percentile(a, 25)
        assert freedman_diaconis_rule(a) == int((a.max() - a.min()) / (2 * iqr))
    image = rng.standard_normal((10, 1, 8, 8))
    iqr = np.percentile(image, 75) - np.percentile(image, 25)
    assert freedman_diaconis_rule(image) == int((image.max() - image.min()) / (2 * iqr / 3 ** (1 / 3)))


# --------------------------------------------------------------------------------------------------------------------
# RandomLogit (Quantus only: synthbench's scorer is not written yet)
# --------------------------------------------------------------------------------------------------------------------


def _random_logit(**kwargs: Any) -> quantus.RandomLogit:
    return quantus.RandomLogit(
        num_classes=2, similarity_func=correlation_spearman, abs=False, normalise=False, disable_warnings=True, **kwargs
    )


def _recording_explain_func(
    fold: Fold, targets_seen: list[np.ndarray], other_class_sign: bool = False
) -> Callable[..., np.ndarray]:
    """:func:`_synthbench_explain_func` that records the targets; with ``other_class_sign`` the map of class
    0 on the one-logit MLP is that of its log-odds ``-z``, minus the map of ``z``."""
    explain = _synthbench_explain_func(fold)

    def explain_func(model, inputs, targets, **kwargs):
        targets = np.asarray(targets)
        targets_seen.append(targets.copy())
        maps = explain(model, inputs, targets)
        return np.where(targets[:, None] == 0, -maps, maps) if other_class_sign else maps

    return explain_func


def test_random_logit_reseeds_numpy_global_generator(fold: Fold):
    """``RandomLogit`` calls ``np.random.seed(seed)`` for every batch: after it, numpy's global stream
    is the same whatever it was before (a user's or another library's draws are reset)."""
    after = []
    for before in (0, 12345):
        np.random.seed(before)
        _on_fold(_random_logit(seed=QUANTUS_SEED), fold, fold.y, _synthbench_explain_func(fold))
        after.append(np.random.random(4))
    np.testing.assert_array_equal(after[0], after[1])
    np.random.seed(QUANTUS_SEED)
    np.random.randint(0, 1, fold.n)  # the one draw RandomLogit makes per batch
    np.testing.assert_array_equal(np.random.random(4), after[0])


def test_random_logit_with_two_classes_always_explains_the_other_class(fold: Fold):
    """With ``num_classes=2`` the "random" class is ``randint(0, 1) = 0`` among the one other class:
    ``1 - y`` for every example and every seed, nothing random is left."""
    for seed in (0, 1, QUANTUS_SEED, 2024):
        seen: list[np.ndarray] = []
        _on_fold(_random_logit(seed=seed), fold, fold.y, _recording_explain_func(fold, seen))
        assert len(seen) == 2
        np.testing.assert_array_equal(seen[0], fold.y)
        np.testing.assert_array_equal(seen[1], 1 - fold.y)


def test_random_logit_on_a_one_logit_model_is_degenerate(fold: Fold):
    """On the one-logit binary MLP the other class has no logit of its own. Explaining the one logit
    whatever the target (synthbench's rule) makes the two maps equal, Spearman 1 for every example;
    explaining the other class's log-odds ``-z`` makes them opposite, Spearman -1 for every example.
    Either way the value is fixed by the model's shape, not by the method. Quantus' own explainer
    (captum) fails on column 1, and synthbench's attribution refuses a target the model does not have."""
    seen: list[np.ndarray] = []
    same = _on_fold(_random_logit(), fold, fold.y, _recording_explain_func(fold, seen))
    np.testing.assert_allclose(same, 1.0, rtol=0, atol=1e-12)
    opposite = _on_fold(_random_logit(), fold, fold.y, _recording_explain_func(fold, seen, other_class_sign=True))
    np.testing.assert_allclose(opposite, -1.0, rtol=0, atol=1e-12)

    with pytest.raises(RuntimeError, match="out of bounds"):
        _on_fold(_random_logit(), fold, fold.y, quantus.explain, explain_func_kwargs={"method": "Gradient"})
    # synthbench refuses a column the model does not have, per-example targets too
    with pytest.raises(ValueError, match="target 1 out of range for 1 output columns"):
        fold.spec.recipe.explain(
            fold.trained, fold.data, np.random.default_rng(0), fold.spec.params_for("tabular"), targets=1 - fold.y
        )
