"""Certification of the synthetic dataset generators (fixed seeds, fast)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import sparse, special, stats
from scipy.sparse import csgraph

from synthbench import datasets
from synthbench.datasets import Dataset, describe, make, names
from synthbench.datasets.tables import dag as dagmod
from synthbench.datasets.tables import l2x, nonlinear

ALL = [n for n in names() if datasets.spec(n).kind == "tabular"]  # images: tests/test_images.py
UNIFORM = ["ring", "xor", "ring_xor", "ring_xor_sum"]
GAUSSIAN = ["l2x_xor", "orange_skin", "nonlinear_additive", "switch"]
DAG_N = 300  # small n keeps the 2000-feature dag sets fast


def _n(name: str, n: int) -> int:
    return min(n, DAG_N) if name.startswith("dag") else n


# --------------------------------------------------------------------------- helpers
def _ranks_to_bins(x: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-frequency bins from ranks: shape (n,) -> int bins in 0..n_bins-1."""
    r = np.argsort(np.argsort(x, kind="stable"), kind="stable")
    return (r * n_bins) // len(x)


def _mi_from_counts(counts: np.ndarray) -> np.ndarray:
    """Mutual information (nats) of contingency tables of shape (..., a, b)."""
    n = counts.sum(axis=(-2, -1), keepdims=True)
    p = counts / n
    pa = p.sum(axis=-1, keepdims=True)
    pb = p.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / (pa * pb)), 0.0)
    return terms.sum(axis=(-2, -1))


def mi_permutation_pvalues(
    F: np.ndarray, y: np.ndarray, *, n_bins: int = 8, n_perm: int = 1999, seed: int = 0
) -> np.ndarray:
    """Permutation p-values of the discretised MI between each column of F and y.

    Columns are binned by rank into equal-frequency bins, so every column has the same bin
    counts and one permutation null (of y) serves all columns exactly.

    F: shape (n, m); y: shape (n,) int. Returns p-values of shape (m,), resolution 1/(n_perm+1).
    """
    n, m = F.shape
    classes, yc = np.unique(y, return_inverse=True)
    c = len(classes)
    B = np.stack([_ranks_to_bins(F[:, j], n_bins) for j in range(m)])  # (m, n)
    obs = _mi_from_counts(np.stack([np.bincount(b * c + yc, minlength=n_bins * c).reshape(n_bins, c) for b in B]))
    rng = np.random.default_rng(seed)
    exceed = np.zeros(m)
    done = 0
    while done < n_perm:  # chunks bound the memory
        b = min(2000, n_perm - done)
        perms = rng.permuted(np.broadcast_to(yc, (b, n)), axis=1)
        idx = (B[0][None, :] * c + perms) + (np.arange(b)[:, None] * n_bins * c)
        null = _mi_from_counts(np.bincount(idx.ravel(), minlength=b * n_bins * c).reshape(b, n_bins, c))
        exceed += (null[None, :] >= obs[:, None] - 1e-12).sum(axis=1)
        done += b
    return (1.0 + exceed) / (n_perm + 1.0)


def assert_no_shared_values(X: np.ndarray) -> None:
    """No two columns take exactly the same value on any row (continuous draws never do)."""
    X = np.asarray(X)
    for a in range(X.shape[1]):
        eq = (X[:, a][:, None] == X[:, a + 1 :]).sum(axis=0)
        bad = np.flatnonzero(eq)
        assert bad.size == 0, f"column {a} equals column {a + 1 + bad[0]} on {eq[bad[0]]} rows"


# --------------------------------------------------------------------------- contract
def test_registry_lists_everything() -> None:
    expected = {
        "ring",
        "xor",
        "ring_xor",
        "ring_xor_sum",
        "dag",
        "dag_confounders",
        "l2x_xor",
        "orange_skin",
        "nonlinear_additive",
        "switch",
        "hypercube",
    }
    assert expected <= set(ALL)
    d = describe()
    images = {"shapes", "shapes_xor", "digits", "mnist", "fashion_mnist", "cifar10"}
    assert set(d) == set(ALL) | images and all(isinstance(v, str) and v for v in d.values())
    assert {n for n in names() if datasets.spec(n).kind == "image"} == images


@pytest.mark.parametrize("n_decoys", [0, 7])
@pytest.mark.parametrize("name", ALL)
def test_contract(name: str, n_decoys: int) -> None:
    n = _n(name, 500)
    ds = make(name, n_samples=n, n_decoys=n_decoys, seed=3)
    assert isinstance(ds, Dataset) and ds.name == name and ds.seed == 3
    assert ds.X.dtype == np.float32 and ds.X.ndim == 2 and ds.X.shape[0] == n
    assert ds.y.dtype == np.int64 and ds.y.shape == (n,)
    assert np.isfinite(ds.X).all()
    assert len(np.unique(ds.y)) >= 2
    p = ds.n_features
    k = ds.k
    assert k >= 1
    # relevant first, decoys last
    assert ds.relevant[:k].all() and not ds.relevant[k:].any()
    assert p >= k + n_decoys
    if ds.relevant_local is not None:
        assert ds.relevant_local.shape == (n, p)
        assert not ds.relevant_local[:, ~ds.relevant].any()
        assert (ds.relevant_local.any(axis=0) == ds.relevant).all()
    # provenance: JSON-serialisable, records the call
    json.dumps(ds.params)
    assert ds.params["n_samples"] == n and ds.params["n_decoys"] == n_decoys
    assert ds.params["decoy_correlation"] == 0.0 and ds.params["decoy_partners"] is None
    assert ds.params["n_relevant"] == k


@pytest.mark.parametrize("name", ALL)
def test_determinism_and_decoys_do_not_move_the_data(name: str) -> None:
    n = _n(name, 400)
    a = make(name, n_samples=n, n_decoys=5, seed=11)
    b = make(name, n_samples=n, n_decoys=5, seed=11)
    c = make(name, n_samples=n, n_decoys=5, seed=12)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and np.array_equal(a.relevant, b.relevant)
    assert a.params == b.params
    assert not np.array_equal(a.X[:, : min(a.n_features, c.n_features)], c.X[:, : min(a.n_features, c.n_features)])
    # adding decoys never changes the non-decoy columns or the labels (separate random stream)
    z = make(name, n_samples=n, n_decoys=0, seed=11)
    assert np.array_equal(z.X, a.X[:, : z.n_features]) and np.array_equal(z.y, a.y)
    assert np.array_equal(z.relevant, a.relevant[: z.n_features])


# --------------------------------------------------------------------------- decoys carry no information
N_PERM = 9999
ALPHA = 1e-3  # family-wise level per dataset: ~1% chance that some dataset fails at a random seed


def _decoy_pvalues(name: str, seed: int = 5, n_decoys: int = 10) -> np.ndarray:
    ds = make(name, n_samples=2000, n_decoys=n_decoys, seed=seed)
    return mi_permutation_pvalues(ds.X[:, -n_decoys:], ds.y, n_perm=N_PERM, seed=seed)


def test_decoys_carry_no_information_about_y() -> None:
    # Per dataset: Bonferroni over its 10 decoys at family level ALPHA. Pooled over all datasets:
    # KS of the decoy p-values against U(0, 1) at level 0.001. Fixed seeds make both deterministic.
    pooled = []
    for name in ALL:
        pv = _decoy_pvalues(name)
        assert pv.min() > ALPHA / len(pv), f"{name}: a decoy looks informative, p-values {np.round(pv, 4)}"
        pooled.append(pv)
    pooled_pv = np.concatenate(pooled)
    assert stats.kstest(pooled_pv, "uniform").pvalue > 1e-3


def test_decoy_information_test_has_power() -> None:
    # The same test flags relevant features and correlated decoys, so it can fail.
    ring = make("ring", n_samples=2000, n_decoys=1, seed=5, decoy_correlation=0.9)
    pv = mi_permutation_pvalues(ring.X, ring.y, n_perm=N_PERM)
    assert (pv <= ALPHA / 10).all(), pv  # x0, x1 and the decoy copying x0 (rho=0.9) are all flagged
    orange = make("orange_skin", n_samples=2000, n_decoys=0, seed=5)
    assert (mi_permutation_pvalues(orange.X, orange.y, n_perm=N_PERM) <= ALPHA / 10).all()


# --------------------------------------------------------------------------- label rules
def _paper_rule(name: str, X: np.ndarray) -> np.ndarray:
    """Independent transcription of the published rules, on uncentred values."""
    u = (X.astype(np.float64) + 1.0) / 2.0
    r = np.sqrt((u[:, 0] - 0.5) ** 2 + (u[:, 1] - 0.5) ** 2)
    if name == "ring":
        return np.abs(r - 0.35) <= 0.1151
    if name == "xor":
        return (u[:, 0] - 0.5) * (0.5 - u[:, 1]) >= 0
    if name == "ring_xor":
        return (np.abs(r - 0.35) <= 0.0704) | ((u[:, 2] - 0.5) * (0.5 - u[:, 3]) >= 0.0337)
    if name == "ring_xor_sum":  # noiseless part
        return (np.abs(r - 0.35) <= 0.0479) | ((u[:, 2] - 0.5) * (0.5 - u[:, 3]) >= 0.0598)
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["ring", "xor", "ring_xor"])
def test_noiseless_label_rule_reproduces_y(name: str) -> None:
    ds = make(name, n_samples=50_000, n_decoys=3, seed=21)
    Xr = ds.X[:, ds.relevant]
    assert np.array_equal(nonlinear.LABEL_RULES[name](Xr), ds.y)
    assert np.array_equal(_paper_rule(name, Xr).astype(np.int64), ds.y)
    assert ds.X.min() >= -1.0 and ds.X.max() <= 1.0


def test_ring_xor_sum_rule() -> None:
    ds = make("ring_xor_sum", n_samples=50_000, n_decoys=0, seed=22)
    X = ds.X
    fired = nonlinear.ring_xor_sum_fired(X)
    assert np.array_equal(fired, _paper_rule("ring_xor_sum", X))
    assert (ds.y[fired] == 1).all()
    # Where neither fires, P(y=1) = P(u4 + u5 + N(0, .2^2) >= 1.4074): calibration z-test.
    u = (X[~fired].astype(np.float64) + 1.0) / 2.0
    p = stats.norm.sf((1.4074 - u[:, 4] - u[:, 5]) / 0.2)
    yy = ds.y[~fired]
    z = (yy.sum() - p.sum()) / math.sqrt((p * (1 - p)).sum())
    assert abs(z) < 4.0
    for lo, hi in [(0.0, 0.2), (0.2, 0.8), (0.8, 1.0)]:
        sel = (p >= lo) & (p < hi)
        assert abs(yy[sel].mean() - p[sel].mean()) < 0.02


@pytest.mark.parametrize("name", UNIFORM)
def test_class_balance_matches_design(name: str) -> None:
    ds = make(name, n_samples=100_000, n_decoys=0, seed=31)
    assert abs(ds.y.mean() - nonlinear.DESIGN_BALANCE[name]) < 0.02


@pytest.mark.parametrize("name", UNIFORM)
def test_uniform_marginals(name: str) -> None:
    ds = make(name, n_samples=5000, n_decoys=3, seed=32)
    for j in range(ds.n_features):
        assert stats.kstest(ds.X[:, j], "uniform", args=(-1.0, 2.0)).pvalue > 1e-4


# --------------------------------------------------------------------------- dag
def _closure_sets(graph: dagmod.DagGraph) -> tuple[set[int], set[int]]:
    """Ancestors and confounded nodes of the target, by graph search (independent of the library)."""
    rows = np.concatenate([p for p in graph.parents])
    cols = np.concatenate([np.full(len(p), j) for j, p in enumerate(graph.parents)])
    A = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(graph.n_nodes, graph.n_nodes))
    back = csgraph.breadth_first_order(A.T.tocsr(), graph.target, directed=True, return_predecessors=False)
    anc = set(int(v) for v in back) - {graph.target}
    desc: set[int] = set()
    for m in anc:
        desc |= set(int(v) for v in csgraph.breadth_first_order(A, m, directed=True, return_predecessors=False))
    conf = desc - anc - {graph.target}
    return anc, conf


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dag_ground_truth_is_ancestors_and_confounded(seed: int) -> None:
    graph = dagmod.dag_graph(seed)
    anc, conf = _closure_sets(graph)
    assert anc and set(graph.ancestors.tolist()) == anc
    assert set(graph.confounded.tolist()) == conf
    assert graph.target not in set(graph.column_nodes.tolist())
    assert sorted(graph.column_nodes.tolist()) == sorted(set(range(graph.n_nodes)) - {graph.target})
    k, k2 = len(anc), len(anc) + len(conf)
    assert set(graph.column_nodes[:k].tolist()) == anc
    assert set(graph.column_nodes[k:k2].tolist()) == conf
    assert graph.isolated.size == 1000
    iso = set(graph.isolated.tolist())
    assert all(not (set(p.tolist()) & iso) for p in graph.parents)
    assert all(graph.parents[j].size == 0 for j in iso)
    # the generators use exactly this graph
    d1 = make("dag", n_samples=DAG_N, n_decoys=4, seed=seed)
    d2 = make("dag_confounders", n_samples=DAG_N, n_decoys=4, seed=seed)
    assert d1.k == k and d2.k == k2
    assert d1.params["target_node"] == graph.target and d1.params["n_confounded"] == len(conf)
    assert np.array_equal(d1.X, d2.X) and np.array_equal(d1.y, d2.y)
    d3 = make("dag", n_samples=DAG_N, n_decoys=4, seed=seed, truth="ancestors_confounders")
    assert np.array_equal(d3.relevant, d2.relevant)


def test_dag_structural_equations() -> None:
    seed = 1
    graph, S = dagmod.simulate_dag_dataset(n_samples=DAG_N, seed=seed)
    ds = make("dag", n_samples=DAG_N, n_decoys=0, seed=seed)
    assert np.array_equal(ds.X, (2.0 * S[:, graph.column_nodes] - 1.0).astype(np.float32))
    t = S[:, graph.target]
    assert np.array_equal(ds.y, (t > np.median(t)).astype(np.int64))
    assert abs(ds.y.mean() - 0.5) < 0.01
    # Interventions on the noise: only the ancestors' (and the target's own) noise moves the target.
    rng = np.random.default_rng(0)
    E = rng.normal(0, 0.2, size=(200, graph.n_nodes))
    base = dagmod.simulate_dag(graph, E)[:, graph.target]
    non_anc = np.setdiff1d(np.arange(graph.n_nodes), np.append(graph.ancestors, graph.target))
    E2 = E.copy()
    E2[:, non_anc] = rng.normal(0, 0.2, size=(200, non_anc.size))
    assert np.array_equal(dagmod.simulate_dag(graph, E2)[:, graph.target], base)
    for a in graph.ancestors:
        E3 = E.copy()
        E3[:, a] = rng.normal(0, 0.2, size=200)
        assert np.abs(dagmod.simulate_dag(graph, E3)[:, graph.target] - base).max() > 1e-9, a


def test_dag_standardised_scaling_is_the_centred_set_standardised_over_all_rows() -> None:
    centred = make("dag", n_samples=DAG_N, n_decoys=3, seed=2)
    scaled = make("dag", n_samples=DAG_N, n_decoys=3, seed=2, scaling="standardised")
    assert np.array_equal(centred.y, scaled.y) and np.array_equal(centred.relevant, scaled.relevant)
    X = centred.X.astype(np.float64)
    sd = X.std(axis=0)
    expected = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    np.testing.assert_allclose(scaled.X, expected, atol=1e-5)
    np.testing.assert_allclose(scaled.X.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(scaled.X.std(axis=0), 1.0, atol=1e-4)
    assert scaled.params["scaling"] == "standardised" and centred.params["scaling"] == "centred"
    with pytest.raises(ValueError, match="scaling must be one of"):
        make("dag", n_samples=DAG_N, n_decoys=0, seed=2, scaling="minmax")


# --------------------------------------------------------------------------- L2X / INVASE
@pytest.mark.parametrize("name", ["l2x_xor", "orange_skin", "nonlinear_additive"])
def test_l2x_local_truth_equals_global(name: str) -> None:
    ds = make(name, n_samples=3000, n_decoys=6, seed=41)
    assert ds.relevant_local is not None
    assert (ds.relevant_local == ds.relevant[None, :]).all()
    fn, k = l2x.LOGITS[name]
    assert ds.k == k
    _check_calibration(fn(ds.X[:, :k]), ds.y)


def _check_calibration(logit: np.ndarray, y: np.ndarray) -> None:
    p = special.expit(logit)
    z = (y.sum() - p.sum()) / math.sqrt(max((p * (1 - p)).sum(), 1e-9))
    assert abs(z) < 4.0
    for lo, hi in [(0.0, 0.1), (0.1, 0.9), (0.9, 1.0001)]:
        sel = (p >= lo) & (p < hi)
        if sel.sum() > 200:
            assert abs(y[sel].mean() - p[sel].mean()) < 0.05


def check_switch_data(X: np.ndarray, y: np.ndarray, local: np.ndarray, logit: np.ndarray) -> None:
    """What a correct ``switch`` table satisfies (X: (n, >= 9), local: (n, >= 9) bool).

    1. no two columns share a value on any row;
    2. the logit recomputed per sample from the group its mask flags equals the generating logit;
    3. on the samples that use the additive group, the orange group carries no information on y.
    """
    assert_no_shared_values(X)
    sw = l2x.SWITCH_COLUMN
    assert local[:, sw].all()
    g_or, g_add = list(l2x.ORANGE_GROUP), list(l2x.ADDITIVE_GROUP)
    uses_orange = local[:, g_or].all(axis=1)
    uses_add = local[:, g_add].all(axis=1)
    assert (uses_orange ^ uses_add).all() and (local[:, : sw + 1].sum(axis=1) == 5).all()
    assert np.array_equal(uses_orange, X[:, sw] < 0)
    recomputed = np.where(uses_orange, l2x.orange_skin_logit(X[:, g_or]), l2x.nonlinear_additive_logit(X[:, g_add]))
    np.testing.assert_array_equal(recomputed, logit)
    pv = mi_permutation_pvalues(X[uses_add][:, g_or], y[uses_add])
    assert pv.min() > 0.01 / len(pv), f"unused group informative: {pv}"


def test_switch_per_instance_truth() -> None:
    ds = make("switch", n_samples=4000, n_decoys=2, seed=42)
    assert ds.relevant_local is not None
    assert ds.k == 9 and ds.n_features == 11
    local = ds.relevant_local
    assert np.array_equal(local[:, :9], l2x.switch_mask(ds.X))
    assert not local[:, 9:].any()
    logit = l2x.switch_logit(ds.X)
    check_switch_data(ds.X, ds.y, local, logit)
    _check_calibration(logit, ds.y)


def _legacy_switch(swap) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Build ``switch`` the way the public L2X code does: label the additive samples from
    columns 0..3, then move those columns to 4..7 with ``swap``."""
    rng = np.random.default_rng(7)
    n = 4000
    X = rng.standard_normal((n, 11))
    X[:, [8, 10]] = X[:, [10, 8]]  # keep our switch column 8
    add = X[:, 8] >= 0
    logit = np.where(add, l2x.nonlinear_additive_logit(X[:, :4]), l2x.orange_skin_logit(X[:, :4]))
    y = (rng.random(n) < special.expit(logit)).astype(np.int64)
    Xa = X[add]
    swap(Xa)
    X[add] = Xa
    return X, y, logit


def _buggy_swap(Z: np.ndarray) -> None:
    Z[:, 4:8], Z[:, 0:4] = Z[:, 0:4], Z[:, 4:8]  # the published bug: views, so it duplicates


def _correct_swap(Z: np.ndarray) -> None:
    Z[:, 4:8], Z[:, 0:4] = Z[:, 0:4].copy(), Z[:, 4:8].copy()


def test_switch_checks_catch_the_legacy_swap_bug() -> None:
    X, y, logit = _legacy_switch(_correct_swap)
    check_switch_data(X, y, l2x.switch_mask(X), logit)  # a correct swap passes
    Xb, yb, logitb = _legacy_switch(_buggy_swap)
    add = Xb[:, 8] >= 0
    assert np.array_equal(Xb[add][:, 0:4], Xb[add][:, 4:8])  # the bug duplicates the block
    with pytest.raises(AssertionError):
        check_switch_data(Xb, yb, l2x.switch_mask(Xb), logitb)
    with pytest.raises(AssertionError):
        assert_no_shared_values(Xb)


# --------------------------------------------------------------------------- hypercube
def test_hypercube_structure() -> None:
    ds = make("hypercube", n_samples=3000, n_decoys=4, seed=51, n_redundant=2, n_repeated=2)
    P = ds.params
    assert ds.k == 5 and ds.n_features == 5 + 2 + 2 + 4
    assert P["informative_indices"] == [0, 1, 2, 3, 4]
    assert P["redundant_indices"] == [5, 6] and P["repeated_indices"] == [7, 8]
    assert P["decoy_indices"] == [9, 10, 11, 12] and P["flip_y"] == 0.0
    X = ds.X.astype(np.float64)
    # redundant = exact linear combinations of the informative block
    coef, *_ = np.linalg.lstsq(X[:, :5], X[:, 5:7], rcond=None)
    assert np.abs(X[:, :5] @ coef - X[:, 5:7]).max() < 1e-4
    for r, s in zip(P["repeated_indices"], P["repeated_sources"]):
        assert 0 <= s < 7 and np.array_equal(ds.X[:, r], ds.X[:, s])
    # rows are shuffled (sklearn sorts them by cluster with shuffle=False)
    assert 0.3 < np.mean(ds.y[:-1] != ds.y[1:]) < 0.7
    for j in range(9, 13):
        assert stats.kstest(ds.X[:, j], "norm").pvalue > 1e-4


# --------------------------------------------------------------------------- correlated decoys
def _latent(name: str, x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    if name in UNIFORM:
        return stats.norm.ppf(np.clip((x + 1.0) / 2.0, 1e-12, 1 - 1e-12))
    if name.startswith("dag"):
        return special.logit(np.clip((x + 1.0) / 2.0, 1e-12, 1 - 1e-12)) / 2.0
    return (x - x.mean(axis=0)) / x.std(axis=0)


@pytest.mark.parametrize("name", ["ring", "ring_xor_sum", "switch", "dag", "hypercube"])
@pytest.mark.parametrize("rho", [0.3, 0.8])
def test_decoy_correlation(name: str, rho: float) -> None:
    n = 4000 if not name.startswith("dag") else 1500
    n_dec = 5
    ds = make(name, n_samples=n, n_decoys=n_dec, seed=61, decoy_correlation=rho)
    ref = make(name, n_samples=n, n_decoys=n_dec, seed=61)
    k = ds.k
    partners = ds.params["decoy_partners"]
    assert partners == [j % k for j in range(n_dec)] and ds.params["decoy_correlation"] == rho
    # relevant features, labels and ground truth unchanged
    assert np.array_equal(ds.relevant, ref.relevant) and np.array_equal(ds.y, ref.y)
    assert np.array_equal(ds.X[:, :-n_dec], ref.X[:, :-n_dec])
    L = _latent(name, ds.X)
    for j, part in enumerate(partners):
        r = np.corrcoef(L[:, ds.n_features - n_dec + j], L[:, part])[0, 1]
        assert abs(r - rho) < 0.05, (j, r)
    dec = ds.X[:, -n_dec:]
    for j in range(n_dec):
        if name in UNIFORM:
            assert stats.kstest(dec[:, j], "uniform", args=(-1.0, 2.0)).pvalue > 1e-4
        elif name in GAUSSIAN or name == "hypercube":
            assert stats.kstest(dec[:, j], "norm").pvalue > 1e-4
        else:  # dag: same law as the isolated nodes
            assert stats.ks_2samp(dec[:, j], ref.X[:, -n_dec + j]).pvalue > 1e-4


# --------------------------------------------------------------------------- bad input
def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(KeyError) as e:
        make("nope", n_samples=10, n_decoys=0, seed=0)
    assert "ring" in str(e.value) and "switch" in str(e.value)


@pytest.mark.parametrize("name", ALL)
def test_bad_common_arguments(name: str) -> None:
    with pytest.raises(ValueError, match="n_decoys"):
        make(name, n_samples=10, n_decoys=-1, seed=0)
    with pytest.raises(ValueError, match="n_samples"):
        make(name, n_samples=0, n_decoys=0, seed=0)
    for bad in (-0.1, 1.0, 1.5, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="decoy_correlation"):
            make(name, n_samples=10, n_decoys=2, seed=0, decoy_correlation=bad)
    with pytest.raises(TypeError):
        make(name, n_samples=10, n_decoys=0, seed=0, not_a_parameter=1)


def test_bad_family_arguments() -> None:
    with pytest.raises(ValueError, match="truth"):
        make("dag", n_samples=10, n_decoys=0, seed=0, truth="parents")
    with pytest.raises(ValueError, match="n_isolated"):
        make("dag", n_samples=10, n_decoys=0, seed=0, n_features=50, n_isolated=50)
    with pytest.raises(ValueError, match="edge_prob"):
        make("dag", n_samples=10, n_decoys=0, seed=0, edge_prob=0.0)
    with pytest.raises(ValueError, match="n_classes"):
        make("hypercube", n_samples=10, n_decoys=0, seed=0, n_informative=2, n_classes=3, n_clusters_per_class=2)
    with pytest.raises(ValueError, match="flip_y"):
        make("hypercube", n_samples=10, n_decoys=0, seed=0, flip_y=1.5)
    with pytest.raises(ValueError, match="n_informative"):
        make("hypercube", n_samples=10, n_decoys=0, seed=0, n_informative=0)


def test_a_dataset_too_large_for_memory_is_refused_before_anything_is_allocated(monkeypatch):
    import synthbench.datasets.base as base

    with pytest.raises(
        datasets.DatasetTooLarge,
        match=r"'ring' with n_samples=1000000000 and n_decoys=1000000 needs "
        r"about 26077084\.2 GiB",
    ):
        datasets.make("ring", n_samples=10**9, n_decoys=10**6, seed=0)
    # The estimate counts the real feature count: dag has 2000 features and no decoys.
    assert datasets.estimate_bytes("dag", n_samples=1000, n_decoys=0) == 1000 * 2000 * base.BYTES_PER_ELEMENT
    # A grid that fits on this machine is refused where less memory is available.
    datasets.check_fits("xor", n_samples=50_000, n_decoys=2046, seed=0)
    monkeypatch.setattr(base, "_available_bytes", lambda: 2**30)
    with pytest.raises(datasets.DatasetTooLarge, match="1.0 GiB of memory is available"):
        datasets.check_fits("xor", n_samples=50_000, n_decoys=2046, seed=0)
