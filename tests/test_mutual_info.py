"""The vectorised mutual information equals scikit-learn's ``mutual_info_classif`` bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_selection import mutual_info_classif

from synthbench import datasets
from synthbench.selection.mutual_info import mutual_info_classif_1d


@pytest.mark.parametrize("name, decoys", [("ring", 100), ("xor", 30), ("ring_xor_sum", 300)])
def test_equals_scikit_learn_on_tables_with_decoys(name, decoys):
    ds = datasets.make(name, n_samples=400, seed=3, n_decoys=decoys)
    ours = mutual_info_classif_1d(ds.X, ds.y, random_state=11)
    assert np.array_equal(ours, mutual_info_classif(ds.X, ds.y, random_state=11))
    assert ours.shape == (ds.X.shape[1],) and (ours >= 0).all() and (ours > 0).any()


@pytest.mark.parametrize("k", [1, 3, 5])
def test_equals_scikit_learn_on_ties_and_small_classes(k):
    """Values on a 0.1 grid (ties broken only by the 1e-10 noise), three classes, a class of two rows (searched by
    brute force in scikit-learn, whose distance between two rows that differ by the noise alone is not theirs) and
    one of a single row (left out of the estimate)."""
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(60, 5)), 1).astype(np.float32)
    y = rng.integers(0, 3, 60)
    y[5], y[:2] = 3, 4
    ours = mutual_info_classif_1d(X, y, n_neighbors=k, random_state=1)
    assert np.array_equal(ours, mutual_info_classif(X, y, n_neighbors=k, random_state=1))


def test_rejects_bad_shapes():
    with pytest.raises(ValueError, match="must be"):
        mutual_info_classif_1d(np.zeros((5, 2)), np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="n_neighbors"):
        mutual_info_classif_1d(np.zeros((5, 2)), np.zeros(5, dtype=int), n_neighbors=0)
