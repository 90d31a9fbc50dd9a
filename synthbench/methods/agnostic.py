"""Model-agnostic methods a practitioner runs on a booster and a network alike, through their reference packages.

Each is registered on the shared network of tables (``<name>``, the MLP of the cell's preset) and on each shared
booster (``gbm_<name>``, ``gbm_full_<name>``), so every explained model's ordering holds them.

``kernel_shap``
    KernelSHAP (Lundberg & Lee 2017), ``shap.KernelExplainer``: the explained output's Shapley values against a
    background of ``n_background`` training rows drawn with the cell's generator, ``nsamples`` coalitions per row
    and the package's default regularisation (``l1_reg="num_features(10)"``: at most 10 features nonzero per row,
    recorded as a parameter). The package samples coalitions from NumPy's global generator: it is seeded from the
    cell's generator for the call and restored after.
``lime``
    LIME (Ribeiro, Singh & Guestrin 2016), ``lime.lime_tabular.LimeTabularExplainer`` in regression mode on the
    explained output: quartile-discretised training statistics, ``num_samples`` perturbations per row drawn from
    the explainer's own generator (seeded from the cell's), every feature's weight kept (``num_features = p``).
``held_out_permutation``
    Permutation importance (Breiman 2001) as scikit-learn computes it: the mean drop in the log-likelihood of the
    fold's held-out rows (``neg_log_loss``: a proper score, graded where accuracy on a few hundred rows moves in steps
    and ties the features a model barely reads) over ``n_repeats`` shuffles of each column. Global only; signed (a
    negative value: shuffling helped), the scorer uses ``|score|``.
``gbm_split_count``, ``gbm_full_split_count``
    The booster's own split-count importance: how many splits use each feature (LightGBM ``split``).

The explained output is the one the other methods of the model explain: the single logit of a binary network and
the booster's raw score (log-odds of ``y = 1``); with more classes, each explained row's own label. ``local`` is
signed, ``(n_explain, p)``; the global score of the local methods is its mean absolute value over the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin

from synthbench.methods.boosted import BOOSTER_WORDS, BOOSTERS
from synthbench.methods.recipe import explained_targets
from synthbench.methods.registry import bind_kind, register_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput

__all__ = [
    "explained_output",
    "kernel_shap_values",
    "lime_values",
    "held_out_permutation",
    "split_count",
    "AGNOSTIC_METHODS",
]

#: The models each model-agnostic method explains: kind -> name prefix of its registration (the network, then the
#: boosters of :data:`~synthbench.methods.boosted.BOOSTERS`).
_MODELS = {"mlp": "", **BOOSTERS}
_MODEL_WORDS = {"mlp": "MLP", **BOOSTER_WORDS}


def explained_output(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """``f(X)``: the model's outputs on rows ``X`` ``(n, p)``, float64 ``(n, K)`` (``K = 1``: a binary network's logit
    or the booster's raw score), from its torch ``module`` on its ``device`` without a graph."""
    module, device = model.module, torch.device(model.device)

    def f(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = module(torch.as_tensor(np.asarray(X, dtype=np.float32), device=device))
        return out.reshape(len(X), -1).double().cpu().numpy()

    return f


def _column(f: Callable[[np.ndarray], np.ndarray], k: int) -> Callable[[np.ndarray], np.ndarray]:
    """Output column ``k`` of ``f``, ``(n,)``."""
    return lambda X: f(X)[:, k]


@contextmanager
def _numpy_global_seed(seed: int) -> Iterator[None]:
    """NumPy's global generator seeded with ``seed`` inside, its state restored after (for a package that draws
    from it)."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def kernel_shap_values(
    f: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    background: np.ndarray,
    seed: int,
    *,
    nsamples: int | str = "auto",
    l1_reg: str | float = "num_features(10)",
) -> np.ndarray:
    """``shap.KernelExplainer(f, background).shap_values(X)`` with NumPy's global generator seeded with ``seed``:
    the Shapley values of the single-output ``f`` (``(n,)`` outputs) for each row of ``X``, float64 ``(n, p)``."""
    import shap  # imported here: shap's import is slow

    with _numpy_global_seed(seed):
        explainer = shap.KernelExplainer(f, background)
        values = explainer.shap_values(np.asarray(X, dtype=np.float64), nsamples=nsamples, l1_reg=l1_reg, silent=True)
    return np.asarray(values, dtype=np.float64).reshape(len(X), -1)


def lime_values(
    f: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    X_train: np.ndarray,
    seed: int,
    *,
    num_samples: int = 5000,
) -> np.ndarray:
    """LIME's weights (``LimeTabularExplainer(X_train, mode="regression")``, the package's defaults otherwise) of
    every feature for each row of ``X``, explaining the single-output ``f``: float64 ``(n, p)``, signed."""
    from lime.lime_tabular import LimeTabularExplainer

    p = X.shape[1]
    explainer = LimeTabularExplainer(np.asarray(X_train, dtype=np.float64), mode="regression", random_state=seed)
    out = np.zeros((len(X), p))
    for i, row in enumerate(np.asarray(X, dtype=np.float64)):
        found = explainer.explain_instance(row, f, num_features=p, num_samples=num_samples)
        for j, w in found.local_exp[1]:  # regression: the fit is stored under label 1 (its negation under 0)
            out[i, j] = w
    return out


def _per_target(
    explain: Callable[[Callable[[np.ndarray], np.ndarray], np.ndarray], np.ndarray],
    model: Any,
    data: FoldData,
) -> np.ndarray:
    """``explain(f_k, rows)`` of the explained rows, each row with its explained output ``k`` (the single output of a
    binary model; else its label), ``(n_explain, p)``."""
    f = explained_output(model)
    targets = explained_targets("label", model, data, data.X_explain)
    if targets is None:
        return explain(_column(f, 0), data.X_explain)
    out = np.zeros(data.X_explain.shape, dtype=np.float64)
    for k in np.unique(targets):
        rows = np.flatnonzero(targets == k)
        out[rows] = explain(_column(f, int(k)), data.X_explain[rows])
    return out


def _kernel_shap(
    data: FoldData,
    models: SharedModels,
    rng: np.random.Generator,
    *,
    kind: str,
    n_background: int,
    nsamples: Any,
    l1_reg: Any,
) -> MethodOutput:
    picks = rng.choice(len(data.X_train), size=min(int(n_background), len(data.X_train)), replace=False)
    background = data.X_train[np.sort(picks)].astype(np.float64)
    seed = int(rng.integers(2**32 - 1))
    local = _per_target(
        lambda f, X: kernel_shap_values(f, X, background, seed, nsamples=nsamples, l1_reg=l1_reg),
        models.get(kind),
        data,
    )
    return MethodOutput(np.abs(local).mean(axis=0), local)


def _lime(
    data: FoldData, models: SharedModels, rng: np.random.Generator, *, kind: str, num_samples: int
) -> MethodOutput:
    seed = int(rng.integers(2**32 - 1))
    local = _per_target(
        lambda f, X: lime_values(f, X, data.X_train, seed, num_samples=num_samples), models.get(kind), data
    )
    return MethodOutput(np.abs(local).mean(axis=0), local)


class _Fitted(ClassifierMixin, BaseEstimator):
    """A trained model as scikit-learn's permutation importance takes it: a classifier whose ``predict``,
    ``predict_proba`` and ``classes_`` are the model's, with a ``fit`` it never calls (the model is trained
    already)."""

    def __init__(self, model: Any = None) -> None:
        self.model = model

    @property
    def classes_(self) -> np.ndarray:
        return self.model.classes_

    def fit(self, X: np.ndarray, y: np.ndarray) -> _Fitted:  # pragma: no cover - never called
        raise NotImplementedError("the model is trained already")

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict(X))

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_proba(X))


def held_out_permutation(
    data: FoldData, models: SharedModels, rng: np.random.Generator, *, kind: str, n_repeats: int
) -> np.ndarray:
    """Mean drop of the held-out rows' log-likelihood (scikit-learn's ``neg_log_loss``) over ``n_repeats`` shuffles of
    each column (scikit-learn's ``permutation_importance``), ``(p,)``, signed."""
    from sklearn.inspection import permutation_importance

    result = permutation_importance(
        _Fitted(models.get(kind)),
        data.X_test,
        data.y_test,
        scoring="neg_log_loss",
        n_repeats=int(n_repeats),
        random_state=int(rng.integers(2**31 - 1)),
        n_jobs=1,
    )
    return np.asarray(result.importances_mean, dtype=np.float64)


def split_count(data: FoldData, models: SharedModels, rng: np.random.Generator, *, kind: str) -> np.ndarray:
    """How many of the booster's splits use each feature, ``(p,)``, non-negative."""
    return np.asarray(models.get(kind).booster.feature_importance(importance_type="split"), dtype=np.float64)


#: name -> (description, reference, function, parameters, returns maps) of the methods registered on each model.
AGNOSTIC_METHODS: dict[str, tuple[str, str, Callable[..., Any], dict[str, Any], bool]] = {
    "kernel_shap": (
        "KernelSHAP (shap.KernelExplainer), 50 training rows as background, the package's coalitions and "
        "regularisation (at most 10 features per row); mean |SHAP| over the explained rows",
        "Lundberg & Lee 2017 (NeurIPS); shap KernelExplainer",
        _kernel_shap,
        {"n_background": 50, "nsamples": "auto", "l1_reg": "num_features(10)"},
        True,
    ),
    "lime": (
        "LIME (lime package, tabular, regression on the explained output), 5000 samples a row, every feature's "
        "weight; mean |weight| over the explained rows",
        "Ribeiro, Singh & Guestrin 2016 (KDD); lime LimeTabularExplainer",
        _lime,
        {"num_samples": 5000},
        True,
    ),
    "held_out_permutation": (
        "permutation importance: drop in the held-out rows' log-likelihood, 5 shuffles a column (scikit-learn)",
        "Breiman 2001 (Machine Learning); scikit-learn permutation_importance",
        held_out_permutation,
        {"n_repeats": 5},
        False,
    ),
}


for _name, (_description, _reference, _fn, _params, _maps) in AGNOSTIC_METHODS.items():
    for _kind, _prefix in _MODELS.items():
        register_method(
            f"{_prefix}{_name}",
            description=f"{_MODEL_WORDS[_kind]}: {_description}",
            reference=_reference,
            needs={"tabular": (_kind,)},
            default=False,
            params=_params,
            maps=_maps,
        )(bind_kind(_fn, f"{_prefix}{_name}", _kind))

for _kind, _prefix in BOOSTERS.items():
    register_method(
        f"{_prefix}split_count",
        description=f"{BOOSTER_WORDS[_kind]}: number of splits on each feature (LightGBM split importance)",
        reference="Ke et al. 2017 (NeurIPS); LightGBM split importance",
        needs=(_kind,),
        default=False,
    )(bind_kind(split_count, f"{_prefix}split_count", _kind))
