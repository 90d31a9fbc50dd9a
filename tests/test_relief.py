"""Tests of synthbench.selection.relief: agreement with skrebate's ReliefF, ties, blocks, validation."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import skrebate  # noqa: F401  (a declared dependency: if it is missing these tests must fail, not skip)

R = importlib.import_module("synthbench.selection.relief")

RTOL, ATOL = 1e-9, 1e-12


def _same(X, y, k: int, threshold: int = 10) -> np.ndarray:
    ours = R.relieff(X, y, n_neighbors=k, discrete_threshold=threshold)
    ref = R.skrebate_relieff(X, y, n_neighbors=k, discrete_threshold=threshold)
    assert ours.shape == (np.shape(X)[1],) and ours.dtype == np.float64
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=ATOL)
    return ours


def _xor(n: int, p: int, seed: int, normal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) if normal else rng.uniform(-1.0, 1.0, (n, p))
    y = (X[:, 0] * X[:, min(1, p - 1)] > 0.1).astype(np.int64)
    return X.astype(np.float32), y


def _grid(n: int, p: int, seed: int, classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Values on the grid 0, 0.1, ..., 1 (11 values: continuous): distances tie mathematically
    and differ only by the rounding of their sums, in many rows at the k-th neighbour."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 11, size=(n, p)) / 10.0
    y = (X[:, 0] + X[:, 1] > 1.0).astype(np.int64)
    if classes > 2:
        y = np.where(rng.uniform(size=n) < 0.3, rng.integers(0, classes, size=n), (y + 2 * (X[:, 2] > 0.5)) % classes)
    return X, y


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few columns: the distances become sums of block sums (not bit-identical)."""
    monkeypatch.setattr(R, "_BLOCK_CELLS", 5 * 200)


# ---- exact agreement with skrebate --------------------------------------------------------
@pytest.mark.parametrize(
    ("n", "p", "k", "seed", "normal"),
    [
        (40, 3, 5, 0, False),
        (120, 20, 10, 1, False),
        (200, 60, 100, 2, False),
        (150, 30, 25, 3, True),
        (90, 1, 10, 4, False),
    ],
)
def test_matches_skrebate_on_continuous_data(n, p, k, seed, normal):
    X, y = _xor(n, p, seed, normal)
    scores = _same(X, y, k)
    assert np.all(np.abs(scores) <= 1.0)


@pytest.mark.parametrize("seed", range(3))
def test_matches_skrebate_on_mixed_discrete_and_continuous_columns(seed):
    X, y = _xor(150, 30, 10 + seed)
    X[:, 2] = X[:, 2] > 0  # binary
    X[:, 3:6] = np.round(X[:, 3:6] * 4)  # 9 values: discrete
    X[:, 6] = 0.5  # constant: discrete
    X[:, 7] = np.round(X[:, 7] * 5)  # 11 values: continuous, coarse
    _same(X, y, 12)
    _same(X, y, 12, threshold=2)  # only the binary and constant columns are discrete
    _same(X, y, 12, threshold=11)


def test_matches_skrebate_on_discrete_data_only():
    rng = np.random.default_rng(20)
    X = rng.integers(-2, 3, size=(160, 25)).astype(np.float64)
    y = (X[:, 0] != X[:, 1]).astype(np.int64)
    _same(X, y, 10)
    _same(X, y, 60)


@pytest.mark.parametrize("seed", range(3))
def test_matches_skrebate_with_ties(seed):
    X, y = _grid(140, 24, seed)
    _same(X, y, 20)
    D, yd = _xor(120, 15, 30 + seed)
    D = np.round(D * 3) / 3  # 7 values: discrete
    D[40:80] = D[:40]  # duplicated rows: distance exactly 0, many ties at the k-th
    yd[40:80] = yd[:40]
    _same(D, yd, 15)
    _same(np.vstack([D, D[:20]]), np.concatenate([yd, yd[:20]]), 3)


def test_matches_skrebate_when_n_neighbors_exceeds_a_class():
    X, y = _xor(100, 12, 40)
    y[:] = 0
    y[:7] = 1  # a class of 7 (< k): the instance itself counts as its own hit
    _same(X, y, 20)
    _same(X, y, 150)  # larger than n


@pytest.mark.parametrize("seed", range(3))
def test_matches_skrebate_on_multiclass_labels(seed):
    X, y = _grid(150, 20, 50 + seed, classes=3 + seed)
    _same(X, y, 12)
    Xc, _ = _xor(150, 20, 60 + seed)
    labels = np.array([-3, 7, 2, 11])[y % 4]  # unsorted, negative labels
    _same(Xc, labels, 30)
    _same(Xc[:60], labels[:60], 40)  # some classes smaller than k


@pytest.mark.parametrize("seed", range(2))
def test_matches_skrebate_with_blocked_distances(small_blocks, seed):
    X, y = _grid(150, 24, 70 + seed)
    _same(X, y, 20)  # near-ties everywhere: rows are recomputed exactly
    Xc, yc = _xor(150, 30, 80 + seed)
    _same(Xc, yc, 15)  # well separated: the neighbours follow from the blocked values
    Xm = Xc.copy()
    Xm[:, 5:9] = np.round(Xm[:, 5:9] * 2)
    _same(Xm, yc, 15)  # mixed
    Xg, yg = _grid(150, 20, 90 + seed, classes=3)
    _same(Xg, yg, 10)


# ---- the tests above can fail -------------------------------------------------------------
def test_tie_order_matters_on_the_tie_data(monkeypatch):
    """A stable argsort (another order of equal distances) gives other scores than skrebate."""
    X, y = _grid(140, 24, 0)
    ref = R.skrebate_relieff(X, y, n_neighbors=20)
    monkeypatch.setattr(R, "_row_order", lambda row: np.argsort(row, kind="stable"))
    assert not np.allclose(R.relieff(X, y, n_neighbors=20), ref, rtol=RTOL, atol=ATOL)


def test_summation_order_matters_on_the_tie_data(monkeypatch):
    """Summing the distance over the columns in reverse order changes the neighbours."""
    X, y = _grid(140, 24, 0)
    ref = R.skrebate_relieff(X, y, n_neighbors=20)
    pdist = R.pdist
    monkeypatch.setattr(R, "pdist", lambda Z, metric: pdist(np.ascontiguousarray(Z[:, ::-1]), metric))
    assert not np.allclose(R.relieff(X, y, n_neighbors=20), ref, rtol=RTOL, atol=ATOL)


def test_blocked_distances_need_the_exact_rows(small_blocks, monkeypatch):
    """Taking the blocked sums as exact (no recomputation of near-tied rows) goes wrong."""
    X, y = _grid(150, 24, 70)
    ref = R.skrebate_relieff(X, y, n_neighbors=20)
    distances = R._distances
    monkeypatch.setattr(R, "_distances", lambda *args: (distances(*args)[0], 0.0))
    assert not np.allclose(R.relieff(X, y, n_neighbors=20), ref, rtol=RTOL, atol=ATOL)


# ---- behaviour and validation -------------------------------------------------------------
def test_a_relevant_feature_scores_highest():
    X, y = _xor(200, 10, 100)
    scores = R.relieff(X, y, n_neighbors=20)
    assert set(np.argsort(scores)[-2:]) == {0, 1}


def test_float32_input_equals_float64_input():
    X, y = _xor(80, 7, 110)
    np.testing.assert_array_equal(R.relieff(X, y, n_neighbors=9), R.relieff(X.astype(np.float64), y, n_neighbors=9))


@pytest.mark.parametrize(
    ("X", "y", "kwargs", "match"),
    [
        (np.ones(5), np.arange(5) % 2, {}, "2-D"),
        (np.full((4, 2), np.nan), np.arange(4) % 2, {}, "NaN"),
        (np.zeros((4, 0)), np.arange(4) % 2, {}, "no features"),
        (np.ones((4, 2)), np.arange(3) % 2, {}, "shape"),
        (np.ones((4, 2)), np.zeros(4), {}, "single class"),
        (np.ones((12, 2)), np.arange(12), {}, "continuous labels"),
        (np.ones((4, 2)), np.arange(4) % 2, {"n_neighbors": 0}, "n_neighbors"),
        (np.ones((4, 2)), np.arange(4) % 2, {"n_neighbors": 0.5}, "n_neighbors"),
        (np.ones((4, 2)), np.arange(4) % 2, {"discrete_threshold": 0}, "discrete_threshold"),
    ],
)
def test_bad_input_is_rejected(X, y, kwargs, match):
    with pytest.raises(ValueError, match=match):
        R.relieff(X, y, **kwargs)


# ---- the registered methods ---------------------------------------------------------------
def test_registered_relief_equals_relief_skrebate():
    from conftest import fold_of

    from synthbench import datasets
    from synthbench.methods import get_method, run_method
    from synthbench.models import SharedModels

    data = fold_of(datasets.make("xor", n_samples=240, n_decoys=6, seed=1))
    models = SharedModels(data)
    ours = run_method(get_method("relief"), data, models).scores
    ref = run_method(get_method("relief_skrebate"), data, models).scores
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=ATOL)
    assert not get_method("relief").default and not get_method("relief_skrebate").default


def _relief_by_the_definition(X, y):
    """Kira & Rendell's Relief with one hit and one miss per row, written as loops over rows."""
    n, p = X.shape
    span = X.max(axis=0) - X.min(axis=0)
    total = np.zeros(p)
    for i in range(n):
        best = {"hit": (np.inf, None), "miss": (np.inf, None)}
        for j in range(n):
            if j == i:
                continue
            d = float(np.sqrt(((X[i] - X[j]) ** 2).sum()))
            kind = "hit" if y[j] == y[i] else "miss"
            if d < best[kind][0]:
                best[kind] = (d, j)
        total += np.abs(X[i] - X[best["miss"][1]]) - np.abs(X[i] - X[best["hit"][1]])
    return total / n / span


@pytest.mark.parametrize("block", [1024, 7])
def test_relief_1nn_is_relief_by_its_definition(block):
    from synthbench.selection.relief_basic import relief_1nn

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(90, 6))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).astype(int)
    np.testing.assert_allclose(relief_1nn(X, y, block=block), _relief_by_the_definition(X, y), rtol=0, atol=1e-12)
    scores = relief_1nn(X, y)
    assert set(np.argsort(scores)[-2:]) == {0, 1}  # the xor pair, found by the local rule
    X[:, 5] = 0.25
    assert relief_1nn(X, y)[5] == 0.0  # a constant column scores 0, not NaN
    with pytest.raises(ValueError, match="two classes"):
        relief_1nn(X, np.zeros(90, dtype=int))
