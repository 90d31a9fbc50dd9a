"""The shared random forest (500 trees, as in the 2023 benchmark)."""

from __future__ import annotations

from sklearn.ensemble import RandomForestClassifier

from synthbench.models.shared import ModelKind, TrainSettings, register_model
from synthbench.protocol import FoldData

N_TREES = 500


def train_forest(data: FoldData, settings: TrainSettings, *, replicate: int = 0) -> RandomForestClassifier:
    """A ``RandomForestClassifier`` with 500 trees fitted on the training part.

    Its ``random_state`` comes from the fold's seed (and, for ``replicate > 0``, the replicate's
    number); results do not depend on ``n_jobs``.
    """
    seed = data.random_state("model", "forest", *((replicate,) if replicate else ()))
    model = RandomForestClassifier(n_estimators=N_TREES, random_state=seed, n_jobs=settings.n_jobs)
    return model.fit(data.X_train, data.y_train)


FOREST = register_model(
    ModelKind("forest", train_forest, "random forest, 500 trees, scikit-learn defaults", ceiling=True)
)
