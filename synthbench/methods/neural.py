"""Attribution methods on the shared networks (and, for the perturbation methods, the shared booster).

Each explains the fold's explained examples with :func:`synthbench.attribution.attribute` on the
fold's shared model: the MLP of tables, the CNN of images (for the methods that accept images);
the perturbation methods also run on the gradient-boosted trees as ``gbm_<name>``.
Target: the single logit of a binary MLP (evidence for ``y = 1``); for a model with one logit
per class (the CNN, multi-class MLPs), each example's own label. ``local`` is the signed
attribution of input shape ``(n_explain, *input_shape)``; the global score is its mean absolute
value over the examples.

On images the perturbation methods perturb square patches of all channels at once
(``feature_mask``; ``patch_grid`` patches per side: 4 x 4-pixel patches on 32 x 32 images for
ablation and permutation, 8 x 8 for Shapley sampling; 1 and 2 pixels on 8 x 8 digits), integrated gradients start
from the black image in 25 steps, and the noise
ensembles draw 15 samples of sd 0.15 x the images' global range (``per_feature=False``); the
parameters are declared per input kind and recorded with every cell.
"""

from __future__ import annotations

import numpy as np

from synthbench.methods.boosted import BOOSTER_WORDS, BOOSTERS
from synthbench.methods.recipe import AttributionRecipe, patch_mask
from synthbench.methods.registry import AS_RUN_2023, register_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput

__all__ = ["NEURAL_METHODS", "VARIANTS", "IMAGE_PARAMS", "IMAGE_ONLY", "BOOSTER_METHODS", "REFERENCES", "patch_mask"]

_NOISE_IMAGE = {"n_samples": 15, "noise_level": 0.15, "per_feature": False}

#: Methods that also run on images, with their parameters there.
IMAGE_PARAMS: dict[str, dict] = {
    "gradient": {},
    "saliency": {},
    "input_x_gradient": {},
    "integrated_gradients": {"n_steps": 25},
    "guided_backprop": {},
    "deconvolution": {},
    "lrp_epsilon": {},
    "smoothgrad": _NOISE_IMAGE,
    "smoothgrad_sq": _NOISE_IMAGE,
    "vargrad": _NOISE_IMAGE,
    "feature_ablation": {"patch_grid": 8},
    "feature_permutation": {"patch_grid": 8},
    "shapley_sampling": {"n_samples": 10, "patch_grid": 4},
}

#: Image-only noise ensembles of integrated gradients and guided backprop:
#: name -> (attribution method, description, parameters).
IMAGE_ONLY: dict[str, tuple[str, str, dict]] = {
    f"{nt}_{short}": (
        nt,
        f"{label} of {base_name}, 15 samples, noise 15 % of the range",
        {**_NOISE_IMAGE, "base": base, **({"base_params": {"n_steps": 25}} if base == "integrated_gradients" else {})},
    )
    for nt, label in (("smoothgrad", "SmoothGrad"), ("smoothgrad_sq", "SmoothGrad²"), ("vargrad", "VarGrad"))
    for short, base, base_name in (
        ("ig", "integrated_gradients", "integrated gradients (25 steps)"),
        ("gbp", "guided_backprop", "guided backprop"),
    )
}

#: name -> (description, run by default, parameters passed to ``attribute``)
NEURAL_METHODS: dict[str, tuple[str, bool, dict]] = {
    "gradient": ("signed input gradient of the logit (ranks like saliency)", False, {}),
    "saliency": ("|input gradient| of the logit (Simonyan et al.)", True, {}),
    "input_x_gradient": ("input × gradient", True, {}),
    "integrated_gradients": ("integrated gradients, zero baseline, 50 steps", True, {"n_steps": 50}),
    "deeplift": ("DeepLIFT rescale rule, zero baseline", True, {}),
    "guided_backprop": ("guided backpropagation through the actual nonlinearity", True, {}),
    "deconvolution": ("deconvolution through the actual nonlinearity", True, {}),
    "lrp_epsilon": ("layer-wise relevance propagation, epsilon rule", True, {}),
    "lrp_zplus": ("layer-wise relevance propagation, z+ rule", True, {}),
    "smoothgrad": ("SmoothGrad of the gradient, 50 samples, noise 15 % of the range", True, {"n_samples": 50}),
    "smoothgrad_sq": ("SmoothGrad² of the gradient, 50 samples", True, {"n_samples": 50}),
    "vargrad": ("VarGrad of the gradient, 50 samples", True, {"n_samples": 50}),
    "feature_ablation": ("output change when each feature is set to 0", True, {}),
    "feature_permutation": ("output change when each feature is permuted across rows", True, {}),
    "shapley_sampling": ("Shapley value sampling, 25 permutations, zero baseline", True, {"n_samples": 25}),
    "gradient_shap": ("GradientSHAP (expected gradients), 50 samples", True, {"n_samples": 50}),
}


#: The model-agnostic (perturbation) methods that also explain the shared booster, registered as ``gbm_<name>``:
#: name -> (run by default, parameters). They perturb its raw score (log-odds) through its forward-only
#: torch view; Shapley sampling costs ``n_samples * (p + 1)`` booster predictions per row, so it is not a default.
BOOSTER_METHODS: dict[str, tuple[bool, dict]] = {
    "feature_ablation": (True, {}),
    "feature_permutation": (True, {}),
    "shapley_sampling": (False, {"n_samples": 25}),
}


#: Parameter variants registered under their own names (not run by default):
#: name -> (attribution method, description, parameters). These are the 2023 benchmark's captum calls.
VARIANTS: dict[str, tuple[str, str, dict]] = {
    "integrated_gradients_nomul": (
        "integrated_gradients",
        "integrated gradients without the input factor (mean path gradient), zero "
        "baseline, 50 steps (captum multiply_by_inputs=False, as the 2023 benchmark)",
        {"n_steps": 50, "multiply_by_inputs": False},
    ),
    "deeplift_nomul": (
        "deeplift",
        "DeepLIFT rescale multipliers, zero baseline (captum multiply_by_inputs=False, as the 2023 benchmark)",
        {"multiply_by_inputs": False},
    ),
    "smoothgrad_saliency": (
        "smoothgrad",
        "SmoothGrad of |gradient|, 50 samples, absolute noise sd 0.1 (captum NoiseTunnel(Saliency), "
        "as the 2023 benchmark)",
        {"base": "saliency", "n_samples": 50, "stdevs": 0.1},
    ),
    "guided_backprop_captum": (
        "guided_backprop",
        "guided backpropagation as captum applies it: the rule at nn.ReLU modules only, so the plain "
        "gradient on a LeakyReLU MLP (as the 2023 benchmark ran it)",
        {"rules_on": "relu_only"},
    ),
    "deconvolution_captum": (
        "deconvolution",
        "deconvolution as captum applies it: the rule at nn.ReLU modules only, so the plain gradient "
        "on a LeakyReLU MLP (as the 2023 benchmark ran it)",
        {"rules_on": "relu_only"},
    ),
}

_SIMONYAN = "Simonyan, Vedaldi & Zisserman 2014 (arXiv:1312.6034)"
_IG = "Sundararajan, Taly & Yan 2017 (ICML)"
_DEEPLIFT = "Shrikumar, Greenside & Kundaje 2017 (ICML)"
_GBP = "Springenberg, Dosovitskiy, Brox & Riedmiller 2015 (ICLR workshop)"
_DECONV = "Zeiler & Fergus 2014 (ECCV)"
_LRP = "Bach et al. 2015 (PLOS ONE)"
_SMOOTHGRAD = "Smilkov et al. 2017 (arXiv:1706.03825)"
_SMOOTHGRAD_SQ = "Hooker, Erhan, Kindermans & Kim 2019 (NeurIPS)"
_VARGRAD = "Adebayo, Gilmer, Goodfellow & Kim 2018 (ICLR workshop)"

#: name -> the publication (or software) each registered attribution method follows
#: (:attr:`~synthbench.methods.registry.MethodSpec.reference`).
REFERENCES: dict[str, str] = {
    "gradient": _SIMONYAN,
    "saliency": _SIMONYAN,
    "input_x_gradient": "Shrikumar, Greenside, Shcherbina & Kundaje 2016 (arXiv:1605.01713)",
    "integrated_gradients": _IG,
    "deeplift": _DEEPLIFT,
    "guided_backprop": _GBP,
    "deconvolution": _DECONV,
    "lrp_epsilon": _LRP,
    "lrp_zplus": f"{_LRP}; z+ rule: Montavon et al. 2017 (Pattern Recognition)",
    "smoothgrad": _SMOOTHGRAD,
    "smoothgrad_sq": _SMOOTHGRAD_SQ,
    "vargrad": _VARGRAD,
    "feature_ablation": "occlusion: Zeiler & Fergus 2014 (ECCV); captum FeatureAblation",
    "feature_permutation": "permutation importance: Breiman 2001 (Machine Learning); captum FeaturePermutation",
    "shapley_sampling": "Castro, Gómez & Tejada 2009 (Computers & Operations Research); Štrumbelj & Kononenko 2014 "
    "(Knowledge and Information Systems); captum ShapleyValueSampling",
    "gradient_shap": "Lundberg & Lee 2017 (NeurIPS); expected gradients: Erion et al. 2021 (Nature Machine "
    "Intelligence); captum GradientShap",
    "integrated_gradients_nomul": f"{_IG}; captum IntegratedGradients(multiply_by_inputs=False); {AS_RUN_2023}",
    "deeplift_nomul": f"{_DEEPLIFT}; captum DeepLift(multiply_by_inputs=False); {AS_RUN_2023}",
    "smoothgrad_saliency": f"{_SMOOTHGRAD}; captum NoiseTunnel(Saliency); {AS_RUN_2023}",
    "guided_backprop_captum": f"{_GBP}; captum GuidedBackprop; {AS_RUN_2023}",
    "deconvolution_captum": f"{_DECONV}; captum Deconvolution; {AS_RUN_2023}",
    # the noise ensembles of integrated gradients and guided backprop that Hooker et al. 2019 compared
    **{
        f"{nt}_{short}": f"{ensemble} over {base}" + ("" if nt == "smoothgrad_sq" else f"; as in {_SMOOTHGRAD_SQ}")
        for nt, ensemble in (
            ("smoothgrad", f"SmoothGrad: {_SMOOTHGRAD}"),
            ("smoothgrad_sq", f"SmoothGrad²: {_SMOOTHGRAD_SQ}"),
            ("vargrad", f"VarGrad: {_VARGRAD}"),
        )
        for short, base in (("ig", f"integrated gradients: {_IG}"), ("gbp", f"guided backprop: {_GBP}"))
    },
}


def _make(name: str, recipe: AttributionRecipe, needs: dict[str, tuple[str, ...]]):
    def method(data: FoldData, models: SharedModels, rng: np.random.Generator, **params) -> MethodOutput:
        (kind,) = needs[data.kind]
        local = recipe.explain(models.get(kind), data, rng, params).cpu().numpy()
        return MethodOutput(np.abs(local).mean(axis=0), local)

    method.__name__ = name
    method.__doc__ = (
        f"{name} on the fold's shared model ({recipe.function}, target rule {recipe.target!r}); "
        "local attributions (n_explain, *input_shape), score = mean |attribution|."
    )
    return method


_NEEDS_BOTH: dict[str, tuple[str, ...]] = {"tabular": ("mlp",), "image": ("cnn",)}


def _register(
    name: str,
    attribution: str,
    description: str,
    needs: dict[str, tuple[str, ...]],
    *,
    reference: str | None = None,
    **options,
) -> None:
    recipe = AttributionRecipe(attribution)
    register_method(
        name,
        description=description,
        reference=REFERENCES[name] if reference is None else reference,
        needs=needs,
        recipe=recipe,
        **options,
    )(_make(name, recipe, needs))


for _name, (_description, _default, _params) in NEURAL_METHODS.items():
    images = _name in IMAGE_PARAMS
    _register(
        _name,
        _name,
        f"MLP{' / CNN' if images else ''}: {_description}",
        _NEEDS_BOTH if images else {"tabular": ("mlp",)},
        default=_default,
        params=_params,
        kind_params={"image": IMAGE_PARAMS[_name]} if images else None,
    )
for _name, (_attribution, _description, _params) in VARIANTS.items():
    _register(_name, _attribution, f"MLP: {_description}", {"tabular": ("mlp",)}, default=False, params=_params)
for _name, (_attribution, _description, _params) in IMAGE_ONLY.items():
    _register(_name, _attribution, f"CNN: {_description}", {"image": ("cnn",)}, default=False, params=_params)
for _kind, _prefix in BOOSTERS.items():
    for _name, (_default, _params) in BOOSTER_METHODS.items():
        _register(
            f"{_prefix}{_name}",
            _name,
            f"{BOOSTER_WORDS[_kind]}: {NEURAL_METHODS[_name][0]} (of the raw score)",
            {"tabular": (_kind,)},
            reference=REFERENCES[_name],
            default=_default and _kind == "gbm",
            params=_params,
        )
