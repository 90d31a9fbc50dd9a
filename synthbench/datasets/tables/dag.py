"""The causal ``dag`` set of Passemiers et al. (2023).

Generative process (``n_features`` features plus one target node, ``N = n_features + 1`` nodes)
------------------------------------------------------------------------------------------------
1. Draw a random DAG in topological order ``0..N-1``: edge ``i -> j`` (``i < j``) with probability
   ``edge_prob`` (default 0.004), independently.
2. Force ``n_isolated`` (default 1000) uniformly chosen nodes to be isolated (drop their edges).
3. Give each edge a weight ``w ~ U(-1, 1)``.
4. Choose the target uniformly among the nodes with at least ``min_ancestors`` ancestors (default
   1). The reference code takes a uniformly random node (the last one after shuffling) and does
   not check that it has ancestors, so about half of its draws would have an isolated target and
   an empty ground truth; we condition on the target having ancestors, redrawing the graph when no
   node qualifies.
5. Structural equations, in topological order: with ``P(j)`` the parents of ``j``::

       v_j = mean_{i in P(j)} (w_ij * s_i) + e_j,   e_j ~ N(0, noise_std**2)   (v_j = e_j if no parent)
       s_j = sigmoid(2 * (v_j - mean(v_j)) / std(v_j))

   where mean and std are taken over the ``n_samples`` drawn rows, as in the reference code
   (so rows are exchangeable but not strictly independent). ``y = s_target > median(s_target)``.
6. Features are the ``s`` of the ``n_features`` non-target nodes, centred ``2s - 1``
   (``scaling="centred"``, the default). ``scaling="standardised"`` standardises every column
   over all ``n_samples`` rows instead (zero mean, unit variance, as ``StandardScaler`` fitted
   on the whole set): what the 2023 code fed every method except the attribution methods,
   whose network saw ``2s - 1``.

Ground truths (``truth``)
-------------------------
* ``"ancestors"`` (name ``dag``): the target's causal ancestors, i.e. every node with a directed
  path to the target. These are exactly the features the target's structural equations read.
* ``"ancestors_confounders"`` (name ``dag_confounders``): the ancestors plus every other non-target
  node ``v`` that shares a common ancestor with the target (``anc(v) & anc(target) != {}``); this is
  the reference code's second set (its "forks", ``C.T @ C`` over the reachability matrix ``C``).
  These nodes are dependent on the target through a common cause (a confounding path) without
  causing it; the set includes the target's descendants, since those inherit its ancestors.
  (Strictly the common causes are the confounders; they are ancestors already, so this set is
  "ancestors plus features confounded with the target".)

Column order: ancestors, then confounded nodes, then the remaining nodes, each block in a random
order (the node shuffle), then decoys. ``dag`` and ``dag_confounders`` with the same seed give the
same ``X`` and ``y``; only ``relevant`` differs.

Decoys: ``n_decoys`` extra columns with the exact law of an isolated node,
``sigmoid(2 * standardise(z))`` with ``z ~ N(0, 1)``, centred like the others (see
:mod:`synthbench.datasets.tables.decoys`; correlated decoys copy a relevant node's standardised
pre-sigmoid score ``logit(s) / 2``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from synthbench.datasets.base import Dataset, register

from .decoys import assemble, check_decoy_correlation, check_float, check_int, latent_decoys, standardise

__all__ = ["DagGraph", "sample_dag_graph", "dag_graph", "simulate_dag", "simulate_dag_dataset", "TRUTHS", "SCALINGS"]

TRUTHS = ("ancestors", "ancestors_confounders")
SCALINGS = ("centred", "standardised")
_MAX_TRIES = 100


@dataclass(frozen=True, eq=False)
class DagGraph:
    """A sampled DAG over ``n_nodes`` nodes in topological order (parents have smaller ids).

    Attributes
    ----------
    n_nodes : int
        ``n_features + 1``.
    parents : tuple of ndarray of int64
        ``parents[j]``: sorted parent ids of node ``j``.
    weights : tuple of ndarray of float64
        ``weights[j][m]``: weight of edge ``parents[j][m] -> j``.
    isolated : ndarray of int64
        Nodes forced isolated.
    target : int
    ancestors : ndarray of int64
        Sorted ancestor ids of the target.
    confounded : ndarray of int64
        Sorted ids of the non-target, non-ancestor nodes sharing an ancestor with the target.
    column_nodes : ndarray of int64, shape (n_features,)
        Node shown in each output feature column (before decoys): ancestors, confounded, rest.
    """

    n_nodes: int
    parents: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...]
    isolated: np.ndarray
    target: int
    ancestors: np.ndarray
    confounded: np.ndarray
    column_nodes: np.ndarray

    @property
    def n_edges(self) -> int:
        return int(sum(len(p) for p in self.parents))


def _validate(n_features: int, edge_prob: float, n_isolated: int, min_ancestors: int) -> tuple[int, float, int, int]:
    n_features = check_int("n_features", n_features, minimum=1)
    edge_prob = check_float("edge_prob", edge_prob, low=0.0, high=1.0, low_open=True)
    n_isolated = check_int("n_isolated", n_isolated, minimum=0, maximum=n_features - 1)
    min_ancestors = check_int("min_ancestors", min_ancestors, minimum=1, maximum=n_features - n_isolated)
    return n_features, edge_prob, n_isolated, min_ancestors


def sample_dag_graph(
    rng: np.random.Generator,
    *,
    n_features: int = 2000,
    edge_prob: float = 0.004,
    n_isolated: int = 1000,
    min_ancestors: int = 1,
) -> DagGraph:
    """Draw the graph, weights, target and column order (steps 1-4 of the module docstring).

    Raises
    ------
    ValueError
        Bad parameters, or no node reached ``min_ancestors`` ancestors in 100 graph draws.
    """
    n_features, edge_prob, n_isolated, min_ancestors = _validate(n_features, edge_prob, n_isolated, min_ancestors)
    n = n_features + 1
    for _ in range(_MAX_TRIES):
        A = np.triu(rng.random((n, n)) < edge_prob, k=1)
        isolated = np.sort(rng.choice(n, size=n_isolated, replace=False)).astype(np.int64)
        A[isolated, :] = False
        A[:, isolated] = False
        At = np.ascontiguousarray(A.T)  # At[j] = parent indicator of j
        anc = np.zeros((n, n), dtype=bool)  # anc[j, i]: i is an ancestor of j
        for j in range(n):
            ps = np.flatnonzero(At[j])
            if ps.size:
                anc[j] = At[j] | anc[ps].any(axis=0)
        eligible = np.flatnonzero(anc.sum(axis=1) >= min_ancestors)
        if eligible.size:
            break
    else:
        raise ValueError(
            f"no node had >= {min_ancestors} ancestors in {_MAX_TRIES} graph draws; "
            f"raise edge_prob ({edge_prob}) or lower n_isolated ({n_isolated}) / min_ancestors"
        )
    weights = tuple(rng.uniform(-1.0, 1.0, size=int(At[j].sum())) for j in range(n))
    parents = tuple(np.flatnonzero(At[j]).astype(np.int64) for j in range(n))
    target = int(rng.choice(eligible))
    is_anc = anc[target].copy()
    shares = (anc & is_anc[None, :]).any(axis=1)
    shares[target] = False
    is_conf = shares & ~is_anc
    others = ~is_anc & ~is_conf
    others[target] = False
    ancestors = np.flatnonzero(is_anc).astype(np.int64)
    confounded = np.flatnonzero(is_conf).astype(np.int64)
    rest = np.flatnonzero(others).astype(np.int64)
    column_nodes = np.concatenate([rng.permutation(ancestors), rng.permutation(confounded), rng.permutation(rest)])
    return DagGraph(
        n_nodes=n,
        parents=parents,
        weights=weights,
        isolated=isolated,
        target=target,
        ancestors=ancestors,
        confounded=confounded,
        column_nodes=column_nodes.astype(np.int64),
    )


def dag_graph(
    seed: int,
    *,
    n_features: int = 2000,
    edge_prob: float = 0.004,
    n_isolated: int = 1000,
    min_ancestors: int = 1,
) -> DagGraph:
    """The graph that ``make("dag", seed=seed, ...)`` (and ``dag_confounders``) uses."""
    rng_graph = np.random.default_rng(int(seed)).spawn(3)[0]
    return sample_dag_graph(
        rng_graph, n_features=n_features, edge_prob=edge_prob, n_isolated=n_isolated, min_ancestors=min_ancestors
    )


def simulate_dag(graph: DagGraph, noise: np.ndarray) -> np.ndarray:
    """Evaluate the structural equations (step 5) for given noise.

    Parameters
    ----------
    graph : DagGraph
    noise : ndarray of float, shape (n_samples, n_nodes)
        The additive noise ``e_j`` (already scaled by ``noise_std``).

    Returns
    -------
    ndarray of float64, shape (n_samples, n_nodes)
        Node values ``s`` in ``(0, 1)``; column ``graph.target`` is the target.
    """
    E = np.asarray(noise, dtype=np.float64)
    if E.ndim != 2 or E.shape[1] != graph.n_nodes:
        raise ValueError(f"noise must have shape (n_samples, {graph.n_nodes}), got {E.shape}")
    E = np.ascontiguousarray(E.T)
    S = np.empty_like(E)  # S[j] = values of node j
    for j in range(graph.n_nodes):
        v = E[j].copy()
        ps = graph.parents[j]
        if ps.size:
            v += (graph.weights[j] @ S[ps]) / ps.size
        sd = v.std()
        if sd > 0:
            v = 2.0 * (v - v.mean()) / sd
        S[j] = special.expit(v)
    return S.T


def simulate_dag_dataset(
    *,
    n_samples: int,
    seed: int,
    n_features: int = 2000,
    edge_prob: float = 0.004,
    n_isolated: int = 1000,
    noise_std: float = 0.2,
    min_ancestors: int = 1,
) -> tuple[DagGraph, np.ndarray]:
    """Graph and node values exactly as the ``dag`` generator draws them for ``seed``.

    Returns
    -------
    graph : DagGraph
    S : ndarray of float64, shape (n_samples, n_features + 1)
        Node values (uncentred, in ``(0, 1)``).
    """
    noise_std = check_float("noise_std", noise_std, low=0.0)
    rng_graph, rng_noise, _ = np.random.default_rng(int(seed)).spawn(3)
    graph = sample_dag_graph(
        rng_graph, n_features=n_features, edge_prob=edge_prob, n_isolated=n_isolated, min_ancestors=min_ancestors
    )
    noise = (
        rng_noise.normal(0.0, noise_std, size=(n_samples, graph.n_nodes))
        if noise_std > 0
        else np.zeros((n_samples, graph.n_nodes))
    )
    return graph, simulate_dag(graph, noise)


def _generate(
    name: str,
    *,
    n_samples: int,
    n_decoys: int,
    seed: int,
    truth: str,
    n_features: int,
    edge_prob: float,
    n_isolated: int,
    noise_std: float,
    min_ancestors: int,
    decoy_correlation: float,
    scaling: str,
) -> Dataset:
    if truth not in TRUTHS:
        raise ValueError(f"truth must be one of {TRUTHS}, got {truth!r}")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    rho = check_decoy_correlation(decoy_correlation)
    graph, S = simulate_dag_dataset(
        n_samples=n_samples,
        seed=seed,
        n_features=n_features,
        edge_prob=edge_prob,
        n_isolated=n_isolated,
        noise_std=noise_std,
        min_ancestors=min_ancestors,
    )
    target = S[:, graph.target]
    y = (target > np.median(target)).astype(np.int64)
    feats = S[:, graph.column_nodes]
    n_anc, n_conf = int(graph.ancestors.size), int(graph.confounded.size)
    k = n_anc if truth == "ancestors" else n_anc + n_conf
    rng_decoy = np.random.default_rng(int(seed)).spawn(3)[2]
    partner_latent = None
    if rho > 0:
        partner_latent = special.logit(np.clip(feats[:, :k], 1e-12, 1 - 1e-12)) / 2.0
    z, partners = latent_decoys(rng_decoy, n_samples, n_decoys, rho, partner_latent)
    decoys = special.expit(2.0 * standardise(z, axis=0)) if n_samples > 1 else special.expit(2.0 * z)
    params = {
        "n_samples": n_samples,
        "n_decoys": n_decoys,
        "truth": truth,
        "n_features": int(n_features),
        "edge_prob": float(edge_prob),
        "n_isolated": int(n_isolated),
        "noise_std": float(noise_std),
        "min_ancestors": int(min_ancestors),
        "decoy_correlation": rho,
        "decoy_partners": partners,
        "n_relevant": k,
        "n_ancestors": n_anc,
        "n_confounded": n_conf,
        "n_edges": graph.n_edges,
        "target_node": graph.target,
        "scaling": scaling,
        "marginal": "sigmoid(2*standardised node) centred by 2s-1"
        if scaling == "centred"
        else "sigmoid(2*standardised node), each column standardised over all rows",
        "label": "target > median(target)",
    }
    columns = [2.0 * feats - 1.0, 2.0 * decoys - 1.0]
    if scaling == "standardised":
        columns = [standardise(c, axis=0) for c in columns]
    return assemble(
        name=name,
        seed=seed,
        columns=columns,
        y=y,
        n_relevant=k,
        relevant_local=None,
        params=params,
    )


@register("dag", description="Passemiers 2023 causal DAG (2000 nodes); truth = target's ancestors", family="dag")
def dag(
    *,
    n_samples: int,
    n_decoys: int,
    seed: int,
    truth: str = "ancestors",
    n_features: int = 2000,
    edge_prob: float = 0.004,
    n_isolated: int = 1000,
    noise_std: float = 0.2,
    min_ancestors: int = 1,
    decoy_correlation: float = 0.0,
    scaling: str = "centred",
) -> Dataset:
    """Causal DAG set; see the module docstring.

    Returns
    -------
    Dataset
        ``X`` of shape (n_samples, n_features + n_decoys); ``relevant`` marks the target's
        ancestors (``truth="ancestors"``) or ancestors plus confounded nodes
        (``truth="ancestors_confounders"``).
    """
    return _generate(
        "dag",
        n_samples=n_samples,
        n_decoys=n_decoys,
        seed=seed,
        truth=truth,
        n_features=n_features,
        edge_prob=edge_prob,
        n_isolated=n_isolated,
        noise_std=noise_std,
        min_ancestors=min_ancestors,
        decoy_correlation=decoy_correlation,
        scaling=scaling,
    )


@register(
    "dag_confounders",
    description="Passemiers 2023 causal DAG; truth = ancestors + nodes sharing an ancestor with the target",
    family="dag",
)
def dag_confounders(
    *,
    n_samples: int,
    n_decoys: int,
    seed: int,
    n_features: int = 2000,
    edge_prob: float = 0.004,
    n_isolated: int = 1000,
    noise_std: float = 0.2,
    min_ancestors: int = 1,
    decoy_correlation: float = 0.0,
    scaling: str = "centred",
) -> Dataset:
    """``dag`` with ``truth="ancestors_confounders"``; same ``X`` and ``y`` as ``dag`` for a seed."""
    return _generate(
        "dag_confounders",
        n_samples=n_samples,
        n_decoys=n_decoys,
        seed=seed,
        truth="ancestors_confounders",
        n_features=n_features,
        edge_prob=edge_prob,
        n_isolated=n_isolated,
        noise_std=noise_std,
        min_ancestors=min_ancestors,
        decoy_correlation=decoy_correlation,
        scaling=scaling,
    )
