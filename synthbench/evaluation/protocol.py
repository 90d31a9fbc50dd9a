"""Cross-validation protocol: unshuffled K folds with a fresh random column permutation per fold.

Each fold hides the generator's column order (relevant features first) behind a permutation
drawn from the run seed, so no method can profit from column position. Methods are fitted on
the training part; attribution methods explain the held-out part unless ``explain="train"``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn.model_selection import KFold

from synthbench.datasets import Dataset

__all__ = ["Fold", "FoldData", "make_folds", "seed_stream"]


def seed_stream(seed: int, *labels: int | str) -> np.random.SeedSequence:
    """An independent, reproducible seed sequence for ``seed`` and a path of labels.

    Strings are mapped to integers with CRC-32, so ``seed_stream(s, "perm", 3)`` is the same in
    every process and Python version (unlike ``hash``).
    """
    keys = [zlib.crc32(x.encode()) if isinstance(x, str) else int(x) for x in labels]
    return np.random.SeedSequence([int(seed), *keys])


@dataclass(frozen=True)
class Fold:
    """One fold of the protocol.

    Attributes
    ----------
    index : int
    train, test : int arrays of row indices
    permutation : int array of shape (p,); column ``j`` seen by methods is original column
        ``permutation[j]``.
    """

    index: int
    train: np.ndarray
    test: np.ndarray
    permutation: np.ndarray


def make_folds(n_samples: int, n_features: int, *, n_folds: int, seed: int) -> list[Fold]:
    """Unshuffled ``KFold(n_folds)`` splits, each with its own column permutation from ``seed``."""
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2, got {n_folds}")
    if n_samples < n_folds:
        raise ValueError(f"n_samples ({n_samples}) must be at least the number of folds ({n_folds})")
    folds = []
    for i, (train, test) in enumerate(KFold(n_splits=n_folds, shuffle=False).split(np.zeros((n_samples, 1)))):
        perm = np.random.default_rng(seed_stream(seed, "permutation", i)).permutation(n_features)
        folds.append(Fold(i, train, test, perm))
    return folds


@dataclass(frozen=True, eq=False)
class FoldData:
    """What a method sees for one fold, columns already permuted.

    Attributes
    ----------
    X_train : float32 (n_train, p);  y_train : int64 (n_train,)
    X_explain : float32 (n_explain, p), the rows attribution methods explain
    y_explain : int64 (n_explain,)
    X_test, y_test : the held-out part (used to score models)
    relevant : bool (p,), permuted global truth
    relevant_local : bool (n_explain, p) or None, permuted per-instance truth of the explained rows
    seed : int, the run seed; fold : int, the fold index
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_explain: np.ndarray
    y_explain: np.ndarray
    relevant: np.ndarray
    relevant_local: np.ndarray | None
    seed: int
    fold: int

    @classmethod
    def from_dataset(cls, ds: Dataset, fold: Fold, *, explain: Literal["test", "train"] = "test") -> FoldData:
        if explain not in ("test", "train"):
            raise ValueError(f"explain must be 'test' or 'train', got {explain!r}")
        X = ds.X[:, fold.permutation]
        rows = fold.test if explain == "test" else fold.train
        local = None if ds.relevant_local is None else ds.relevant_local[rows][:, fold.permutation]
        return cls(
            X_train=np.ascontiguousarray(X[fold.train]),
            y_train=ds.y[fold.train],
            X_test=np.ascontiguousarray(X[fold.test]),
            y_test=ds.y[fold.test],
            X_explain=np.ascontiguousarray(X[rows]),
            y_explain=ds.y[rows],
            relevant=ds.relevant[fold.permutation],
            relevant_local=local,
            seed=ds.seed,
            fold=fold.index,
        )

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    def rng(self, *labels: int | str) -> np.random.Generator:
        """A generator for this fold and the given labels (e.g. a method name)."""
        return np.random.default_rng(seed_stream(self.seed, "fold", self.fold, *labels))

    def random_state(self, *labels: int | str) -> int:
        """A scikit-learn ``random_state`` integer for this fold and labels."""
        return int(seed_stream(self.seed, "fold", self.fold, *labels).generate_state(1)[0] % (2**31 - 1))
