"""The one tie-broken ranking the scorers share: order by |score| or signed score, ties by the generator."""

import numpy as np

from synthbench.scoring.ranking import rank, top_k_mask
from synthbench.scoring.truth import localisation as L
from synthbench.scoring.truth import metrics as M


def rng(seed=0):
    return np.random.default_rng(seed)


def test_most_important_first_by_magnitude_or_by_signed_score():
    scores = np.array([-3.0, 1.0, 2.0, -0.5])
    assert rank(scores, rng()).tolist() == [0, 2, 1, 3]  # |score|: the sign is ignored
    assert rank(scores, rng(), signed=True).tolist() == [2, 1, 3, 0]  # the most negative last
    rows = np.array([[0.1, -0.9, 0.5], [2.0, 0.0, -1.0]])
    assert rank(rows, rng()).tolist() == [[1, 2, 0], [0, 2, 1]]  # each row on its own
    assert rank(rows, rng(), axis=0).tolist() == [[1, 0, 1], [0, 1, 0]]  # each column on its own


def test_ties_are_ordered_by_the_generators_uniform_keys_and_the_seed_fixes_them():
    flat = np.zeros((3, 8))
    g = rng(5)
    order = rank(flat, g)
    keys = rng(5).random(flat.shape)  # one uniform key per entry, drawn once: ties by ascending key
    np.testing.assert_array_equal(order, np.argsort(keys, axis=1))
    after = rng(5)
    after.random(flat.shape)
    assert g.random() == after.random()  # the stream advanced by exactly that draw
    np.testing.assert_array_equal(rank(flat, rng(5)), order)  # same seed, same order
    draws = {tuple(rank(np.ones(6), rng(s))) for s in range(30)}
    assert len(draws) > 20  # not the column order, nor any fixed order
    # Ties among equal magnitudes of opposite sign too, unless signed.
    assert {tuple(rank(np.array([-1.0, 1.0]), rng(s))) for s in range(20)} == {(0, 1), (1, 0)}
    assert {tuple(rank(np.array([-1.0, 1.0]), rng(s), signed=True)) for s in range(20)} == {(1, 0)}


def test_the_ground_truth_and_localisation_metrics_break_ties_with_the_same_ranking():
    relevant = np.zeros(10, dtype=bool)
    relevant[:3] = True
    masks = np.zeros((4, 5, 5), dtype=bool)
    masks[:, :2, :] = True
    for s in range(10):
        top = rank(np.zeros(10), rng(s))[:3]
        assert M.best_k(np.zeros(10), relevant, rng(s)) == relevant[top].mean()
        first = rank(np.ones((4, 25)), rng(s))[:, 0]
        assert L.pointing_game(np.ones((4, 5, 5)), masks, rng(s)) == masks.reshape(4, -1)[np.arange(4), first].mean()


def test_top_k_mask_is_the_top_k_of_rank_with_the_same_draws():
    """The partition gives the set the sort gives, ties included: rows of few distinct values (most entries tied at
    the k-th key), a constant row, -0.0 beside 0.0, signed and by magnitude, 1-d and 3-d, k from 0 to m."""
    g = rng(8)
    many = np.round(g.normal(size=(40, 30)))
    many[0], many[1, :15] = 0.0, -0.0
    for scores in (many, g.normal(size=(5, 30)), many[0], many.reshape(4, 10, 30)):
        for signed in (False, True):
            for k in (0, 1, 3, 15, 29, 30):
                order = rank(scores, rng(k), signed=signed)
                want = np.zeros(scores.shape, dtype=bool)
                np.put_along_axis(want, order[..., :k], True, axis=-1)
                draws = rng(k)
                np.testing.assert_array_equal(top_k_mask(scores, k, draws, signed=signed), want)
                assert draws.random() == (lambda g: (g.random(scores.shape), g.random())[1])(rng(k))
