"""synthbench.attribution on (N, C, H, W) inputs and a CNN, and per-example targets, against captum."""

from __future__ import annotations

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
from captum.attr._utils.lrp_rules import EpsilonRule
from torch import nn

from synthbench.attribution import ATTRIBUTION_METHODS, attribute, feature_scores, names

ATOL = 1e-7
N, C, H, W, K = 5, 2, 8, 8, 3
TARGET = torch.tensor([0, 1, 2, 1, 0])


def make_cnn(pool: str = "max", act: type[nn.Module] = nn.ReLU, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)  # test-only: the layers' default init draws from the global generator
    pooling = nn.MaxPool2d(2) if pool == "max" else nn.AvgPool2d(2)
    return (
        nn.Sequential(
            nn.Conv2d(C, 4, 3, padding=1),
            act(),
            pooling,
            nn.Conv2d(4, 4, 3, padding=1),
            act(),
            nn.Flatten(),
            nn.Linear(4 * (H // 2) * (W // 2), 8),
            act(),
            nn.Linear(8, K),
        )
        .double()
        .eval()
    )


def make_images(seed: int = 1, n: int = N) -> torch.Tensor:
    return torch.rand(n, C, H, W, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def patch_mask(size: int = 2) -> torch.Tensor:
    """Group ids 0..G-1 of ``size`` x ``size`` patches, shared by both channels, shape (C, H, W)."""
    rows = torch.arange(H) // size
    cols = torch.arange(W) // size
    ids = rows.view(-1, 1) * (W // size) + cols.view(1, -1)
    return ids.expand(C, H, W).clone()


def close(ours, ref, atol=ATOL, msg=""):
    torch.testing.assert_close(ours, ref.to(ours.dtype), atol=atol, rtol=1e-6, msg=msg)


def test_every_method_runs_on_images_and_keeps_the_input_shape():
    model, x = make_cnn(pool="avg"), make_images()
    for name in names():
        params = (
            {"n_samples": 2}
            if name in {"smoothgrad", "smoothgrad_sq", "vargrad", "gradient_shap", "shapley_sampling"}
            else {}
        )
        if name in {"shapley_sampling"}:
            params["feature_mask"] = patch_mask(4)
        a = attribute(name, model, x, target=TARGET, **params)
        assert a.shape == x.shape and torch.isfinite(a).all() and not a.requires_grad, name
    assert feature_scores(a).shape == (C, H, W)


def test_gradient_family_matches_captum_with_per_example_targets():
    model, x = make_cnn(), make_images()
    close(attribute("gradient", model, x, target=TARGET), Saliency(model).attribute(x, target=TARGET, abs=False))
    close(attribute("saliency", model, x, target=TARGET.tolist()), Saliency(model).attribute(x, target=TARGET))
    close(attribute("input_x_gradient", model, x, target=TARGET), InputXGradient(model).attribute(x, target=TARGET))
    ref = IntegratedGradients(model).attribute(x, target=TARGET, n_steps=25, baselines=0.0)
    close(attribute("integrated_gradients", model, x, target=TARGET, n_steps=25), ref)
    # chunked: fewer elements per call than one example's 25 integration points
    close(attribute("integrated_gradients", model, x, target=TARGET, n_steps=25, max_batch_elements=C * H * W), ref)


def test_guided_backprop_and_deconvolution_match_captum_through_conv_and_max_pooling():
    model, x = make_cnn(), make_images()
    close(attribute("guided_backprop", model, x, target=TARGET), GuidedBackprop(model).attribute(x, target=TARGET))
    close(attribute("deconvolution", model, x, target=TARGET), Deconvolution(model).attribute(x, target=TARGET))


def test_lrp_epsilon_matches_captum_on_a_cnn():
    model, x = make_cnn(), make_images()
    ref_model = make_cnn()
    ref_model[5].rule = EpsilonRule()  # captum has no default rule for Flatten; epsilon there is the identity
    ref = LRP(ref_model).attribute(x, target=TARGET)
    close(attribute("lrp_epsilon", model, x, target=TARGET), ref, atol=1e-6)


def test_deeplift_matches_captum_on_an_average_pooling_cnn_and_refuses_max_pooling():
    model, x = make_cnn(pool="avg"), make_images()
    base = make_images(seed=5, n=1)
    ref = DeepLift(model).attribute(x, baselines=base, target=TARGET)
    ours = attribute("deeplift", model, x, target=TARGET, baselines=base)
    close(ours, ref, atol=1e-6)
    with torch.no_grad():
        delta = model(x).gather(1, TARGET.view(-1, 1)).view(-1) - model(base).view(-1)[TARGET]
    close(ours.sum(dim=(1, 2, 3)), delta, atol=1e-9)  # completeness
    with pytest.raises(TypeError, match="MaxPool2d"):
        attribute("deeplift", make_cnn(pool="max"), x)


def _captum_noise(x: torch.Tensor, s: int, stdev: float, seed: int) -> torch.Tensor:
    """NoiseTunnel's one draw for (n * s) copies (example-major), in our (s, n, *shape) layout."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        noise = torch.normal(0, torch.tensor(stdev).repeat(x.shape[0] * s, *x.shape[1:]))
    return noise.view(x.shape[0], s, *x.shape[1:]).transpose(0, 1).to(x.dtype)


@pytest.mark.parametrize(
    "base,nt_type",
    [
        ("gradient", "smoothgrad_sq"),
        ("gradient", "vargrad"),
        ("integrated_gradients", "smoothgrad"),
        ("guided_backprop", "vargrad"),
        ("guided_backprop", "smoothgrad_sq"),
    ],
)
def test_noise_ensembles_match_captum_noise_tunnel_on_images(base, nt_type):
    model, x = make_cnn(), make_images()
    s, stdev, seed = 3, 0.15, 7
    captum_method = {
        "gradient": Saliency(model),
        "integrated_gradients": IntegratedGradients(model),
        "guided_backprop": GuidedBackprop(model),
    }[base]
    kwargs = {"abs": False} if base == "gradient" else {"n_steps": 5} if base == "integrated_gradients" else {}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ref = NoiseTunnel(captum_method).attribute(
            x, nt_type=nt_type, nt_samples=s, stdevs=stdev, target=TARGET, **kwargs
        )
    base_params = {"n_steps": 5} if base == "integrated_gradients" else None
    ours = attribute(
        nt_type, model, x, target=TARGET, base=base, base_params=base_params, noise=_captum_noise(x, s, stdev, seed)
    )
    close(ours, ref, atol=1e-6)


def test_image_noise_scale_is_a_share_of_the_global_range():
    model, x = make_cnn(), make_images()
    drawn = attribute("smoothgrad", model, x, n_samples=4, seed=3, per_feature=False, noise_level=0.15)
    sigma = 0.15 * float(x.max() - x.min())
    g = torch.Generator().manual_seed(3)
    noise = sigma * torch.randn((4, *x.shape), generator=g, dtype=x.dtype)
    close(drawn, attribute("smoothgrad", model, x, noise=noise))


@pytest.mark.parametrize("per_example", [False, True])
def test_feature_ablation_over_patches_matches_captum(per_example):
    model, x = make_cnn(), make_images()
    mask = patch_mask(2)
    if per_example:
        mask = torch.stack([torch.roll(mask, shifts=i, dims=2) for i in range(N)])
    base = 0.5
    ref = FeatureAblation(model).attribute(x, target=TARGET, baselines=base, feature_mask=mask)
    ours = attribute("feature_ablation", model, x, target=TARGET, baselines=base, feature_mask=mask)
    close(ours, ref)
    close(
        attribute(
            "feature_ablation",
            model,
            x,
            target=TARGET,
            baselines=base,
            feature_mask=mask,
            max_batch_elements=3 * C * H * W,
        ),
        ref,
    )
    # a patch's elements share one value
    flat = ours[0, 0]
    assert torch.equal(flat[0, 0].expand(2, 2), flat[:2, :2]) or per_example


def test_feature_permutation_over_patches_matches_captum_with_explicit_permutations():
    model, x = make_cnn(), make_images()
    mask = patch_mask(4)
    n_groups = int(mask.max()) + 1
    g = torch.Generator().manual_seed(0)
    perms = torch.stack([torch.randperm(N, generator=g) for _ in range(n_groups)])

    def perm_func(inp: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        j = int(mask[m.reshape(C, H, W)][0])
        return torch.where(m, inp[perms[j]], inp)

    ref = FeaturePermutation(model, perm_func=perm_func).attribute(x, target=TARGET, feature_mask=mask)
    close(attribute("feature_permutation", model, x, target=TARGET, feature_mask=mask, permutations=perms), ref)


def test_shapley_sampling_over_patches_matches_captum():
    model, x = make_cnn(), make_images()
    mask = patch_mask(4)
    n_groups, s, seed = int(mask.max()) + 1, 3, 4
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ref = ShapleyValueSampling(model).attribute(x, target=TARGET, feature_mask=mask, n_samples=s)
        torch.manual_seed(seed)
        perms = torch.stack([torch.randperm(n_groups) for _ in range(s)])
    ours = attribute("shapley_sampling", model, x, target=TARGET, feature_mask=mask, permutations=perms)
    close(ours, ref)
    # efficiency over the groups: one element per group carries the group's value
    first = torch.stack([(mask == j).reshape(-1).nonzero()[0, 0] for j in range(n_groups)])
    with torch.no_grad():
        delta = model(x).gather(1, TARGET.view(-1, 1)).view(-1) - model(torch.zeros_like(x))[:, 0:K].gather(
            1, TARGET.view(-1, 1)
        ).view(-1)
    close(ours.reshape(N, -1)[:, first].sum(1), delta, atol=1e-9)


def test_per_example_targets_on_the_mlp_fast_paths_equal_one_target_at_a_time():
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, K)).double().eval()
    x = torch.randn(N, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    for name, kw in [
        ("integrated_gradients", {"n_steps": 8}),
        ("feature_ablation", {}),
        ("shapley_sampling", {"n_samples": 3}),
        ("feature_permutation", {}),
        ("lrp_epsilon", {}),
        ("deeplift", {}),
        ("smoothgrad_sq", {"n_samples": 4}),
        ("gradient_shap", {"n_samples": 4}),
    ]:
        together = attribute(name, model, x, target=TARGET, **kw)
        for t in range(K):
            # the sampled methods draw the same noise and permutations: the stream does not depend on the target
            rows = TARGET == t
            close(together[rows], attribute(name, model, x, target=t, **kw)[rows], msg=name)


def test_target_validation():
    model, x = make_cnn(), make_images()
    with pytest.raises(ValueError, match="entries for 5 examples"):
        attribute("gradient", model, x, target=[0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        attribute("gradient", model, x, target=torch.tensor([0, -1, 0, 0, 0]))
    with pytest.raises(ValueError, match="integers"):
        attribute("gradient", model, x, target=torch.zeros(N))
    with pytest.raises(ValueError, match="out of range"):
        attribute("gradient", model, x, target=K)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        attribute("gradient", model, x[0, 0, 0])
    with pytest.raises(ValueError, match="feature_mask"):
        attribute("gradient", model, x, feature_mask=patch_mask())
    with pytest.raises(ValueError, match="does not match"):
        attribute("feature_ablation", model, x, feature_mask=torch.zeros(H, W, dtype=torch.long))


def test_create_graph_lets_an_attack_differentiate_the_explanation():
    model, x = make_cnn(act=nn.Softplus), make_images()
    xr = x.clone().requires_grad_(True)
    sal = attribute("gradient", model, xr, target=TARGET, create_graph=True)
    assert sal.requires_grad
    (d_ours,) = torch.autograd.grad(sal.pow(2).sum(), xr)
    # reference: double backprop by hand
    xr2 = x.clone().requires_grad_(True)
    out = model(xr2).gather(1, TARGET.view(-1, 1)).sum()
    (g,) = torch.autograd.grad(out, xr2, create_graph=True)
    (d_ref,) = torch.autograd.grad(g.pow(2).sum(), xr2)
    close(d_ours, d_ref, atol=1e-10)
    assert d_ours.abs().sum() > 0
    for name in sorted(n for n, f in ATTRIBUTION_METHODS.items() if f.create_graph):
        params = {"n_samples": 2} if name in {"smoothgrad", "smoothgrad_sq", "vargrad", "gradient_shap"} else {}
        a = attribute(
            name,
            model,
            xr,
            target=TARGET,
            create_graph=True,
            **{**params, **({"n_steps": 4} if name == "integrated_gradients" else {})},
        )
        (d,) = torch.autograd.grad(a.sum(), xr)
        assert torch.isfinite(d).all() and d.abs().sum() > 0, name
        # the graph changes nothing about the values
        close(
            a.detach(),
            attribute(
                name, model, x, target=TARGET, **params, **({"n_steps": 4} if name == "integrated_gradients" else {})
            ),
            msg=name,
        )
    with pytest.raises(ValueError, match="create_graph"):
        attribute("guided_backprop", model, xr, create_graph=True)
