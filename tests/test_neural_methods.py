"""The registered tabular neural methods on a fold's own MLP against captum, and what makes each 2023 variant itself.

The tabular twin of ``test_image_methods_on_the_folds_cnn_equal_captum`` (tests/test_localisation.py):
every method runs as the benchmark runs it (:func:`run_method` on the fold's shared MLP, a
LeakyReLU network with a leading GaussianNoise layer) and is compared with captum on that same
module. Sampled methods are compared given the same draws (explicit noise or permutations passed
to the registered function), or, where captum's draws cannot be reproduced (GradientSHAP) or the
noise scale itself is the point (``smoothgrad_saliency``), by a two-sample comparison of
Monte Carlo means whose tolerance comes from the per-element spread of one draw.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from captum.attr import (
    LRP,
    Deconvolution,
    DeepLift,
    FeatureAblation,
    FeaturePermutation,
    GradientShap,
    GuidedBackprop,
    InputXGradient,
    IntegratedGradients,
    NoiseTunnel,
    Saliency,
    ShapleyValueSampling,
)
from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule, EpsilonRule
from conftest import captum_perm_func, fold_of
from torch import nn

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels

RTOL, ATOL = 1e-4, 1e-5  # float32 networks and inputs, as the benchmark runs them


@pytest.fixture(scope="module")
def mlp_fold():
    data = fold_of(datasets.make("xor", n_samples=240, n_decoys=6, seed=1))
    models = SharedModels(data)
    mlp = models.get("mlp").module
    # the premise of the captum-flavoured variants: the fold's MLP has LeakyReLU, not ReLU, units
    assert {type(m) for m in mlp if isinstance(m, (nn.ReLU, nn.LeakyReLU))} == {nn.LeakyReLU}
    assert mlp(torch.as_tensor(data.X_explain)).shape == (len(data.y_explain), 1)  # one logit: target 0
    return data, models, mlp, torch.as_tensor(data.X_explain)


def _run(name, data, models, seed=0, **override):
    """The registered method's function with its tabular parameters, some overridden; local attributions."""
    spec = get_method(name)
    out = spec.fn(data, models, np.random.default_rng(seed), **{**spec.params_for("tabular"), **override})
    return out.local


def _close(ours: np.ndarray, ref: torch.Tensor, name: str, atol: float | np.ndarray = ATOL) -> None:
    """``|ours - ref| <= RTOL |ref| + atol`` element by element (``atol`` may be an array of the same shape)."""
    ref = ref.detach().numpy()
    assert ours.shape == ref.shape, name
    bound = RTOL * np.abs(ref) + atol
    bad = np.abs(ours - ref) > bound
    assert not bad.any(), (
        f"{name}: {bad.sum()} of {bad.size} elements differ, worst excess {(np.abs(ours - ref) - bound).max():.3g}"
    )


def _lrp(mlp: nn.Sequential, x: torch.Tensor, linear_rule) -> torch.Tensor:
    """captum LRP on the MLP without its GaussianNoise (identity in eval; captum has no rule for it).

    captum has no default rule for LeakyReLU: the epsilon rule there passes relevance through
    unchanged (``x * R / (f(x)) * f'(x) = R``), which is what captum does at ReLU.
    """
    view = nn.Sequential(*[m for m in mlp if isinstance(m, (nn.Linear, nn.LeakyReLU))])
    try:
        for m in view:
            m.rule = linear_rule() if isinstance(m, nn.Linear) else EpsilonRule()
        return LRP(view).attribute(x, target=0)
    finally:
        for m in view:
            if hasattr(m, "rule"):
                del m.rule


def test_tabular_methods_on_the_folds_mlp_equal_captum(mlp_fold):
    """In float64 on both sides (the fold's MLP cast, through the seam), to the tolerance
    :data:`conftest.FLOAT64_RTOL` states: in float32 a pre-activation within rounding of a LeakyReLU's kink
    can take the other slope on another CPU's kernels."""
    from conftest import assert_float64_close, differs_beyond_float64_tolerance, in_float64

    data32, models, _, _ = mlp_fold
    twin, data = in_float64(models.get("mlp"), data32)
    mlp, x = twin.module, torch.as_tensor(data.X_explain)
    refs = {
        "gradient": Saliency(mlp).attribute(x, target=0, abs=False),
        "saliency": Saliency(mlp).attribute(x, target=0),
        "input_x_gradient": InputXGradient(mlp).attribute(x, target=0),
        "integrated_gradients": IntegratedGradients(mlp).attribute(x, target=0, n_steps=50),
        "deeplift": DeepLift(mlp).attribute(x, target=0, baselines=0.0),
        "lrp_epsilon": _lrp(mlp, x, EpsilonRule),
        "lrp_zplus": _lrp(mlp, x, lambda: Alpha1_Beta0_Rule(set_bias_to_zero=True)),
        "feature_ablation": FeatureAblation(mlp).attribute(x, target=0),
        # the 2023 benchmark's captum calls, registered as variants
        "integrated_gradients_nomul": IntegratedGradients(mlp, multiply_by_inputs=False).attribute(
            x, target=0, n_steps=50
        ),
        "deeplift_nomul": DeepLift(mlp, multiply_by_inputs=False).attribute(x, target=0, baselines=0.0),
        "guided_backprop_captum": GuidedBackprop(mlp).attribute(x, target=0),
        "deconvolution_captum": Deconvolution(mlp).attribute(x, target=0),
    }
    outs = {name: run_method(get_method(name), data, models, model=twin).local for name in refs}
    for name, ref in refs.items():
        assert_float64_close(outs[name], ref, name)
    # The fold's own float32 MLP: a forward-only method (no unit's kink decides a gradient) gives the float64 map
    # to float32 precision, and every method scores |map| averaged over the rows.
    out = run_method(get_method("feature_ablation"), data32, models)
    _close(out.local, torch.as_tensor(outs["feature_ablation"]), "feature_ablation")
    np.testing.assert_allclose(out.scores, np.abs(out.local).mean(axis=0), rtol=1e-6)
    # the _nomul variants are not their multiplied parents (x != 0 almost everywhere), and the tolerance catches
    # such an error (a missing multiply by the inputs), as it catches a wrong baseline
    for name in ("integrated_gradients", "deeplift"):
        assert np.abs(outs[f"{name}_nomul"] - outs[name]).max() > 0.1, name
        assert differs_beyond_float64_tolerance(outs[f"{name}_nomul"], refs[name]), name
    assert differs_beyond_float64_tolerance(outs["deeplift"], DeepLift(mlp).attribute(x, target=0, baselines=0.05))


def test_captum_flavoured_guided_backprop_and_deconvolution_are_the_gradient_on_a_leaky_relu_fold(mlp_fold):
    """captum hooks nn.ReLU only: on the LeakyReLU MLP its rules never fire (the 2023 benchmark's
    ``*_captum`` variants); the registered defaults apply the rule at the actual nonlinearity."""
    data, models, _, _ = mlp_fold
    grad = run_method(get_method("gradient"), data, models).local
    scale = np.abs(grad).max()
    for name in ("guided_backprop", "deconvolution"):
        captum_like = run_method(get_method(f"{name}_captum"), data, models).local
        np.testing.assert_allclose(captum_like, grad, rtol=1e-6, atol=1e-6 * scale, err_msg=name)
        own = run_method(get_method(name), data, models).local
        assert np.abs(own - grad).max() > 0.1 * scale, name


def _captum_noise(n: int, s: int, p: int, stdev: float, seed: int) -> torch.Tensor:
    """NoiseTunnel's single ``torch.normal`` draw for ``n * s`` copies (example-major), in our (s, n, p) layout."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        noise = torch.normal(0, torch.tensor(stdev).repeat(n * s, p))
    return noise.view(n, s, p).transpose(0, 1)


def test_sampled_methods_on_the_folds_mlp_equal_captum_given_the_same_draws(mlp_fold):
    """In float64 on both sides, given the same draws (captum's float32 noise, exactly representable)."""
    from conftest import assert_float64_close, in_float64

    data32, fold_models, _, _ = mlp_fold
    twin, data = in_float64(fold_models.get("mlp"), data32)
    models, mlp, x = fold_models.with_model("mlp", twin), twin.module, torch.as_tensor(data.X_explain)
    n, p = x.shape
    s, seed, stdev = 20, 3, 0.2
    noise = _captum_noise(n, s, p, stdev, seed).double()
    refs = {}
    for name, nt_type, kwargs in [
        ("smoothgrad", "smoothgrad", {"abs": False}),
        ("smoothgrad_sq", "smoothgrad_sq", {"abs": False}),
        ("vargrad", "vargrad", {"abs": False}),
        ("smoothgrad_saliency", "smoothgrad", {}),
    ]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            refs[name] = NoiseTunnel(Saliency(mlp)).attribute(
                x, nt_type=nt_type, nt_samples=s, stdevs=stdev, target=0, **kwargs
            )
        assert_float64_close(_run(name, data, models, noise=noise), refs[name], name)

    g = torch.Generator().manual_seed(0)
    perms = torch.stack([torch.randperm(n, generator=g) for _ in range(p)])

    ref = FeaturePermutation(mlp, perm_func=captum_perm_func(perms)).attribute(x, target=0)
    assert_float64_close(_run("feature_permutation", data, models, permutations=perms), ref, "feature_permutation")

    n_orders = 5  # captum's sampling is slow; the orders are given, so their number is immaterial here
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ref = ShapleyValueSampling(mlp).attribute(x, target=0, n_samples=n_orders, perturbations_per_eval=p)
        torch.manual_seed(seed)
        orders = torch.stack([torch.randperm(p) for _ in range(n_orders)])
    # captum accumulates Shapley sampling in float32 whatever the inputs: a forward-only sum, compared at float32's
    # tolerance (no kink decides anything in a forward pass)
    _close(_run("shapley_sampling", data, models, permutations=orders), ref, "shapley_sampling")


def _input_gradients(mlp: nn.Module, points: torch.Tensor) -> torch.Tensor:
    points = points.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(mlp(points).sum(), points)
    return g


#: Rows compared, samples per Monte Carlo mean, draws used to measure one draw's spread.
ROWS, SAMPLES, DRAWS = 16, 1000, 400
#: Largest |difference| allowed between two independent means of SAMPLES draws, in units of the
#: difference's standard deviation sd * sqrt(2 / SAMPLES). Under the normal approximation one of the
#: ROWS * p = 128 elements passes 5 sd with probability 128 * 5.7e-7 < 1e-4.
Z_MAX = 5.0


def _assert_same_mean(ours: np.ndarray, ref: torch.Tensor, draws: torch.Tensor, name: str) -> None:
    sd = draws.std(dim=0).double()
    assert sd.min() > 1e-3, name  # every element varies from draw to draw: the z-scores are defined
    z = (torch.as_tensor(ours).double() - ref.detach().double()).abs() / (sd * np.sqrt(2 / SAMPLES))
    worst = float(z.max())
    assert worst < Z_MAX, f"{name}: a difference of {worst:.1f} sd between the two means"


def test_gradient_shap_estimates_captums_gradient_shap(mlp_fold):
    """The registered GradientSHAP (background: the explained rows; no input noise) against captum's
    ``GradientShap(baselines=X_explain)``: both are means of i.i.d. draws ``(x - b) * grad f(b + alpha (x - b))``
    (``b`` a uniform background row, ``alpha ~ U(0, 1)``) from unrelated random streams."""
    data, models, mlp, x = mlp_fold
    rows = x[:ROWS]
    ours = _run("gradient_shap", data, models, n_samples=SAMPLES)[:ROWS]
    state = np.random.get_state()  # captum draws baselines and alphas from numpy's global generator
    try:
        with torch.random.fork_rng(devices=[]):
            np.random.seed(0)
            torch.manual_seed(0)
            ref = GradientShap(mlp).attribute(rows, baselines=x, n_samples=SAMPLES, stdevs=0.0, target=0)
    finally:
        np.random.set_state(state)
    g = torch.Generator().manual_seed(1)
    b = x[torch.randint(0, len(x), (DRAWS, ROWS), generator=g)]
    alpha = torch.rand(DRAWS, ROWS, 1, generator=g)
    draws = _input_gradients(mlp, (b + alpha * (rows - b)).reshape(-1, x.shape[1])).view(b.shape) * (rows - b)
    _assert_same_mean(ours, ref, draws, "gradient_shap")


def test_smoothgrad_saliency_estimates_captums_noise_tunnel_with_absolute_noise_sd_0_1(mlp_fold):
    """``smoothgrad_saliency`` draws its own noise (sd 0.1 in absolute units, as the 2023 benchmark's
    ``NoiseTunnel(Saliency).attribute(stdevs=0.1)``); the explicit-noise test above cannot see the sd."""
    data, models, mlp, x = mlp_fold
    rows = x[:ROWS]
    ours = _run("smoothgrad_saliency", data, models, n_samples=SAMPLES)[:ROWS]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        ref = NoiseTunnel(Saliency(mlp)).attribute(rows, nt_type="smoothgrad", nt_samples=SAMPLES, stdevs=0.1, target=0)
    g = torch.Generator().manual_seed(1)
    eps = torch.randn(DRAWS, ROWS, x.shape[1], generator=g)
    draws = _input_gradients(mlp, (rows + 0.1 * eps).reshape(-1, x.shape[1])).abs().view(eps.shape)
    _assert_same_mean(ours, ref, draws, "smoothgrad_saliency")
