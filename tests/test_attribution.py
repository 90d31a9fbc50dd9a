"""Tests of synthbench.attribution: captum cross-checks, completeness, batching, RNG hygiene."""

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
    GuidedBackprop,
    InputXGradient,
    IntegratedGradients,
    NoiseTunnel,
    Saliency,
    ShapleyValueSampling,
)
from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule
from conftest import captum_perm_func
from torch import nn

from synthbench.attribution import attribute, feature_scores, names
from synthbench.attribution.gradient import ig_quadrature
from synthbench.models.basis import basis_layer, hinge_knots
from synthbench.models.mlp import MLPConfig, build_mlp

ATOL = 1e-5
N, P = 16, 6


def make_model(activation: str = "leaky_relu", seed: int = 0, p: int = P, dtype=torch.float64) -> nn.Sequential:
    g = torch.Generator().manual_seed(seed)
    return build_mlp(p, MLPConfig(activation=activation, width=8), generator=g).to(dtype).eval()


def make_inputs(seed: int = 1, n: int = N, p: int = P, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, p, generator=g, dtype=dtype)


def f0(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(x)[:, 0]


ACTS = ["relu", "leaky_relu", "softplus"]
SAMPLED = {"smoothgrad", "smoothgrad_sq", "vargrad", "gradient_shap", "shapley_sampling"}


def quick_params(name: str) -> dict:
    """Few samples for the sampled methods, to keep the smoke tests fast."""
    return {"n_samples": 3} if name in SAMPLED else {}


def test_names_and_shapes():
    model, x = make_model(), make_inputs()
    assert len(names()) == 16 and "shapley_sampling" in names()
    for name in names():
        a = attribute(name, model, x, **quick_params(name))
        assert a.shape == x.shape and a.dtype == x.dtype and not a.requires_grad, name
        assert torch.isfinite(a).all(), name
    with pytest.raises(ValueError):
        attribute("nope", model, x)
    with pytest.raises(ValueError):
        attribute("gradient", model, x, target=1)


def test_feature_scores():
    a = torch.tensor([[1.0, -2.0], [-3.0, 0.0]])
    np.testing.assert_allclose(feature_scores(a), [2.0, 1.0])
    assert feature_scores(a).shape == (2,)


def test_model_state_and_global_rng_untouched():
    model, x = make_model(), make_inputs()
    model.train()
    params = [q.detach().clone() for q in model.parameters()]
    rng = torch.get_rng_state()
    for name in names():
        attribute(name, model, x, **quick_params(name))
    assert torch.equal(rng, torch.get_rng_state())
    assert all(m.training for m in model.modules())
    assert all(not m._forward_hooks and not m._backward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert all(torch.equal(a, b) for a, b in zip(params, model.parameters()))


# ---------------------------------------------------------------- captum cross-checks: gradients


@pytest.mark.parametrize("act", ACTS)
def test_gradient_family_matches_captum(act):
    model, x = make_model(act), make_inputs()
    ref = Saliency(model).attribute(x, target=0)
    torch.testing.assert_close(attribute("saliency", model, x), ref, atol=ATOL, rtol=0)
    torch.testing.assert_close(
        attribute("gradient", model, x), Saliency(model).attribute(x, target=0, abs=False), atol=ATOL, rtol=0
    )
    torch.testing.assert_close(
        attribute("input_x_gradient", model, x), InputXGradient(model).attribute(x, target=0), atol=ATOL, rtol=0
    )


def test_float32_gradient_matches_captum():
    model, x = make_model(dtype=torch.float32), make_inputs(dtype=torch.float32)
    ref = Saliency(model).attribute(x, target=0)
    torch.testing.assert_close(attribute("saliency", model, x), ref, atol=ATOL, rtol=0)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("method", ["gausslegendre", "riemann_trapezoid", "riemann_left", "riemann_middle"])
def test_integrated_gradients_matches_captum(act, method):
    model, x = make_model(act), make_inputs()
    base = make_inputs(seed=5, n=1)
    ours = attribute("integrated_gradients", model, x, baselines=base, n_steps=20, method=method)
    ref = IntegratedGradients(model).attribute(x, baselines=base, target=0, n_steps=20, method=method)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)
    local = attribute("integrated_gradients", model, x, n_steps=20, method=method, multiply_by_inputs=False)
    ref_local = IntegratedGradients(model, multiply_by_inputs=False).attribute(x, target=0, n_steps=20, method=method)
    torch.testing.assert_close(local, ref_local, atol=ATOL, rtol=0)


def test_ig_quadrature_is_captums():
    from captum.attr._utils.approximation_methods import approximation_parameters

    for method in ["gausslegendre", "riemann_trapezoid", "riemann_right", "riemann_left", "riemann_middle"]:
        steps, alphas = approximation_parameters(method)
        a, w = ig_quadrature(7, method)
        np.testing.assert_allclose(a, alphas(7), atol=1e-7)
        np.testing.assert_allclose(w, steps(7), atol=1e-7)


@pytest.mark.parametrize("act", ["softplus", "leaky_relu"])
def test_integrated_gradients_completeness(act):
    model, x = make_model(act), make_inputs()
    a = attribute("integrated_gradients", model, x, n_steps=300)
    delta = f0(model, x) - f0(model, torch.zeros_like(x))
    tol = 1e-8 if act == "softplus" else 2e-3
    torch.testing.assert_close(a.sum(1), delta, atol=tol, rtol=0)


# ---------------------------------------------------------------- captum cross-checks: rules


@pytest.mark.parametrize("act", ACTS)
def test_deeplift_matches_captum_and_is_complete(act):
    model, x = make_model(act), make_inputs()
    for base in (None, make_inputs(seed=7)):
        ours = attribute("deeplift", model, x, baselines=base)
        ref = DeepLift(model).attribute(x, baselines=base if base is not None else 0.0, target=0)
        torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)
        b = torch.zeros_like(x) if base is None else base
        torch.testing.assert_close(ours.sum(1), f0(model, x) - f0(model, b), atol=1e-10, rtol=0)
    # a row equal to its baseline exercises the |x - x0| < eps branch (gradient fallback)
    xb = x.clone()
    xb[0] = 0.0
    torch.testing.assert_close(
        attribute("deeplift", model, xb, multiply_by_inputs=False),
        DeepLift(model, multiply_by_inputs=False).attribute(xb, baselines=0.0, target=0),
        atol=ATOL,
        rtol=0,
    )


def test_guided_backprop_and_deconvolution_match_captum_on_relu():
    model, x = make_model("relu"), make_inputs()
    torch.testing.assert_close(
        attribute("guided_backprop", model, x), GuidedBackprop(model).attribute(x, target=0), atol=ATOL, rtol=0
    )
    torch.testing.assert_close(
        attribute("deconvolution", model, x), Deconvolution(model).attribute(x, target=0), atol=ATOL, rtol=0
    )


@pytest.mark.parametrize("act", ["leaky_relu", "softplus"])
def test_captum_guided_backprop_is_plain_gradient_on_non_relu_but_ours_is_not(act):
    """The pitfall: captum hooks only nn.ReLU, so on other nets it silently returns the gradient."""
    model, x = make_model(act), make_inputs()
    grad = attribute("gradient", model, x)
    torch.testing.assert_close(GuidedBackprop(model).attribute(x, target=0), grad, atol=1e-12, rtol=0)
    torch.testing.assert_close(Deconvolution(model).attribute(x, target=0), grad, atol=1e-12, rtol=0)
    assert (attribute("guided_backprop", model, x) - grad).abs().max() > 1e-3
    assert (attribute("deconvolution", model, x) - grad).abs().max() > 1e-3


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "softplus"])
def test_rules_on_relu_only_is_captums_behaviour_on_every_network(act):
    """The 2023 benchmark's guided backprop and deconvolution: captum's, whatever the activation."""
    model, x = make_model(act), make_inputs()
    for name, reference in (("guided_backprop", GuidedBackprop), ("deconvolution", Deconvolution)):
        torch.testing.assert_close(
            attribute(name, model, x, rules_on="relu_only"), reference(model).attribute(x, target=0), atol=ATOL, rtol=0
        )
    with pytest.raises(ValueError, match="rules_on"):
        attribute("guided_backprop", model, x, rules_on="some")


def _with_positive_tail(model: nn.Sequential) -> nn.Sequential:
    """Same net with |W| in every Linear after the first: the backward signal is never negative."""
    linears = [m for m in model if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for lin in linears[1:]:
            lin.weight.abs_()
    return model


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "softplus"])
def test_guided_and_deconv_rules_on_positive_signal(act):
    """With a non-negative backward signal, guided backprop = gradient; deconv passes the signal
    through the activation's rectifier of a positive value, i.e. unchanged (linearised net)."""
    model, x = _with_positive_tail(make_model(act)), make_inputs()
    grad = attribute("gradient", model, x)
    torch.testing.assert_close(attribute("guided_backprop", model, x), grad, atol=1e-12, rtol=0)
    linear = nn.Sequential(*[m for m in model if isinstance(m, nn.Linear)])
    linear_grad = attribute("gradient", linear, x)
    torch.testing.assert_close(attribute("deconvolution", model, x), linear_grad, atol=1e-12, rtol=0)


def test_leaky_relu_rules_by_hand():
    """One hidden unit: f(x) = w2 * leaky(w1 x) with w2 < 0, so the signal into the unit is negative."""
    lin1, lin2 = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        lin1.weight.fill_(2.0)
        lin2.weight.fill_(-3.0)
    model = nn.Sequential(lin1, nn.LeakyReLU(0.2), lin2).double()
    x = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    # gradient: -3 * f'(2x) * 2 = [-6, -1.2]; guided: max(-3, 0) = 0; deconv: leaky(-3) * 2 = -1.2
    torch.testing.assert_close(attribute("gradient", model, x), torch.tensor([[-6.0], [-1.2]], dtype=torch.float64))
    torch.testing.assert_close(attribute("guided_backprop", model, x), torch.zeros(2, 1, dtype=torch.float64))
    torch.testing.assert_close(attribute("deconvolution", model, x), torch.full((2, 1), -1.2, dtype=torch.float64))


def _captum_view(model: nn.Sequential) -> nn.Sequential:
    """The model without its leading GaussianNoise (identity in eval; captum LRP has no rule for it)."""
    return nn.Sequential(*list(model)[1:])


def test_lrp_epsilon_matches_captum():
    model, x = make_model("relu"), make_inputs()
    ref = LRP(_captum_view(model)).attribute(x, target=0)
    torch.testing.assert_close(attribute("lrp_epsilon", model, x), ref, atol=ATOL, rtol=0)


@pytest.mark.parametrize("use_bias", [False, True])
def test_lrp_zplus_matches_captum_alpha1_beta0(use_bias):
    model, x = make_model("relu"), make_inputs().abs()  # non-negative inputs: the z+ regime
    view = _captum_view(model)
    for layer in view:
        if isinstance(layer, nn.Linear):
            layer.rule = Alpha1_Beta0_Rule(set_bias_to_zero=not use_bias)
    ref = LRP(view).attribute(x, target=0)
    torch.testing.assert_close(attribute("lrp_zplus", model, x, use_bias=use_bias), ref, atol=ATOL, rtol=0)


def test_lrp_conservation_without_bias():
    model, x = make_model("relu"), make_inputs().abs()
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.Linear):
                m.bias.zero_()
    out = f0(model, x)
    torch.testing.assert_close(attribute("lrp_epsilon", model, x).sum(1), out, atol=1e-6, rtol=0)
    # z+ can only distribute positive evidence: a unit whose active inputs all have negative weight
    # has z+ = 0 and its relevance is dropped. With non-negative weights above the first layer it
    # is conserved exactly.
    _with_positive_tail(model)
    out = f0(model, x)
    torch.testing.assert_close(attribute("lrp_zplus", model, x).sum(1), out, atol=1e-6, rtol=0)


# ---------------------------------------------------------------- noise ensembles


def _captum_noise(n: int, s: int, p: int, stdev: float, seed: int) -> torch.Tensor:
    """Reproduce NoiseTunnel's single torch.normal draw; reorder to our (n_samples, n, p) layout."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        noise = torch.normal(0, torch.tensor(stdev).repeat(n * s, p))  # rows: input i, sample s
    return noise.view(n, s, p).transpose(0, 1).to(torch.float64)


def _captum_nt(method, x, nt_type, s, stdev, seed, **kwargs):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return NoiseTunnel(method).attribute(x, nt_type=nt_type, nt_samples=s, stdevs=stdev, target=0, **kwargs)


@pytest.mark.parametrize("nt_type", ["smoothgrad", "smoothgrad_sq", "vargrad"])
def test_noise_tunnel_gradient_matches_captum(nt_type):
    model, x = make_model("leaky_relu"), make_inputs()
    s, stdev, seed = 7, 0.3, 123
    ref = _captum_nt(Saliency(model), x, nt_type, s, stdev, seed, abs=False)
    noise = _captum_noise(N, s, P, stdev, seed)
    torch.testing.assert_close(attribute(nt_type, model, x, noise=noise), ref, atol=ATOL, rtol=0)


def test_smoothgrad_of_saliency_matches_captum_as_the_2023_benchmark_calls_it():
    # NoiseTunnel(Saliency(model)) with abs=True (captum's default), as registered "smoothgrad_saliency"
    from synthbench.methods import get_method

    model, x = make_model("leaky_relu"), make_inputs()
    s, seed = 6, 11
    params = dict(get_method("smoothgrad_saliency").params)
    assert params == {"base": "saliency", "n_samples": 50, "stdevs": 0.1}
    ref = _captum_nt(Saliency(model), x, "smoothgrad", s, params["stdevs"], seed)
    noise = _captum_noise(N, s, P, params["stdevs"], seed)
    ours = attribute("smoothgrad", model, x, base="saliency", noise=noise)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


def test_noise_tunnel_ig_and_guided_bases_match_captum():
    model, x = make_model("relu"), make_inputs()
    s, stdev, seed = 4, 0.2, 5
    noise = _captum_noise(N, s, P, stdev, seed)
    ref = _captum_nt(IntegratedGradients(model), x, "smoothgrad", s, stdev, seed, n_steps=10)
    ours = attribute("smoothgrad", model, x, base="integrated_gradients", base_params={"n_steps": 10}, noise=noise)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)
    ref = _captum_nt(GuidedBackprop(model), x, "vargrad", s, stdev, seed)
    ours = attribute("vargrad", model, x, base="guided_backprop", noise=noise)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


def test_noise_draw_sigma_seed_and_chunking():
    model, x = make_model(), make_inputs()
    a = attribute("smoothgrad", model, x, n_samples=9, seed=3)
    torch.testing.assert_close(a, attribute("smoothgrad", model, x, n_samples=9, seed=3, max_batch_elements=2 * P))
    b = attribute("smoothgrad_sq", model, x, n_samples=9, seed=3, fast=False)
    kw = dict(n_samples=9, seed=3, fast=False)
    torch.testing.assert_close(b, attribute("smoothgrad_sq", model, x, max_batch_elements=2 * P, **kw))
    assert not torch.equal(a, attribute("smoothgrad", model, x, n_samples=9, seed=4))
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    torch.testing.assert_close(
        attribute("vargrad", model, x, n_samples=5, generator=g1),
        attribute("vargrad", model, x, n_samples=5, generator=g2),
    )
    # noise_level 0 (or stdevs 0): every sample is the plain gradient, variance 0
    for fast in (True, False):
        torch.testing.assert_close(
            attribute("smoothgrad", model, x, n_samples=3, noise_level=0.0, fast=fast), attribute("gradient", model, x)
        )
        torch.testing.assert_close(
            attribute("vargrad", model, x, n_samples=3, stdevs=0.0, fast=fast), torch.zeros_like(x), atol=1e-12, rtol=0
        )
    # per-feature sigma = 0.15 * column range: a column scaled by 100 gets 100x the noise
    from synthbench.attribution.noise import noise_sigma

    xs = x.clone()
    xs[:, 0] *= 100
    sig = noise_sigma(xs, 0.15)
    assert sig.shape == (P,) and torch.isclose(sig[0], 0.15 * (xs[:, 0].max() - xs[:, 0].min()))
    assert noise_sigma(xs, 0.15, per_feature=False).dim() == 0


class Opaque(nn.Module):
    """Hides the Sequential structure: forces the generic (input-space) paths."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


@pytest.mark.parametrize("act", ACTS)
def test_first_layer_fast_paths_equal_generic(act):
    model, x = make_model(act), make_inputs()
    opaque = Opaque(model)
    base = make_inputs(seed=6, n=1)
    torch.testing.assert_close(
        attribute("integrated_gradients", model, x, baselines=base, n_steps=12),
        attribute("integrated_gradients", opaque, x, baselines=base, n_steps=12),
        atol=1e-12,
        rtol=0,
    )
    noise = 0.3 * make_inputs(seed=8, n=5 * N).view(5, N, P)
    for name in ("smoothgrad", "smoothgrad_sq", "vargrad"):
        fast = attribute(name, model, x, noise=noise, max_batch_elements=7)  # second moments via (n, h, h)
        torch.testing.assert_close(fast, attribute(name, opaque, x, noise=noise), atol=1e-12, rtol=0)
        direct = attribute(name, model, x, noise=noise)  # the per-sample gradients fit: squared directly
        torch.testing.assert_close(direct, fast, atol=1e-12, rtol=0)
        torch.testing.assert_close(fast, attribute(name, model, x, noise=noise, fast=False), atol=1e-12, rtol=0)


def test_fast_noise_draw_has_the_right_distribution():
    """Drawn in first-layer space (fast) or input space (generic): same law, so large-sample
    moments agree."""
    model, x = make_model("softplus"), make_inputs(n=4)
    kw = dict(n_samples=20000, noise_level=0.2)
    for name in ("smoothgrad", "smoothgrad_sq"):
        fast = attribute(name, model, x, seed=1, **kw)
        slow = attribute(name, model, x, seed=2, fast=False, **kw)
        assert (fast - slow).abs().max() < 0.03 * slow.abs().max()


def test_a_first_layer_wider_than_its_law_is_worth_draws_the_noise_in_input_space():
    """Where factorising the first layer's h x h noise law costs more than drawing p normals per sample and
    row (h^2 >= n_samples * n * p), the fast path draws the generic path's noise: the same values."""
    g = torch.Generator().manual_seed(0)
    wide = nn.Sequential(nn.Linear(P, 64), nn.Softplus(), nn.Linear(64, 1)).to(torch.float64).eval()
    with torch.no_grad():
        for m in wide:
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=g, dtype=torch.float64))
    x = make_inputs(n=4)
    assert 64 * 64 >= 9 * 4 * P  # this branch
    for name in ("smoothgrad", "smoothgrad_sq", "vargrad"):
        fast = attribute(name, wide, x, n_samples=9, seed=3)
        torch.testing.assert_close(fast, attribute(name, wide, x, n_samples=9, seed=3, fast=False), atol=1e-12, rtol=0)
    narrow = make_model("softplus")  # h = 8: drawn in first-layer space, another stream
    assert 8 * 8 < 9 * 4 * P
    assert not torch.equal(
        attribute("smoothgrad", narrow, x, n_samples=9, seed=3),
        attribute("smoothgrad", narrow, x, n_samples=9, seed=3, fast=False),
    )


@pytest.mark.parametrize("read", [None, [0, 2, 5]])
def test_a_basis_mlp_splits_after_its_first_trained_layer_and_the_perturbation_paths_stay_exact(read):
    """A hinge basis of m * G units feeding a narrower Linear: the perturbation methods' fast paths
    update that Linear's outputs per feature (an additive head) and equal the generic paths, which
    evaluate every perturbed input through the whole network; features the basis does not read
    change nothing."""
    from synthbench.attribution.core import split_additive_head
    from synthbench.models.basis import hinge_knots

    x = make_inputs(n=12)
    config = MLPConfig(width=8, depth=2, activation="relu", noise_sigma=0.0, basis_knots=3)
    columns = np.arange(P) if read is None else np.asarray(read)
    knots = hinge_knots(x.numpy()[:, columns], 3)
    model = build_mlp(P, config, generator=torch.Generator().manual_seed(0), knots=knots, features=read)
    model = model.to(torch.float64).eval()
    head, _ = split_additive_head(model, P)
    assert head.width == 8 < len(columns) * 5 and len(head.layers) == 3
    base = make_inputs(seed=4, n=1)
    for name, kw in (
        ("shapley_sampling", dict(n_samples=4, seed=1, baselines=base)),
        ("feature_ablation", dict(baselines=base)),
        ("feature_permutation", dict(seed=2)),
    ):
        fast = attribute(name, model, x, **kw)
        torch.testing.assert_close(fast, attribute(name, model, x, fast=False, **kw), atol=1e-12, rtol=0, msg=name)
        if read is not None:
            assert fast[:, [1, 3, 4]].abs().max() < 1e-12, name  # up to the rounding Shapley credits last


def test_ig_base_with_per_row_baselines_under_noise():
    model, x = make_model(), make_inputs()
    base = make_inputs(seed=9)
    noise = torch.zeros(3, N, P, dtype=torch.float64)
    params = {"baselines": base, "n_steps": 8}
    ours = attribute("smoothgrad", model, x, base="integrated_gradients", base_params=params, noise=noise)
    torch.testing.assert_close(ours, attribute("integrated_gradients", model, x, baselines=base, n_steps=8))


def test_gradient_shap_completeness_in_expectation():
    model, x = make_model("softplus"), make_inputs()
    base = torch.zeros(1, P, dtype=torch.float64)
    a = attribute("gradient_shap", model, x, baselines=base, n_samples=4000, seed=0)
    delta = f0(model, x) - f0(model, base)
    err = (a.sum(1) - delta).abs()
    assert err.mean() < 0.05 * delta.abs().mean() + 1e-3
    # reproducible from the seed, invariant to chunking
    b = attribute("gradient_shap", model, x, n_samples=20, seed=1, stdevs=0.1)
    kw = dict(n_samples=20, seed=1, stdevs=0.1)
    torch.testing.assert_close(b, attribute("gradient_shap", model, x, max_batch_elements=P, **kw))


# ---------------------------------------------------------------- perturbation methods


@pytest.mark.parametrize("act", ACTS)
def test_feature_ablation_matches_captum(act):
    model, x = make_model(act), make_inputs()
    ref = FeatureAblation(model).attribute(x, target=0)
    torch.testing.assert_close(attribute("feature_ablation", model, x), ref, atol=ATOL, rtol=0)
    base = make_inputs(seed=3, n=1)
    ref = FeatureAblation(model).attribute(x, baselines=base, target=0)
    for fast in (True, False):
        for cap in (2**24, 3 * P):
            ours = attribute("feature_ablation", model, x, baselines=base, fast=fast, max_batch_elements=cap)
            torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


def test_feature_permutation_matches_captum_with_explicit_permutations():
    model, x = make_model(), make_inputs()
    g = torch.Generator().manual_seed(0)
    perms = torch.stack([torch.randperm(N, generator=g) for _ in range(P)])

    ref = FeaturePermutation(model, perm_func=captum_perm_func(perms)).attribute(x, target=0)
    for fast in (True, False):
        ours = attribute("feature_permutation", model, x, permutations=perms, fast=fast, max_batch_elements=4 * P)
        torch.testing.assert_close(ours, ref, atol=ATOL, rtol=0)


class _ReadsTwo(nn.Module):
    """A model whose output depends on columns 1 and 3 only, says so (``inputs_read``) and counts the rows it sees."""

    def __init__(self, declare: bool) -> None:
        super().__init__()
        self.rows = 0
        if declare:
            self.inputs_read = np.array([1, 3])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += x.shape[0]
        return torch.tanh(x[:, 1:2] * x[:, 3:4] + 0.5 * x[:, 3:4])


@pytest.mark.parametrize("method", ["feature_ablation", "feature_permutation"])
def test_the_columns_a_model_declares_it_reads_are_the_only_ones_perturbed_and_nothing_changes(method):
    x = make_inputs()
    options = {"seed": 1} if method == "feature_permutation" else {}
    declared, plain = _ReadsTwo(True), _ReadsTwo(False)
    ours = attribute(method, declared, x, **options)
    assert torch.equal(ours, attribute(method, plain, x, **options))  # to the bit
    unread = [j for j in range(P) if j not in (1, 3)]
    assert not ours[:, unread].any() and ours[:, [1, 3]].abs().sum() > 0
    assert declared.rows == 2 * N + 2 * N and plain.rows == N + P * N  # f(x) twice, then 2 columns against P
    assert torch.equal(attribute(method, declared, x, fast=False, **options), ours)


class _Rows(nn.Module):
    """The identity, counting the rows it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += x.shape[0]
        return x


def test_shapley_sampling_orders_only_the_columns_a_model_reads():
    """Each ordering restricted to the columns the model reads: the others' marginal contributions are exactly 0, the
    read ones' those of the full orderings (to the bit where the paths are built from the inputs, within float32
    rounding through a basis head), at ``2 / P`` of the evaluations here."""
    x = make_inputs()
    declared, plain = _ReadsTwo(True), _ReadsTwo(False)
    ours = attribute("shapley_sampling", declared, x, n_samples=5, seed=3)
    assert torch.equal(ours, attribute("shapley_sampling", plain, x, n_samples=5, seed=3))
    assert not ours[:, [0, 2, 4, 5]].any() and ours[:, [1, 3]].abs().sum() > 0
    assert declared.rows == N + 5 * 2 * N and plain.rows == N + 5 * P * N  # f(baseline), then the paths' steps
    # a network that starts with a fixed basis of columns 0, 2 and 5 (the screened network's kept inputs)
    X = make_inputs(n=64, dtype=torch.float32)
    features = np.array([0, 2, 5])
    basis = basis_layer(hinge_knots(X.numpy(), 3)[features], features, P)
    torch.manual_seed(0)
    counter = _Rows()
    net = nn.Sequential(basis, nn.ReLU(), nn.Linear(basis.out_features, 8), nn.ReLU(), counter, nn.Linear(8, 1))
    fast = attribute("shapley_sampling", net, X, n_samples=5, seed=3)
    assert counter.rows == 5 * 3 * 64 + 64  # the paths' steps through the tail, then f(x) for their ends
    full = attribute("shapley_sampling", net, X, n_samples=5, seed=3, fast=False)
    assert not fast[:, [1, 3, 4]].any() and fast[:, features].abs().sum() > 0
    torch.testing.assert_close(fast, full, atol=1e-5, rtol=0)


def test_feature_permutation_properties():
    model, x = make_model(), make_inputs()
    a = attribute("feature_permutation", model, x, seed=2)
    torch.testing.assert_close(a, attribute("feature_permutation", model, x, seed=2))
    assert not torch.equal(a, attribute("feature_permutation", model, x, seed=3))
    # a constant column cannot matter; a feature the model ignores gets exactly zero
    xc = x.clone()
    xc[:, 2] = 0.7
    assert torch.all(attribute("feature_permutation", model, xc, seed=0)[:, 2].abs() < 1e-12)
    # in distribution: averaging over many seeds matches captum's average (its RNG is global)
    ours = torch.stack([attribute("feature_permutation", model, x, seed=s) for s in range(200)]).mean(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        fp = FeaturePermutation(model)
        ref = torch.stack([fp.attribute(x, target=0) for _ in range(200)]).mean(0)
    scale = ref.abs().mean()
    assert (ours - ref).abs().mean() < 0.25 * scale


@pytest.mark.parametrize("act", ["relu", "leaky_relu"])
def test_shapley_sampling_matches_captum(act):
    model, x = make_model(act), make_inputs()
    s, seed = 5, 11
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ref = ShapleyValueSampling(model).attribute(x, target=0, n_samples=s)
        torch.manual_seed(seed)
        perms = torch.stack([torch.randperm(P) for _ in range(s)])
    for fast in (True, False):
        for cap in (2**24, 2 * P * P):
            ours = attribute("shapley_sampling", model, x, permutations=perms, fast=fast, max_batch_elements=cap)
            # captum returns float32 here even for float64 inputs
            torch.testing.assert_close(ours, ref.to(ours.dtype), atol=ATOL, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_shapley_sampling_efficiency(dtype):
    model, x = make_model(dtype=dtype), make_inputs(dtype=dtype)
    base = make_inputs(seed=4, n=1, dtype=dtype)
    delta = f0(model, x) - f0(model, base.expand_as(x))
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for fast in (True, False):
        a = attribute("shapley_sampling", model, x, baselines=base, n_samples=3, seed=0, fast=fast)
        torch.testing.assert_close(a.sum(1), delta, atol=tol, rtol=0)
    g = torch.Generator().manual_seed(8)
    a1 = attribute("shapley_sampling", model, x, n_samples=4, generator=g)
    a2 = attribute("shapley_sampling", model, x, n_samples=4, generator=torch.Generator().manual_seed(8))
    torch.testing.assert_close(a1, a2)


def test_shapley_exact_for_additive_model():
    """For a linear model every ordering gives the same marginal: w_j (x_j - b_j)."""
    lin = nn.Linear(P, 1).double()
    x = make_inputs()
    a = attribute("shapley_sampling", nn.Sequential(lin), x, n_samples=2)
    torch.testing.assert_close(a, x * lin.weight.detach(), atol=1e-12, rtol=0)


def test_multi_output_target_matches_captum():
    g = torch.Generator().manual_seed(3)
    model = nn.Sequential(nn.Linear(P, 8), nn.ReLU(), nn.Linear(8, 3)).double().eval()
    with torch.no_grad():
        for q in model.parameters():
            q.copy_(torch.randn(q.shape, generator=g, dtype=torch.float64))
    x = make_inputs()
    refs = {
        "gradient": Saliency(model).attribute(x, target=2, abs=False),
        "integrated_gradients": IntegratedGradients(model).attribute(x, target=2, n_steps=16),
        "deeplift": DeepLift(model).attribute(x, baselines=0.0, target=2),
        "guided_backprop": GuidedBackprop(model).attribute(x, target=2),
        "lrp_epsilon": LRP(model).attribute(x, target=2),
        "feature_ablation": FeatureAblation(model).attribute(x, target=2),
    }
    for name, ref in refs.items():
        kw = {"n_steps": 16} if name == "integrated_gradients" else {}
        torch.testing.assert_close(attribute(name, model, x, target=2, **kw), ref, atol=ATOL, rtol=0, msg=name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        ref = ShapleyValueSampling(model).attribute(x, target=2, n_samples=3)
        torch.manual_seed(0)
        perms = torch.stack([torch.randperm(P) for _ in range(3)])
    ours = attribute("shapley_sampling", model, x, target=2, permutations=perms)
    torch.testing.assert_close(ours, ref.to(ours.dtype), atol=ATOL, rtol=0)
