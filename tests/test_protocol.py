"""The evaluation protocol: unshuffled folds, per-fold column permutations, truth carried along."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from synthbench import datasets
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, cell_fold, dataset_folds, explained_part, make_folds, seed_stream
from synthbench.runner.cells import run_task
from synthbench.runner.grid import FoldTask, GridSpec
from synthbench.scoring import GROUND_TRUTH


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
    with pytest.raises(TypeError, match="ints or strings"):  # int(0.1) == int(0.2): they would share a stream
        seed_stream(1, "eps", 0.1)


def _same_fold_data(a: FoldData, b: FoldData) -> None:
    for name in ("X_train", "y_train", "X_test", "y_test", "X_explain", "y_explain", "relevant", "relevant_local"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.seed, a.fold, a.n_classes) == (b.seed, b.fold, b.n_classes)


def test_a_cells_fold_is_built_from_its_configuration_in_one_place():
    data, fold = cell_fold(
        "switch",
        n_samples=60,
        seed=2,
        n_folds=3,
        fold=1,
        n_decoys=5,
        dataset_params=(("decoy_correlation", 0.5),),
        explain="train",
    )
    ds = datasets.make("switch", n_samples=60, n_decoys=5, seed=2, decoy_correlation=0.5)
    want = dataset_folds(ds, n_folds=3, seed=2)[1]
    assert fold.index == 1
    for name in ("train", "test", "permutation"):
        np.testing.assert_array_equal(getattr(fold, name), getattr(want, name))
    _same_fold_data(data, FoldData.from_dataset(ds, want, explain="train"))
    # Without decoys the generator's own default; parameters as a mapping too.
    plain, _ = cell_fold("switch", n_samples=60, seed=2, n_folds=3, fold=0, dataset_params={"decoy_correlation": 0.5})
    default = datasets.make("switch", n_samples=60, seed=2, decoy_correlation=0.5)
    _same_fold_data(plain, FoldData.from_dataset(default, dataset_folds(default, n_folds=3, seed=2)[0]))


def test_the_methods_may_explain_the_first_rows_of_a_part_only():
    assert explained_part("test") == ("test", None) and explained_part("train:7") == ("train", 7)
    for bad in ("test:0", "test:-3", "test:x", "all", "train:"):
        with pytest.raises(ValueError, match="explain must be 'test' or 'train'"):
            explained_part(bad)
    ds = datasets.make("switch", n_samples=60, n_decoys=5, seed=2)
    fold = dataset_folds(ds, n_folds=3, seed=2)[1]
    whole, first = (FoldData.from_dataset(ds, fold, explain=e) for e in ("test", "test:7"))
    for name in ("X_explain", "y_explain", "relevant_local"):
        np.testing.assert_array_equal(getattr(first, name), getattr(whole, name)[:7])  # the truth of the same rows
    for name in ("X_train", "y_train", "X_test", "y_test", "relevant"):  # the models learn and are tested as before
        np.testing.assert_array_equal(getattr(first, name), getattr(whole, name))
    assert len(FoldData.from_dataset(ds, fold, explain="train:500").X_explain) == len(fold.train)  # at most all
    grid = GridSpec(("switch",), ("random",), (5,), n_samples=60, n_folds=3)
    ids = {e: GridSpec(**{**grid.__dict__, "explain": e}).cells()[0].cell_id for e in ("test", "test:7")}
    assert ids["test"] == grid.cells()[0].cell_id != ids["test:7"]  # a limit is another cell; none, the same


@pytest.mark.parametrize(
    "dataset,methods,params", [("switch", ("anova", "random"), {"decoy_correlation": 0.5}), ("shapes", ("random",), {})]
)
def test_the_runner_runs_a_cell_on_the_fold_cell_fold_builds(dataset, methods, params):
    grid = GridSpec(
        datasets=(dataset,),
        methods=methods,
        decoys=(5,),
        n_samples=60,
        n_folds=3,
        seed=2,
        explain="train",
        dataset_params={dataset: params},
    )
    cells = tuple(c for c in grid.cells() if c.fold == 1)
    head = cells[0]
    data, fold = cell_fold(head.dataset, fold=head.fold, **head.setting())
    results = list(run_task(FoldTask(cells)))
    assert [r.status for r in results] == ["ok"] * len(cells)
    for result in results:
        spec = get_method(result.cell.method)
        assert result.permutation == (None if fold.permutation is None else fold.permutation.tolist())
        assert result.scores == GROUND_TRUTH.score(run_method(spec, data, SharedModels(data)), data, spec)
