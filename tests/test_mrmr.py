"""Tests of synthbench.selection.mrmr: exact agreement with pymrmr, validation, helpers."""

from __future__ import annotations

import importlib

import numpy as np
import pymrmr  # noqa: F401  (a declared dependency: if it is missing these tests must fail, not skip)
import pytest

# The package re-exports the function ``mrmr``, which shadows the submodule attribute.
M = importlib.import_module("synthbench.selection.mrmr")


def _ring(n: int, p: int, seed: int, scale: float = 20.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, p))
    r2 = X[:, 0] ** 2 + X[:, 1] ** 2
    y = ((r2 > 0.25) & (r2 < 0.64)).astype(np.int64)
    return M.discretise(X, scale=scale), y


def _assert_same(X: np.ndarray, y: np.ndarray, k: int, scheme: str) -> list[int]:
    ours = M.mrmr(X, y, k, scheme=scheme)
    ref = M.pymrmr_select(X, y, k, scheme=scheme)
    assert ours == ref
    assert len(ours) == k and len(set(ours)) == k
    return ours


# ---- exact agreement with the reference ------------------------------------------------
@pytest.mark.parametrize("scheme", ["MIQ", "MID"])
@pytest.mark.parametrize(
    ("n", "p", "k", "scale", "seed"),
    [
        (50, 5, 1, 20.0, 0),
        (50, 5, 5, 2.0, 1),
        (50, 30, 3, 20.0, 2),
        (50, 30, 10, 1.0, 3),
        (200, 30, 10, 20.0, 4),
        (200, 200, 3, 5.0, 5),
        (200, 200, 10, 20.0, 6),
        (1000, 30, 10, 20.0, 7),
        (1000, 200, 10, 20.0, 8),
    ],
)
def test_matches_pymrmr_on_discretised_data(n: int, p: int, k: int, scale: float, seed: int, scheme: str) -> None:
    X, y = _ring(n, p, seed, scale)
    assert X.min() < 0  # negative states, as discretise gives on [-1, 1]
    _assert_same(X, y, k, scheme)


@pytest.mark.parametrize("scheme", ["MIQ", "MID"])
@pytest.mark.parametrize("seed", range(6))
def test_matches_pymrmr_on_integer_data_and_multiclass_labels(seed: int, scheme: str) -> None:
    rng = np.random.default_rng(100 + seed)
    n, p = int(rng.integers(20, 300)), int(rng.integers(5, 60))
    low = rng.integers(-7, 3, size=p)
    X = rng.integers(low, low + rng.integers(1, 12, size=p), size=(n, p))
    y = rng.integers(-2, 3, size=n) if seed % 2 else rng.integers(0, 3, size=n)
    y[: n // 3] = X[: n // 3, 0] % 3  # some signal
    _assert_same(X, y, min(p, 10), scheme)


@pytest.mark.parametrize("scheme", ["MIQ", "MID"])
@pytest.mark.parametrize("seed", range(4))
def test_matches_pymrmr_with_ties(seed: int, scheme: str) -> None:
    """Duplicated, negated, shifted, rescaled and constant columns create exact and near ties."""
    rng = np.random.default_rng(200 + seed)
    n = 60 + 40 * seed
    base = rng.integers(0, 3, size=(n, 8))
    X = np.column_stack(
        [
            base,
            base[:, :3],  # duplicates
            -base[:, 1:4],  # permuted tables: same MI mathematically, not bitwise
            base[:, 2:5] + 7,  # shifted duplicates
            3 * base[:, 0],  # gaps between states
            np.full((n, 2), 5),  # constants (relevance exactly 0)
            rng.integers(0, 2, size=(n, 6)),
        ]
    )
    y = (base[:, 0] + base[:, 1]) % 2 if seed % 2 else base[:, 0]
    _assert_same(X, y, 12, scheme)


@pytest.mark.parametrize("scheme", ["MIQ", "MID"])
def test_matches_pymrmr_on_binary_duplicates(scheme: str) -> None:
    rng = np.random.default_rng(7)
    X = rng.integers(0, 2, size=(200, 5))
    X[:, 3] = X[:, 1]
    X[:, 4] = 1 - X[:, 1]
    y = X[:, 0] ^ X[:, 1]
    _assert_same(X, y, 5, scheme)


@pytest.mark.parametrize("scheme", ["MIQ", "MID"])
def test_matches_pymrmr_on_xor(scheme: str) -> None:
    rng = np.random.default_rng(11)
    n = 400
    X = rng.integers(0, 2, size=(n, 20))
    y = X[:, 3] ^ X[:, 7]
    chosen = _assert_same(X, y, 4, scheme)
    assert len(chosen) == 4


def test_constant_label_gives_all_ties() -> None:
    rng = np.random.default_rng(3)
    X = rng.integers(-3, 4, size=(80, 25))
    y = np.zeros(80, dtype=np.int64)
    for scheme in ("MIQ", "MID"):
        _assert_same(X, y, 6, scheme)


def test_candidate_pool_is_the_top_5000_by_relevance() -> None:
    """A good but weakly relevant feature ranked below 5000 can never be picked."""
    n = 40
    y = np.repeat([0, 1], n // 2)
    a = y.copy()
    a[:4] = 1 - a[:4]
    b = np.zeros(n, dtype=np.int64)
    b[::3] = 1  # weakly relevant, nearly independent of a
    X = np.column_stack([np.tile(a[:, None], (1, M.POOL_SIZE + 1)), b])
    chosen = _assert_same(X, y, 2, "MID")
    assert X.shape[1] - 1 not in chosen
    # With the copies fitting in the pool, b is the second pick.
    assert M.mrmr(X[:, -200:], y, 2, scheme="MID")[1] == 199


def test_first_pick_among_tied_features_follows_the_reference_quicksort() -> None:
    n = 40
    y = np.repeat([0, 1], n // 2)
    X = np.tile(y[:, None], (1, 50))
    first = M.mrmr(X, y, 1)[0]
    assert first == M.pymrmr_select(X, y, 1)[0]
    assert first != 0  # not a stable sort


def test_integer_valued_floats_and_bools_are_accepted() -> None:
    X, y = _ring(100, 12, 9)
    expected = M.mrmr(X, y, 4)
    assert M.mrmr(X.astype(np.float64), y.astype(np.float64), 4) == expected
    assert M.mrmr(X > 0, y.astype(bool), 3) == M.pymrmr_select(X > 0, y, 3)


# ---- validation -----------------------------------------------------------------------
def test_rejects_non_integer_values() -> None:
    X = np.random.default_rng(0).uniform(-1, 1, size=(10, 3))
    with pytest.raises(ValueError, match="discretise"):
        M.mrmr(X, np.zeros(10, dtype=int), 1)
    with pytest.raises(ValueError, match="integer"):
        M.mrmr(np.zeros((10, 3), dtype=int), np.linspace(0, 1, 10), 1)
    with pytest.raises(ValueError, match="NaN"):
        M.mrmr(np.full((4, 2), np.nan), np.zeros(4, dtype=int), 1)
    with pytest.raises(ValueError, match="discretise"):
        M.pymrmr_select(X, np.zeros(10, dtype=int), 1)


@pytest.mark.parametrize(
    ("X", "y", "k", "exc", "match"),
    [
        (np.zeros((10, 3), dtype=int), np.zeros(10, dtype=int), 4, ValueError, "exceeds the number of features"),
        (np.zeros((10, 3), dtype=int), np.zeros(10, dtype=int), 0, ValueError, "at least 1"),
        (np.zeros((10, 3), dtype=int), np.zeros(10, dtype=int), 1.5, TypeError, "integer"),
        (np.zeros((10, 3), dtype=int), np.zeros(10, dtype=int), True, TypeError, "integer"),
        (np.zeros(10, dtype=int), np.zeros(10, dtype=int), 1, ValueError, "2-D"),
        (np.zeros((10, 3), dtype=int), np.zeros(9, dtype=int), 1, ValueError, "shape"),
        (np.zeros((10, 3), dtype=int), np.zeros((10, 1), dtype=int), 1, ValueError, "shape"),
        (np.zeros((0, 3), dtype=int), np.zeros(0, dtype=int), 1, ValueError, "at least one"),
        (np.full((10, 3), 2**40), np.zeros(10, dtype=int), 1, ValueError, "32-bit"),
        (np.array([["a", "b"]]), np.zeros(1, dtype=int), 1, ValueError, "discretise"),
    ],
)
def test_validation(X: np.ndarray, y: np.ndarray, k: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        M.mrmr(X, y, k)  # type: ignore[arg-type]


def test_rejects_unknown_scheme_and_k_beyond_pool() -> None:
    X = np.zeros((5, 3), dtype=int)
    with pytest.raises(ValueError, match="scheme"):
        M.mrmr(X, np.zeros(5, dtype=int), 1, scheme="MIX")
    big = np.zeros((2, M.POOL_SIZE + 1), dtype=int)
    with pytest.raises(ValueError, match="candidate pool"):
        M.mrmr(big, np.zeros(2, dtype=int), M.POOL_SIZE + 1)


# ---- helpers --------------------------------------------------------------------------
def test_mrmr_scores_and_selection_scores() -> None:
    X, y = _ring(150, 20, 12)
    chosen = M.mrmr(X, y, 5, scheme="MID")
    scores = M.mrmr_scores(X, y, 5, scheme="MID")
    assert scores.shape == (20,) and scores.dtype == np.float64
    assert [scores[j] for j in chosen] == [5.0, 4.0, 3.0, 2.0, 1.0]
    assert np.count_nonzero(scores) == 5
    np.testing.assert_array_equal(M.selection_scores(chosen, 20), scores)
    np.testing.assert_array_equal(M.selection_scores([], 3), np.zeros(3))
    with pytest.raises(ValueError):
        M.selection_scores([1, 1], 3)
    with pytest.raises(ValueError):
        M.selection_scores([3], 3)


def test_discretise() -> None:
    X = np.array([[-1.0, -0.024, 0.026], [1.0, 0.25, 0.75]], dtype=np.float32)
    Z = M.discretise(X)
    assert Z.dtype == np.int64
    np.testing.assert_array_equal(Z, [[-20, 0, 1], [20, 5, 15]])
    # halves round to even: 0.25 * 2 = 0.5 -> 0, 0.75 * 2 = 1.5 -> 2
    np.testing.assert_array_equal(M.discretise(X, scale=2.0), [[-2, 0, 0], [2, 0, 2]])
    with pytest.raises(ValueError):
        M.discretise(X, scale=0.0)
    with pytest.raises(ValueError):
        M.discretise(np.array([[np.inf]]))
    with pytest.raises(ValueError):
        M.discretise(np.zeros(3))


def test_pymrmr_wrapper_is_silent(capfd: pytest.CaptureFixture[str]) -> None:
    X, y = _ring(60, 8, 13)
    print("before", flush=True)
    M.pymrmr_select(X, y, 3)
    print("after", flush=True)
    out, err = capfd.readouterr()
    assert out == "before\nafter\n"
    assert err == ""


def test_pymrmr_wrapper_restores_stdout_on_error(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pymrmr, "mRMR", boom)
    with pytest.raises(RuntimeError, match="boom"):
        M.pymrmr_select(np.zeros((4, 2), dtype=int), np.zeros(4, dtype=int), 1)
    print("visible", flush=True)
    assert capfd.readouterr().out == "visible\n"
