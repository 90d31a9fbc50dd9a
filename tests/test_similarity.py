"""Per-example similarity of two maps (model-randomisation sanity check) against scipy and scikit-image."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from skimage.feature import hog
from skimage.metrics import structural_similarity

from synthbench.scoring.randomisation import similarity as S


def rng(seed=0):
    return np.random.default_rng(seed)


def _scipy_rows(a, b):
    return np.array([spearmanr(x, y).statistic for x, y in zip(a, b)])


def test_spearman_rows_equals_scipy_row_by_row_with_ties_and_many_zeros():
    g = rng()
    a, b = g.integers(0, 4, (40, 25)).astype(float), g.integers(-2, 3, (40, 25)).astype(float)  # many ties
    np.testing.assert_allclose(S.spearman_rows(a, b), _scipy_rows(a, b), rtol=0, atol=1e-12)
    sparse = g.normal(size=(40, 50)) * (g.random((40, 50)) < 0.2)  # about 80 % exact zeros
    other = g.normal(size=(40, 50)) * (g.random((40, 50)) < 0.5) + 0.3 * sparse
    np.testing.assert_allclose(S.spearman_rows(sparse, other), _scipy_rows(sparse, other), rtol=0, atol=1e-12)
    assert S.spearman_rows(a, a) == pytest.approx(np.ones(40))
    assert S.spearman_rows(a, -a) == pytest.approx(-np.ones(40))


def test_spearman_rows_is_nan_only_for_a_row_pair_with_a_constant_row():
    g = rng(1)
    a, b = g.normal(size=(4, 10)), g.normal(size=(4, 10))
    a[1] = 0.0
    b[3] = 2.5
    rho = S.spearman_rows(a, b)
    assert np.isnan(rho).tolist() == [False, True, False, True]
    np.testing.assert_allclose(rho[[0, 2]], _scipy_rows(a[[0, 2]], b[[0, 2]]))


def test_top_k_intersection_of_identical_tie_free_rows_is_one_and_follows_the_signed_values():
    a = rng(2).normal(size=(30, 20))
    for k in (1, 5, 20):
        np.testing.assert_array_equal(S.top_k_intersection(a, a.copy(), k, rng()), np.ones(30))
    x = np.array([[-5.0, 1.0, 2.0, 0.5]])
    y = np.array([[3.0, 0.0, 4.0, -1.0]])
    np.testing.assert_array_equal(S.top_k_intersection(x, y, 1, rng()), [1.0])  # 2.0 and 4.0, not -5.0
    np.testing.assert_array_equal(S.top_k_intersection(x, y, 2, rng()), [0.5])  # {2, 1} and {2, 0}


def test_top_k_intersection_of_unrelated_or_constant_rows_is_k_over_m_in_expectation():
    n, m, k = 4000, 20, 5
    g = rng(3)
    fixed = np.tile(np.linspace(1.0, 0.0, m), (n, 1))  # the same order in every row: positions 0..k-1 on top
    for a, b in [
        (g.normal(size=(n, m)), g.normal(size=(n, m))),
        (np.zeros((n, m)), fixed),
        (fixed, np.full((n, m), 3.0)),
        (np.zeros((n, m)), np.zeros((n, m))),
    ]:
        shares = S.top_k_intersection(a, b, k, g)
        assert abs(shares.mean() - k / m) < 0.01  # the standard error of the mean is about 0.003
    again = S.top_k_intersection(np.zeros((3, m)), fixed[:3], k, rng(7))
    np.testing.assert_array_equal(again, S.top_k_intersection(np.zeros((3, m)), fixed[:3], k, rng(7)))


def test_ssim_rows_equals_skimage_with_the_pairs_joint_range_and_the_largest_odd_window():
    g = rng(4)
    a = g.random((3, 16, 16))
    b = 3.0 * g.random((3, 16, 16)) - 1.0 + a  # a wider range than a's: a's range alone is not the pair's
    joint = max(a[1].max(), b[1].max()) - min(a[1].min(), b[1].min())
    expected = structural_similarity(a[1], b[1], data_range=joint, win_size=7)
    assert S.ssim_rows(a, b)[1] == pytest.approx(expected, abs=1e-12)
    small_a, small_b = g.random((2, 6, 9)), g.random((2, 6, 9))
    joint = max(small_a[0].max(), small_b[0].max()) - min(small_a[0].min(), small_b[0].min())
    assert S.ssim_rows(small_a, small_b)[0] == pytest.approx(
        structural_similarity(small_a[0], small_b[0], data_range=joint, win_size=5), abs=1e-12
    )
    np.testing.assert_allclose(S.ssim_rows(a, a.copy()), 1.0)
    np.testing.assert_array_equal(S.ssim_rows(np.full((1, 8, 8), 2.0), np.full((1, 8, 8), 2.0)), [1.0])


def test_hog_spearman_rows_is_one_for_identical_maps_lower_for_unrelated_ones_and_uses_the_stated_cells():
    g = rng(5)
    a, b = g.random((8, 32, 32)), g.random((8, 32, 32))
    np.testing.assert_allclose(S.hog_spearman_rows(a, a.copy()), 1.0)
    assert S.hog_spearman_rows(a, b).max() < 0.3
    direct = [hog(m, orientations=9, pixels_per_cell=(4, 4), cells_per_block=(2, 2)) for m in (a[0], b[0])]
    assert S.hog_spearman_rows(a, b)[0] == pytest.approx(spearmanr(*direct).statistic, abs=1e-12)
    sa, sb = a[:1, :9, :6], b[:1, :9, :6]  # under 16 pixels a side: cells of 2 pixels
    small = [hog(m, orientations=9, pixels_per_cell=(2, 2), cells_per_block=(2, 2)) for m in (sa[0], sb[0])]
    assert S.hog_spearman_rows(sa, sb)[0] == pytest.approx(spearmanr(*small).statistic, abs=1e-12)


@pytest.mark.parametrize("shape", [(32, 32), (24, 24), (30, 17), (9, 6), (4, 4)])
def test_the_batched_ssim_and_hog_are_skimages_on_every_pair_bit_for_bit(shape):
    """Every pair of a batch at once gives what skimage gives each pair alone: cells of 4, 3 (odd: skimage reads
    every pixel of the cell), 3 x 2 and 2 pixels, with a constant map, a map of integers (orientations on the bin
    edges, equal magnitudes) and a pair whose range is the second map's."""
    g = rng(11)
    a, b = g.normal(size=(6, *shape)), g.normal(size=(6, *shape))
    a[0], b[0] = 0.0, 0.0
    a[1], b[1] = np.round(3 * a[1]), np.round(3 * b[1])
    b[2] = 5 * b[2] + a[2]
    cell = S.hog_cell(*shape)
    expected = np.stack([hog(m, orientations=9, pixels_per_cell=cell, cells_per_block=(2, 2)) for m in a])
    np.testing.assert_array_equal(S.hog_descriptors(a), expected)
    win = 7 if min(shape) >= 7 else min(shape) - (1 - min(shape) % 2)
    joint = [max(x.max(), y.max()) - min(x.min(), y.min()) for x, y in zip(a, b)]
    ssim = [structural_similarity(x, y, data_range=r, win_size=win) if r > 0 else 1.0 for x, y, r in zip(a, b, joint)]
    np.testing.assert_array_equal(S.ssim_rows(a, b), ssim)


def test_preprocess_normalises_each_example_on_its_own():
    g = rng(6)
    maps = g.normal(size=(3, 2, 4, 4))
    maps[2] = 0.0
    for normalise in S.NORMALISATIONS:
        scaled = maps.copy()
        scaled[0] *= 100.0
        base = S.preprocess(maps, absolute=False, normalise=normalise)
        np.testing.assert_array_equal(S.preprocess(scaled, absolute=False, normalise=normalise)[1:], base[1:])
        np.testing.assert_array_equal(base[2], 0.0)  # an all-zero example stays zero
    second = S.preprocess(maps, absolute=False, normalise="second_moment").reshape(3, -1)
    np.testing.assert_allclose(np.mean(second[:2] ** 2, axis=1), 1.0)
    top = S.preprocess(maps, absolute=True, normalise="max").reshape(3, -1)
    np.testing.assert_allclose(top[:2].max(axis=1), 1.0)
    assert (top >= 0).all()
    signed = S.preprocess(maps, absolute=False, normalise="max").reshape(3, -1)
    np.testing.assert_allclose(np.abs(signed[:2]).max(axis=1), 1.0)
    assert (signed < 0).any()
    np.testing.assert_array_equal(S.preprocess(maps, absolute=True, normalise="none"), np.abs(maps))
    with pytest.raises(ValueError, match="none, max, second_moment"):
        S.preprocess(maps, absolute=False, normalise="l2")


def test_similarity_dispatches_each_measure_on_flattened_or_channel_summed_maps():
    g = rng(7)
    shape = (3, 8, 8)
    a, b = g.normal(size=(5, *shape)), g.normal(size=(5, *shape))
    flat_a, flat_b = a.reshape(5, -1), b.reshape(5, -1)
    kw = dict(top_k=0.1, input_shape=shape)
    np.testing.assert_allclose(S.similarity("spearman", a, -a, rng=rng(), **kw), -1.0)
    np.testing.assert_allclose(S.similarity("spearman_abs", a, -a, rng=rng(), **kw), 1.0)
    np.testing.assert_array_equal(
        S.similarity("spearman_abs", a, b, rng=rng(), **kw), S.spearman_rows(np.abs(flat_a), np.abs(flat_b))
    )
    np.testing.assert_array_equal(
        S.similarity("top_k", a, b, rng=rng(1), **kw), S.top_k_intersection(flat_a, flat_b, 19, rng(1))
    )  # round(0.1 * 192)
    np.testing.assert_array_equal(
        S.similarity("top_k", a, b, rng=rng(1), top_k=1e-6, input_shape=shape),
        S.top_k_intersection(flat_a, flat_b, 1, rng(1)),
    )
    np.testing.assert_array_equal(S.similarity("ssim", a, b, rng=rng(), **kw), S.ssim_rows(a.sum(1), b.sum(1)))
    np.testing.assert_array_equal(S.similarity("hog", a, b, rng=rng(), **kw), S.hog_spearman_rows(a.sum(1), b.sum(1)))
    table = g.normal(size=(5, 12))
    assert S.similarity("spearman", table, table, rng=rng(), top_k=0.5, input_shape=(12,)) == pytest.approx(np.ones(5))


def test_bad_inputs_raise_value_errors_that_name_the_valid_choices():
    a = np.zeros((2, 12))
    with pytest.raises(ValueError, match="spearman_abs, spearman, top_k, ssim, hog"):
        S.similarity("pearson", a, a, rng=rng(), top_k=0.5, input_shape=(12,))
    for measure in ("ssim", "hog"):
        with pytest.raises(ValueError, match="valid for this shape: spearman_abs, spearman, top_k"):
            S.similarity(measure, a, a, rng=rng(), top_k=0.5, input_shape=(12,))
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="0 < top_k <= 1"):
            S.similarity("top_k", a, a, rng=rng(), top_k=bad, input_shape=(12,))
    with pytest.raises(ValueError, match=r"\(n, \*\(3, 4\)\)"):
        S.similarity("spearman", a, a, rng=rng(), top_k=0.5, input_shape=(3, 4))
    for k in (0, 13):
        with pytest.raises(ValueError, match="1 <= k <= m = 12"):
            S.top_k_intersection(a, a, k, rng())
    with pytest.raises(ValueError, match="must both be"):
        S.spearman_rows(a, np.zeros((2, 11)))
