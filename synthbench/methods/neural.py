"""Attribution methods on the shared MLP, registered as benchmark methods.

Each explains the fold's explained rows with :func:`synthbench.attribution.attribute`
on the positive-class logit; ``local`` is the signed attribution ``(n_explain, p)`` and the
feature score is its mean absolute value over rows.
"""

from __future__ import annotations

import numpy as np

from synthbench.protocol import FoldData
from synthbench.protocol import MethodOutput
from synthbench.methods.registry import register_method
from synthbench.models import SharedModels

__all__ = ["NEURAL_METHODS", "VARIANTS"]

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


#: Parameter variants registered under their own names (not run by default):
#: name -> (attribution method, description, parameters). These are the 2023 benchmark's captum calls.
VARIANTS: dict[str, tuple[str, str, dict]] = {
    "integrated_gradients_nomul": (
        "integrated_gradients", "integrated gradients without the input factor (mean path gradient), zero "
        "baseline, 50 steps (captum multiply_by_inputs=False, as the 2023 benchmark)",
        {"n_steps": 50, "multiply_by_inputs": False}),
    "deeplift_nomul": (
        "deeplift", "DeepLIFT rescale multipliers, zero baseline (captum multiply_by_inputs=False, as the 2023 benchmark)",
        {"multiply_by_inputs": False}),
    "smoothgrad_saliency": (
        "smoothgrad", "SmoothGrad of |gradient|, 50 samples, absolute noise sd 0.1 (captum NoiseTunnel(Saliency), "
        "as the 2023 benchmark)",
        {"base": "saliency", "n_samples": 50, "stdevs": 0.1}),
    "guided_backprop_captum": (
        "guided_backprop", "guided backpropagation as captum applies it: the rule at nn.ReLU modules only, so the plain "
        "gradient on a LeakyReLU MLP (as the 2023 benchmark ran it)", {"rules_on": "relu_only"}),
    "deconvolution_captum": (
        "deconvolution", "deconvolution as captum applies it: the rule at nn.ReLU modules only, so the plain gradient "
        "on a LeakyReLU MLP (as the 2023 benchmark ran it)", {"rules_on": "relu_only"}),
}

#: Methods that draw random numbers (noise, permutations, baselines) from the cell's seed.
STOCHASTIC = frozenset({"smoothgrad", "smoothgrad_sq", "vargrad", "feature_permutation", "shapley_sampling", "gradient_shap"})


def _make(name: str, attribution: str):
    def method(data: FoldData, models: SharedModels, rng: np.random.Generator, **params) -> MethodOutput:
        import torch

        from synthbench.attribution import attribute

        trained = models.get("mlp")
        device = next(trained.module.parameters()).device
        inputs = torch.as_tensor(data.X_explain, device=device)
        if attribution in STOCHASTIC:
            params = {**params, "generator": torch.Generator(device=device).manual_seed(int(rng.integers(2**63 - 1)))}
        local = attribute(attribution, trained.module, inputs, **params).detach().cpu().numpy()
        return MethodOutput(np.abs(local).mean(axis=0), local)

    method.__name__ = name
    method.__doc__ = f"{name} on the fold's MLP; local attributions (n_explain, p), score = mean |attribution|."
    return method


for _name, (_description, _default, _params) in NEURAL_METHODS.items():
    register_method(_name, description=f"MLP: {_description}", needs=("mlp",), default=_default,
                    params=_params)(_make(_name, _name))
for _name, (_attribution, _description, _params) in VARIANTS.items():
    register_method(_name, description=f"MLP: {_description}", needs=("mlp",), default=False,
                    params=_params)(_make(_name, _attribution))
