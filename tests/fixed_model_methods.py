"""Test plugin: a model kind that cannot be retrained (it only loads a fixed model) and a method explaining it."""

from __future__ import annotations

from sklearn.dummy import DummyClassifier

from synthbench.methods import register_method
from synthbench.models import ModelKind, register_model


def _load_fixed(data, settings, *, replicate: int = 0):
    return DummyClassifier(strategy="prior").fit(data.X_train, data.y_train)


FIXED = register_model(ModelKind("fixed_stub", _load_fixed, "test: a loaded model, never retrained", retrainable=False))


@register_method("explains_fixed", description="test: explains the fixed model", needs=("fixed_stub",), default=False)
def explains_fixed(data, models, rng):
    models.get("fixed_stub")
    return rng.random(data.n_features)
