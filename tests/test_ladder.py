"""The ladder of known order: a base method's maps blended with one seeded random map at growing shares."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from synthbench.methods import get_method, run_method
from synthbench.methods.ladder import LADDER_BASES, LADDER_SHARES, RUNG_PARAM, rung_name


@pytest.fixture(scope="module")
def fold():
    from synthbench.models import SharedModels
    from synthbench.protocol import setting_folds

    folds = setting_folds("ring_xor", n_samples=600, seed=0, n_folds=2, n_decoys=20)
    return [(f, SharedModels(f)) for f in folds]


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_each_rung_blends_the_base_maps_with_one_random_map_at_its_share(fold):
    data, models = fold[0]
    base = run_method(get_method("gbm_treeshap"), data, models).local
    rungs = {s: run_method(get_method(rung_name("gbm_treeshap", s)), data, models).local for s in LADDER_SHARES}
    np.testing.assert_allclose(rungs[0.0], _unit(base), atol=1e-12)  # rung 0: the base, each row at unit norm
    noise = [(rungs[s] - (1 - s) * rungs[0.0]) / s for s in LADDER_SHARES[1:]]
    for other in noise[1:]:
        np.testing.assert_allclose(other, noise[0], atol=1e-9)  # one random map for every rung of the fold
    np.testing.assert_allclose(np.linalg.norm(noise[0], axis=1), 1.0)
    assert abs(np.corrcoef(noise[0].ravel(), _unit(base).ravel())[0, 1]) < 0.1  # unrelated to the base
    again = run_method(get_method(rung_name("gbm_treeshap", 0.5)), data, models)
    np.testing.assert_array_equal(again.local, rungs[0.5])
    np.testing.assert_array_equal(again.scores, np.abs(rungs[0.5]).mean(axis=0))


def test_the_rungs_are_registered_on_each_model_with_their_share_recorded():
    for kind, base in LADDER_BASES.items():
        for share in LADDER_SHARES:
            spec = get_method(rung_name(base, share))
            assert spec.explains("tabular") == kind and spec.params[RUNG_PARAM] == share and spec.maps
            assert not spec.default
    assert rung_name("integrated_gradients", 0.25) == "integrated_gradients_noise25"


def test_the_truth_orders_the_rungs_as_built_on_a_booster_that_learned(fold):
    """The order is known: less noise is closer to the truth. On ring_xor with 20 decoys (2 folds), the mean
    per-row average precision of the relevant columns falls rung by rung, down to the all-noise control's."""
    means = []
    for share in LADDER_SHARES:
        values = []
        for data, models in fold:
            local = np.abs(run_method(get_method(rung_name("gbm_treeshap", share)), data, models).local)
            values += [average_precision_score(data.relevant, row) for row in local]
        means.append(np.mean(values))
    chance = np.mean([data.relevant.mean() for data, _ in fold])
    assert all(a > b for a, b in zip(means, means[1:])) and means[-1] > chance, means
