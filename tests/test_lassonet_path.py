"""LassoNet's path for many members at once: each member's path is the lassonet package's, to the bit, and the 2023
method computes a setting's folds as one batch, each fold reading its part."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from lassonet.prox import prox

from synthbench.methods import embedded, get_method
from synthbench.methods.lassonet_path import HierProx, LassoNetPath, lassonet_paths, package_importances
from synthbench.methods.registry import method_rng
from synthbench.models import SharedModels, Siblings, TrainSettings
from synthbench.models.device import torch_threads
from synthbench.protocol import setting_folds


def test_the_proximal_step_is_the_packages_to_the_bit():
    """Every column as lassonet.prox.prox gives it (lambda_bar = 0), signs of zero included: zero skip columns, zero
    and negative-zero weights, columns the step empties (those it certainly empties take a shortcut: weights a
    thousand times below the threshold) and columns it keeps, alone and mixed."""
    g = torch.Generator().manual_seed(0)
    emptied = 0
    for n in (1, 7, 300):
        for scale in (0.1, 1e-4):
            v, u = torch.randn(2, n, generator=g) * scale, torch.randn(16, n, generator=g) * scale
            u[:, n // 2 :] *= 1e3  # the second half kept at small thresholds
            v[:, : n // 3] = 0.0
            v[1, 1::3] = -0.0
            u[:, 1::4] = 0.0
            u[5, ::2] = -0.0
            for lam in (0.0, 1e-3, 0.05, 1.0):
                want_v, want_u = prox(v, u, lambda_=lam, lambda_bar=0, M=10.0)
                got_u, got_v = HierProx(16, n, 10.0, torch.device("cpu"), shortcut_rows=0)(v.T, u.T, lam)
                got_u, got_v = got_u.T, got_v.T
                assert torch.equal(got_v, want_v) and torch.equal(got_u, want_u), (n, scale, lam)
                assert torch.equal(torch.signbit(got_u), torch.signbit(want_u)), (n, scale, lam)
                assert torch.equal(torch.signbit(got_v), torch.signbit(want_v)), (n, scale, lam)
                if n == 300:
                    emptied += int((got_v == 0).all(dim=0).sum() - (v == 0).all(dim=0).sum())
    assert emptied > 200  # the step empties many columns that were not empty (286 of them)


#: A short path: few epochs, a coarse lambda sequence (about 25 steps on these data).
SHORT = LassoNetPath(
    hidden_dims=(8, 6),
    lambda_start=0.5,
    path_multiplier=1.25,
    batch_size=32,
    n_iters=(12, 6),
    patience=(4, 2),
    tol=0.999,
)


def test_each_member_s_path_is_the_package_s_to_the_bit():
    """Three members of different sizes (one with fewer training rows than a batch, so its batches are smaller and
    it takes one step an epoch) trained as one computation: each member's importances are those of the package's
    path on its rows, exactly, with the features that leave at different steps and a member that ends its path
    before the others."""
    g = np.random.default_rng(3)
    Xs, ys = [], []
    for n in (160, 230, 40):
        X = g.uniform(-1, 1, size=(n, 5)).astype(np.float32)
        ys.append(((X[:, 0] * X[:, 1] > 0) ^ (X[:, 2] > 0.3)).astype(np.int64))
        Xs.append(X)
    seeds = [11, 12, 13]
    with torch.random.fork_rng(devices=[]), torch_threads(1):  # the method's one thread
        got = lassonet_paths(Xs, ys, seeds, SHORT)
        want = [package_importances(X, y, s, SHORT) for X, y, s in zip(Xs, ys, seeds, strict=True)]
    for g_k, w_k in zip(got, want, strict=True):
        np.testing.assert_array_equal(g_k, w_k)
    assert all(len(np.unique(w)) >= 3 for w in want)  # features leave at different steps
    ends = [w[np.isfinite(w)].max() for w in want]
    assert len(set(ends)) == 3  # the paths end at different lambdas: members leave the batch one by one


def test_the_path_refuses_members_of_other_widths_labels_beyond_two_classes_and_no_path():
    X = np.zeros((50, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="same features"):
        lassonet_paths([X, X[:, :2]], [np.zeros(50), np.zeros(50)], [0, 1], SHORT)
    with pytest.raises(ValueError, match="two classes"):
        lassonet_paths([X], [np.arange(50) % 3], [0], SHORT)
    with pytest.raises(ValueError, match="lambda_start"):
        LassoNetPath(hidden_dims=(4,), lambda_start=0.0, batch_size=8)


def test_lassonet_2023_computes_a_setting_s_folds_once_each_as_alone(tmp_path, monkeypatch):
    """With siblings and a disk cache, the first fold to ask computes every fold's path as one batch and the others
    read theirs; each fold's scores are those it computes alone. A scorer's other random stream, or a changed copy of
    the fold's data, computes alone."""
    folds = setting_folds("xor", n_samples=150, seed=0, n_folds=3, n_decoys=2)
    spec = get_method("lassonet_2023")
    params = {**spec.params, "n_iters": (30, 3), "lambda_start": 20.0}
    batches: list[int] = []
    real = embedded.lassonet_paths

    def counted(Xs, *args, **kwargs):
        batches.append(len(Xs))
        return real(Xs, *args, **kwargs)

    monkeypatch.setattr(embedded, "lassonet_paths", counted)
    siblings = Siblings("xor, 150 rows", lambda: setting_folds("xor", n_samples=150, seed=0, n_folds=3, n_decoys=2))
    settings = TrainSettings(cache_dir=str(tmp_path))
    sharing = [SharedModels(f, settings, siblings=siblings) for f in folds]
    together = [spec.fn(f, m, method_rng(spec, f), **params) for f, m in zip(folds, sharing, strict=True)]
    assert batches == [3]
    assert sharing[0].siblings_seconds > 0 > sharing[1].siblings_seconds  # fold 0 computed its siblings' parts
    alone = [spec.fn(f, SharedModels(f), method_rng(spec, f), **params) for f in folds]
    assert batches == [3, 1, 1, 1]
    for t, a in zip(together, alone, strict=True):
        np.testing.assert_array_equal(t, a)
    assert len({tuple(t) for t in together}) == 3
    spec.fn(folds[0], sharing[0], method_rng(spec, folds[0], ("another stream",)), **params)
    spec.fn(dataclasses.replace(folds[0]), sharing[0], method_rng(spec, folds[0]), **params)
    assert batches == [3, 1, 1, 1, 1, 1]
