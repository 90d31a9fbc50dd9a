"""The evaluation protocol: unshuffled folds, per-fold column permutations, truth carried along."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from synthbench import datasets
from synthbench.protocol import FoldData, make_folds, seed_stream


def test_folds_are_unshuffled_kfold_with_fresh_permutations():
    folds = make_folds(100, 30, n_folds=6, seed=4)
    for f, (train, test) in zip(folds, KFold(6).split(np.zeros((100, 1))), strict=True):
        np.testing.assert_array_equal(f.train, train)
        np.testing.assert_array_equal(f.test, test)
        assert sorted(f.permutation) == list(range(30))
    perms = {tuple(f.permutation) for f in folds}
    assert len(perms) == 6
    again = make_folds(100, 30, n_folds=6, seed=4)
    assert all(np.array_equal(a.permutation, b.permutation) for a, b in zip(folds, again))
    assert not np.array_equal(folds[0].permutation, make_folds(100, 30, n_folds=6, seed=5)[0].permutation)


def test_fold_data_permutes_columns_and_truth_together():
    ds = datasets.make("switch", n_samples=60, n_decoys=5, seed=2)
    fold = make_folds(60, ds.n_features, n_folds=3, seed=2)[1]
    data = FoldData.from_dataset(ds, fold)
    np.testing.assert_array_equal(data.X_train, ds.X[fold.train][:, fold.permutation])
    np.testing.assert_array_equal(data.X_explain, ds.X[fold.test][:, fold.permutation])
    np.testing.assert_array_equal(data.relevant, ds.relevant[fold.permutation])
    np.testing.assert_array_equal(data.relevant_local, ds.relevant_local[fold.test][:, fold.permutation])
    # The relevant features no longer sit in the first columns.
    assert not data.relevant[: ds.k].all()
    train_side = FoldData.from_dataset(ds, fold, explain="train")
    np.testing.assert_array_equal(train_side.X_explain, data.X_train)
    with pytest.raises(ValueError, match="explain"):
        FoldData.from_dataset(ds, fold, explain="all")


def test_bad_fold_counts():
    with pytest.raises(ValueError, match="at least the number of folds"):
        make_folds(4, 3, n_folds=6, seed=0)
    with pytest.raises(ValueError, match=">= 2"):
        make_folds(10, 3, n_folds=1, seed=0)


def test_seed_streams_are_stable_and_distinct():
    a = np.random.default_rng(seed_stream(1, "method", "rf")).random()
    assert a == np.random.default_rng(seed_stream(1, "method", "rf")).random()
    assert a != np.random.default_rng(seed_stream(1, "method", "mi")).random()
    assert a != np.random.default_rng(seed_stream(2, "method", "rf")).random()
