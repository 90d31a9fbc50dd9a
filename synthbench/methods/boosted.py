"""Methods read off the shared gradient-boosted trees (:mod:`synthbench.models.booster`): the screened booster ``gbm``
and the booster on every input ``gbm_full``, each method registered for both (:data:`BOOSTERS`).

TreeSHAP explains the booster's raw score (binary: the log-odds of ``y = 1``; more classes: the
raw score of each explained row's own label). ``local`` is signed, ``(n_explain, p)``; the global
score is its mean absolute value over the explained rows.
"""

from __future__ import annotations

import numpy as np

from synthbench.methods.registry import bind_kind, register_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput

__all__ = ["gbm_treeshap", "gbm_treeshap_interventional", "gbm_gain", "own_class", "BOOSTERS", "BOOSTER_WORDS"]

#: The boosters every booster method explains: model kind -> the prefix of the method's registered name (the screened
#: booster ``gbm``, ``gbm_treeshap``; the booster on every input ``gbm_full``, ``gbm_full_treeshap``).
BOOSTERS = {"gbm": "gbm_", "gbm_full": "gbm_full_"}

#: How the methods' descriptions name each booster.
BOOSTER_WORDS = {"gbm": "gradient-boosted trees", "gbm_full": "gradient-boosted trees on every input (no screening)"}

_TREESHAP = "Lundberg et al. 2020 (Nature Machine Intelligence)"


def own_class(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Binary ``(n, p)`` contributions as they are; ``(n, K, p)`` ones reduced to each row's own label, ``(n, p)``."""
    return values if values.ndim == 2 else values[np.arange(len(labels)), np.asarray(labels)]


def gbm_treeshap(data: FoldData, models: SharedModels, rng: np.random.Generator, *, kind: str) -> MethodOutput:
    """The booster's native TreeSHAP values of the explained rows, ``(n_explain, p)``, signed."""
    local = own_class(models.get(kind).contributions(data.X_explain), data.y_explain)
    return MethodOutput(np.abs(local).mean(axis=0), local)


def gbm_treeshap_interventional(
    data: FoldData, models: SharedModels, rng: np.random.Generator, *, kind: str, n_background: int
) -> MethodOutput:
    """Interventional TreeSHAP (the features' marginal distribution: ``n_background`` training rows drawn with the
    cell's generator), ``(n_explain, p)``, signed."""
    import shap  # imported here: shap's import is slow and only the TreeSHAP methods need it

    model = models.get(kind)
    rows = rng.choice(len(data.X_train), size=min(int(n_background), len(data.X_train)), replace=False)
    explainer = shap.TreeExplainer(
        model.booster, data=data.X_train[np.sort(rows)], feature_perturbation="interventional", model_output="raw"
    )
    values = np.asarray(explainer.shap_values(data.X_explain, check_additivity=False), dtype=np.float64)
    if values.ndim == 3:  # more classes: (n, p, K) in shap >= 0.45
        values = values.transpose(0, 2, 1)
    local = own_class(values, data.y_explain)
    return MethodOutput(np.abs(local).mean(axis=0), local)


def gbm_gain(data: FoldData, models: SharedModels, rng: np.random.Generator, *, kind: str) -> np.ndarray:
    """The booster's gain importances, ``(p,)``, non-negative."""
    return models.get(kind).gain()


for _kind, _prefix in BOOSTERS.items():
    _model = BOOSTER_WORDS[_kind]
    register_method(
        f"{_prefix}treeshap",
        description=f"{_model}: exact path-dependent TreeSHAP of the raw score from LightGBM's own pred_contrib; "
        "mean |SHAP| over the explained rows",
        reference=f"{_TREESHAP}; LightGBM pred_contrib",
        needs=(_kind,),
        default=_kind == "gbm",
        maps=True,
    )(bind_kind(gbm_treeshap, f"{_prefix}treeshap", _kind))
    register_method(
        f"{_prefix}treeshap_interventional",
        description=f"{_model}: interventional TreeSHAP of the raw score (shap.TreeExplainer against 100 training "
        "rows); mean |SHAP| over the explained rows",
        reference=f"{_TREESHAP}; shap TreeExplainer(feature_perturbation='interventional')",
        needs=(_kind,),
        maps=True,
        default=False,
        params={"n_background": 100},
    )(bind_kind(gbm_treeshap_interventional, f"{_prefix}treeshap_interventional", _kind))
    register_method(
        f"{_prefix}gain",
        description=f"{_model}: total gain of each feature's splits (LightGBM)",
        reference="Friedman 2001 (Annals of Statistics); Ke et al. 2017 (NeurIPS); LightGBM gain importance",
        needs=(_kind,),
        default=_kind == "gbm",
    )(bind_kind(gbm_gain, f"{_prefix}gain", _kind))
