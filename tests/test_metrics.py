"""The scorer's metrics: hand-checked values, reference cross-checks, declared chance and bounds."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from synthbench.scoring.truth import metrics as M

GLOBAL = M.names("global")


def rng(seed=0):
    return np.random.default_rng(seed)


def test_best_k_and_best_2k_by_hand():
    relevant = np.array([True, True, False, False, False, False])
    scores = np.array([0.9, 0.1, 0.8, 0.05, 0.0, 0.2])  # order: 0, 2, 5, 1, 3, 4
    assert M.best_k(scores, relevant, rng()) == 0.5
    assert M.best_2k(scores, relevant, rng()) == 1.0
    assert M.mean_rank(scores, relevant, rng()) == 2.5


def test_sign_is_ignored_and_matrices_are_averaged():
    relevant = np.array([True, False, False])
    assert M.best_k(np.array([-5.0, 1.0, 2.0]), relevant, rng()) == 1.0
    att = np.array([[-3.0, 1.0, 0.0], [3.0, -1.0, 2.5]])  # mean |a| = 3, 1, 1.25
    assert M.best_k(att, relevant, rng()) == 1.0


def test_ties_are_broken_at_random_not_by_column_order():
    relevant = np.zeros(10, dtype=bool)
    relevant[:2] = True  # relevant features first, as the generators place them
    flat = np.zeros(10)
    values = [M.best_k(flat, relevant, rng(s)) for s in range(400)]
    assert np.mean(values) == pytest.approx(0.2, abs=0.05)  # chance, not 1.0
    # The same seed gives the same tie-break.
    assert M.best_k(flat, relevant, rng(7)) == M.best_k(flat, relevant, rng(7))


@pytest.mark.parametrize("seed", range(5))
def test_auroc_and_ap_match_scikit_learn_without_ties(seed):
    g = rng(seed)
    relevant = g.random(50) < 0.2
    relevant[0] = True
    relevant[1] = False
    scores = g.normal(size=50) + relevant
    assert M.auroc(scores, relevant, g) == pytest.approx(roc_auc_score(relevant, np.abs(scores)))
    assert M.average_precision(scores, relevant, g) == pytest.approx(average_precision_score(relevant, np.abs(scores)))


@pytest.mark.parametrize("k,p", [(1, 1), (1, 5), (2, 10), (6, 106), (4, 4)])
def test_declared_chance_is_the_mean_under_random_rankings(k, p):
    relevant = np.zeros(p, dtype=bool)
    relevant[:k] = True
    g = rng(k * 1000 + p)
    for name in GLOBAL:
        metric = M.get(name)
        values = np.array([metric(g.random(p), relevant, g) for _ in range(4000)])
        if np.isnan(values).all():
            assert name == "auroc" and k == p
            continue
        sem = values.std() / np.sqrt(values.size)
        assert values.mean() == pytest.approx(metric.chance(relevant), abs=5 * sem + 1e-9), name


@pytest.mark.parametrize("name", GLOBAL)
def test_perfect_and_worst_rankings_reach_the_declared_bounds(name):
    metric = M.get(name)
    relevant = np.zeros(12, dtype=bool)
    relevant[[3, 7, 8]] = True
    lo, hi = metric.bounds(relevant)
    perfect = metric(relevant.astype(float), relevant, rng())
    worst = metric((~relevant).astype(float), relevant, rng())
    best_bound, worst_bound = (hi, lo) if metric.direction == "higher" else (lo, hi)
    assert perfect == pytest.approx(best_bound)
    if name != "best_2k":  # 2k = 6 of 9 irrelevant: the worst ranking still scores 0 there
        assert worst == pytest.approx(worst_bound)
    assert metric.better(perfect, worst) or perfect == worst


def test_local_metrics_by_hand():
    truth = np.array([[True, False, True, False], [False, True, True, False]])  # k = 3 globally
    att = np.array([[5.0, 0.0, 4.0, 3.0], [0.0, 1.0, 0.0, 2.0]])
    # row 0: top3 = {0, 2, 3}: 2 of its 2 found, 1 of 3 false; row 1: top3 = {3, 1, 0 or 2}
    tprs = [M.local_tpr_at_k(att, truth, rng(s)) for s in range(200)]
    assert set(np.round(tprs, 6)) == {0.75, 1.0}  # row 1 finds feature 2 only when the tie goes its way
    assert M.local_fdr_at_k(att, truth, rng(0)) in (
        pytest.approx((1 / 3 + 2 / 3) / 2),
        pytest.approx((1 / 3 + 1 / 3) / 2),
    )


def test_metrics_declare_their_metadata():
    for m in M.METRICS.values():
        assert m.direction in ("higher", "lower") and m.scope in ("global", "local") and m.description
    with pytest.raises(KeyError, match="valid names"):
        M.get("nope")


def test_one_metric_type_with_optional_truth_based_parts():
    from synthbench.scoring import GroundTruthScorer, get_metric

    assert all(m.truth_based for m in M.METRICS.values())
    road = get_metric("road_gap")  # computed by its scorer: metadata only, its chance a control
    assert isinstance(road, M.Metric) and not road.truth_based and road.control == "random"
    assert (road.fn, road.scope, road.bounds, road.chance) == (None, None, None, None)
    with pytest.raises(TypeError, match="computed by its scorer"):
        road(np.ones(3), np.ones(3, bool), rng())
    with pytest.raises(ValueError, match="together"):
        M.Metric("half", "higher", "a metric with a function and nothing else", fn=M.best_k)
    with pytest.raises(ValueError, match="reads_2k_ranking"):
        M.Metric("2k", "higher", "a computed metric reading the 2k ranking", reads_2k_ranking=True)
    with pytest.raises(ValueError, match="road_gap"):
        GroundTruthScorer(metrics={"road_gap": road})


def test_bad_scores_are_rejected():
    relevant = np.array([True, False])
    with pytest.raises(ValueError, match="NaN"):
        M.best_k(np.array([np.nan, 1.0]), relevant, rng())
    with pytest.raises(ValueError, match="shape"):
        M.best_k(np.ones(3), relevant, rng())
    with pytest.raises(ValueError, match="no relevant"):
        M.best_k(np.ones(2), np.zeros(2, bool), rng())


def test_declared_local_chance_is_the_mean_under_random_rankings():
    g = rng(3)
    truth = np.zeros((40, 9), dtype=bool)
    truth[:, 8] = True
    truth[:20, :4] = True
    truth[20:, 4:8] = True  # a switch-like truth: 5 relevant per row, 9 globally
    for name in M.names("local"):
        metric = M.get(name)
        values = np.array([metric(g.random(truth.shape), truth, g) for _ in range(2000)])
        sem = values.std() / np.sqrt(values.size)
        assert values.mean() == pytest.approx(metric.chance(truth), abs=5 * sem + 1e-9), name
