"""Methods read off the shared 500-tree random forest.

None runs by default: on the default tables the forest learns far less than the gradient-boosted
trees (mean competence on xor with 100 decoys 0.14 against the booster's 0.68) at a higher cost per
fit, so their explanations of it are mostly of a model that did not learn; the booster's methods
(:mod:`synthbench.methods.boosted`) stand for the tree models. The forest still trains on every
fold's relevant columns for the learnability ceiling, and the 2023 suites run these methods.
"""

from __future__ import annotations

import numpy as np
from sklearn.inspection import permutation_importance

from synthbench.methods.registry import AS_RUN_2023, register_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput


@register_method(
    "rf",
    description="random forest impurity importance (mean decrease in Gini), 500 trees",
    reference="Breiman 2001 (Machine Learning); scikit-learn RandomForestClassifier",
    needs=("forest",),
    default=False,
)
def rf_impurity(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray:
    """The forest's ``feature_importances_``, shape ``(p,)``, non-negative."""
    return models.get("forest").feature_importances_


@register_method(
    "rf_permutation",
    description="random forest permutation importance: accuracy drop on the explained rows",
    reference="Breiman 2001 (Machine Learning); scikit-learn permutation_importance",
    needs=("forest",),
    default=False,
    params={"n_repeats": 3},
    max_features=10_000,  # p * n_repeats forest predictions: ~40 s at p = 100, ~1 h at 10,000 (n = 1000)
)
def rf_permutation(data: FoldData, models: SharedModels, rng: np.random.Generator, *, n_repeats: int) -> np.ndarray:
    """Mean accuracy drop over ``n_repeats`` shuffles of each column of the explained rows, ``(p,)``.

    Signed: a negative value means shuffling helped; the scorer uses ``|score|``.
    """
    result = permutation_importance(
        models.get("forest"),
        data.X_explain,
        data.y_explain,
        n_repeats=n_repeats,
        random_state=int(rng.integers(2**31 - 1)),
        n_jobs=1,
    )
    return result.importances_mean


def treeshap(data: FoldData, models: SharedModels, rng: np.random.Generator, *, rows: str = "explain") -> MethodOutput:
    """Exact interventional-free (path-dependent) TreeSHAP values of P(y = 1).

    ``rows="explain"``: ``local`` holds the SHAP values of the positive class on the explained
    rows, shape ``(n_explain, p)``, signed; ``scores`` is their mean absolute value over the rows.
    ``rows="train_and_test"``: ``scores`` is the mean absolute value over the training and
    held-out rows together (the 2023 benchmark's call), and no local attributions are returned.
    """
    import shap  # imported here: shap's import is slow and only this method needs it

    if rows not in ("explain", "train_and_test"):
        raise ValueError(f"rows must be 'explain' or 'train_and_test', got {rows!r}")
    forest = models.get("forest")
    X = data.X_explain if rows == "explain" else np.concatenate([data.X_train, data.X_test])
    values = np.asarray(shap.TreeExplainer(forest).shap_values(X, check_additivity=False))
    if values.ndim == 3:  # (n, p, n_classes) in shap >= 0.45
        positive = list(forest.classes_).index(forest.classes_[-1])
        values = values[:, :, positive]
    scores = np.abs(values).mean(axis=0)
    return MethodOutput(scores, values) if rows == "explain" else MethodOutput(scores)


_TREESHAP = "Lundberg et al. 2020 (Nature Machine Intelligence); shap TreeExplainer"
register_method(
    "treeshap",
    description="TreeSHAP (shap.TreeExplainer) on the forest; mean |SHAP| over the explained rows",
    reference=_TREESHAP,
    needs=("forest",),
    maps=True,
    default=False,
)(treeshap)
register_method(
    "treeshap_all_rows",
    description="TreeSHAP on the forest; mean |SHAP| over the training and held-out "
    "rows together (as the 2023 benchmark)",
    reference=f"{_TREESHAP}; {AS_RUN_2023}",
    needs=("forest",),
    default=False,
    params={"rows": "train_and_test"},
)(treeshap)
