"""The evaluation protocol: K unshuffled folds, the transform of each input kind, and what a method returns.

Each fold of a table hides the generator's column order (relevant features first) behind a
column permutation drawn from the run seed, so no method can profit from column position;
images are not transformed (their generators place the signal at random positions). Methods
are fitted on the training part; attribution methods explain the held-out part unless
``explain="train"``. This module sits just above :mod:`synthbench.datasets`: models, methods
and scorers all read a fold through :class:`FoldData`, and a cell's fold is built from its
configuration in one place, :func:`cell_fold` (the runner and the report both call it).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sklearn.model_selection import KFold

from synthbench import datasets
from synthbench.datasets import Dataset
from synthbench.kinds import get_kind

__all__ = [
    "Fold",
    "FoldData",
    "MethodOutput",
    "MethodOutputError",
    "make_folds",
    "dataset_folds",
    "cell_fold",
    "setting_folds",
    "seed_stream",
    "explained_part",
]

"""Input kinds whose columns each fold permutes (tables); other kinds are passed through."""


def seed_stream(seed: int, *labels: int | str) -> np.random.SeedSequence:
    """An independent, reproducible seed sequence for ``seed`` and a path of labels.

    Strings are mapped to integers with CRC-32, so ``seed_stream(s, "perm", 3)`` is the same in
    every process and Python version (unlike ``hash``).
    """
    floats = [x for x in labels if isinstance(x, (float, np.floating))]
    if floats:  # int() would truncate them: 0.1 and 0.2 would share a stream
        raise TypeError(f"seed labels are ints or strings, got {floats!r}; pass a number as a string")
    keys = [zlib.crc32(x.encode()) if isinstance(x, str) else int(x) for x in labels]
    return np.random.SeedSequence([int(seed), *keys])


@dataclass(frozen=True)
class Fold:
    """One fold of the protocol.

    Attributes
    ----------
    index : int
    train, test : int arrays of row indices
    permutation : int array of shape (p,), or None; column ``j`` seen by methods is original
        column ``permutation[j]`` (tables). None: the inputs are not transformed (images).
    """

    index: int
    train: np.ndarray
    test: np.ndarray
    permutation: np.ndarray | None


def make_folds(n_samples: int, n_features: int, *, n_folds: int, seed: int, permute: bool = True) -> list[Fold]:
    """Unshuffled ``KFold(n_folds)`` splits, each with its own column permutation from ``seed`` when ``permute``."""
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2, got {n_folds}")
    if n_samples < n_folds:
        raise ValueError(f"n_samples ({n_samples}) must be at least the number of folds ({n_folds})")
    folds = []
    for i, (train, test) in enumerate(KFold(n_splits=n_folds, shuffle=False).split(np.zeros((n_samples, 1)))):
        perm = np.random.default_rng(seed_stream(seed, "permutation", i)).permutation(n_features) if permute else None
        folds.append(Fold(i, train, test, perm))
    return folds


def explained_part(explain: str) -> tuple[Literal["test", "train"], int | None]:
    """The part of a fold whose rows the methods explain, and how many of its first rows: ``"test"`` (every held-out
    row), ``"train"``, or either with ``:N`` (``"test:100"``: the first 100 held-out rows, a random sample of them: a
    fold's rows are in the generator's order); ValueError for anything else."""
    part, colon, first = explain.partition(":")
    if part not in ("test", "train") or (colon and not (first.isdigit() and int(first) > 0)):
        raise ValueError(f"explain must be 'test' or 'train', or either with ':N' (N >= 1 rows), got {explain!r}")
    return ("test" if part == "test" else "train"), int(first) if first else None


def dataset_folds(ds: Dataset, *, n_folds: int, seed: int) -> list[Fold]:
    """:func:`make_folds` for ``ds``, permuting columns when its kind says so (:attr:`InputKind.permuted`)."""
    return make_folds(ds.n_samples, ds.n_features, n_folds=n_folds, seed=seed, permute=get_kind(ds.kind).permuted)


@dataclass(frozen=True, eq=False)
class FoldData:
    """What a method sees for one fold, transformed as its input kind says (tables: columns permuted).

    Attributes
    ----------
    X_train : float32 (n_train, *input_shape);  y_train : int64 (n_train,)
    X_explain : float32 (n_explain, *input_shape), the examples attribution methods explain
    y_explain : int64 (n_explain,)
    X_test, y_test : the held-out part (used to score models)
    relevant : bool input_shape or None, the (permuted) global truth
    relevant_local : bool (n_explain, *input_shape) or None, the per-instance truth of the
        explained examples (image masks)
    seed : int, the run seed; fold : int, the fold index
    n_classes : int, ``K`` of the whole data set (a fold may lack a class)
    bayes_accuracy : float or None, the expected accuracy of the Bayes classifier on the held-out
        rows, where the generator can compute it (:attr:`~synthbench.datasets.Dataset.bayes`)
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_explain: np.ndarray
    y_explain: np.ndarray
    relevant: np.ndarray | None
    relevant_local: np.ndarray | None
    seed: int
    fold: int
    n_classes: int = 2
    bayes_accuracy: float | None = None

    @classmethod
    def from_dataset(cls, ds: Dataset, fold: Fold, *, explain: str = "test") -> FoldData:
        """The fold's data; the methods explain the rows ``explain`` names (:func:`explained_part`)."""
        part, first = explained_part(explain)
        perm = fold.permutation
        if (perm is None) == get_kind(ds.kind).permuted:
            raise ValueError(
                f"a {ds.kind} dataset needs folds {'with' if perm is None else 'without'} a column "
                "permutation (see dataset_folds)"
            )
        X = ds.X if perm is None else ds.X[:, perm]
        rows = (fold.test if part == "test" else fold.train)[:first]
        local = ds.relevant_local
        if local is not None:
            local = local[rows] if perm is None else local[rows][:, perm]
        relevant = ds.relevant if ds.relevant is None or perm is None else ds.relevant[perm]
        return cls(
            X_train=np.ascontiguousarray(X[fold.train]),
            y_train=ds.y[fold.train],
            X_test=np.ascontiguousarray(X[fold.test]),
            y_test=ds.y[fold.test],
            X_explain=np.ascontiguousarray(X[rows]),
            y_explain=ds.y[rows],
            relevant=relevant,
            relevant_local=local,
            seed=ds.seed,
            fold=fold.index,
            n_classes=ds.n_classes,
            bayes_accuracy=None if ds.bayes is None or not len(fold.test) else float(ds.bayes[fold.test].mean()),
        )

    @property
    def kind(self) -> str:
        """``"tabular"`` or ``"image"``."""
        return "tabular" if self.X_train.ndim == 2 else "image"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.X_train.shape[1:])

    @property
    def n_features(self) -> int:
        """Input elements per example (columns of a table)."""
        return int(np.prod(self.input_shape))

    @property
    def k(self) -> int | None:
        """Number of globally relevant elements, or None without global truth."""
        return None if self.relevant is None else int(self.relevant.sum())

    def first(self, n: int) -> FoldData:
        """The fold with only its first ``n`` explained examples (and their per-instance truth); itself when
        it has no more. The explained rows are already a random part of the data."""
        if len(self.X_explain) <= n:
            return self
        local = None if self.relevant_local is None else self.relevant_local[:n]
        return dataclasses.replace(
            self, X_explain=self.X_explain[:n], y_explain=self.y_explain[:n], relevant_local=local
        )

    def rng(self, *labels: int | str) -> np.random.Generator:
        """A generator for this fold and the given labels (e.g. a method name)."""
        return np.random.default_rng(seed_stream(self.seed, "fold", self.fold, *labels))

    def random_state(self, *labels: int | str) -> int:
        """A scikit-learn ``random_state`` integer for this fold and labels."""
        return int(seed_stream(self.seed, "fold", self.fold, *labels).generate_state(1)[0] % (2**31 - 1))


def cell_fold(
    dataset: str,
    *,
    n_samples: int,
    seed: int,
    n_folds: int,
    fold: int,
    n_decoys: int | None = None,
    dataset_params: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
    explain: str = "test",
    data_dir: str | None = None,
) -> tuple[FoldData, Fold]:
    """The fold one cell runs on, built from the cell's configuration: its :class:`FoldData` and its :class:`Fold`.

    The registered generator ``dataset`` makes ``n_samples`` rows from ``seed`` (with ``n_decoys``
    decoys, or the generator's own default when None, and ``dataset_params``);
    :func:`dataset_folds` splits them into ``n_folds`` folds with the same seed, and fold ``fold``
    (0-based) is taken, explaining its ``explain`` part. The runner builds every cell's data here,
    and the report regenerates the data of a stored cell the same way, so both see the same
    rows, column permutation and truth. ``dataset_params`` may be a mapping or ``(name, value)``
    pairs (a cell's); ``data_dir`` the folder of a data set read from files. Errors of the generator
    or of the fold count propagate.
    """
    ds, splits = _setting(dataset, n_samples, seed, n_folds, n_decoys, dataset_params, data_dir)
    return FoldData.from_dataset(ds, splits[fold], explain=explain), splits[fold]


def setting_folds(
    dataset: str,
    *,
    n_samples: int,
    seed: int,
    n_folds: int,
    n_decoys: int | None = None,
    dataset_params: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
    explain: str = "test",
    data_dir: str | None = None,
) -> list[FoldData]:
    """Every fold of one setting, in fold order: :func:`cell_fold` of each fold, the data made once."""
    ds, splits = _setting(dataset, n_samples, seed, n_folds, n_decoys, dataset_params, data_dir)
    return [FoldData.from_dataset(ds, split, explain=explain) for split in splits]


def _setting(
    dataset: str,
    n_samples: int,
    seed: int,
    n_folds: int,
    n_decoys: int | None,
    dataset_params: Mapping[str, Any] | Iterable[tuple[str, Any]],
    data_dir: str | None,
) -> tuple[Dataset, list[Fold]]:
    """The setting's data set and its folds."""
    decoys = {} if n_decoys is None else {"n_decoys": n_decoys}
    ds = datasets.make(dataset, n_samples=n_samples, seed=seed, **decoys, data_dir=data_dir, **dict(dataset_params))
    return ds, dataset_folds(ds, n_folds=n_folds, seed=seed)


class MethodOutputError(ValueError):
    """A method returned output that breaks the contract of :class:`MethodOutput` (nothing, or a
    wrong shape): a defect of the method rather than a failure on one fold, so the runner stops
    (the CLI exits 2) instead of recording a failed cell. Non-finite values are an ordinary
    :class:`ValueError` (a failed cell)."""


@dataclass(frozen=True, eq=False)
class MethodOutput:
    """What a method returns for one fold: global scores, per-instance maps, or both.

    Attributes
    ----------
    scores : float ``input_shape`` or None, one importance per (permuted) input element; higher
        ``|score|`` = more important
    local : float ``(n_explain, *input_shape)`` or None, per-instance attributions of the
        explained examples (signed as the method gives them)
    scores_2k : float ``input_shape`` or None, a second global ranking that only metrics
        declaring ``reads_2k_ranking`` (``best_2k``) read. Set by the 2023 reproductions whose k
        and 2k selections came from separate runs (the paper's concrete autoencoder); None means
        those metrics read ``scores`` like every other.
    """

    scores: np.ndarray | None
    local: np.ndarray | None = None
    scores_2k: np.ndarray | None = None

    def validate(self, input_shape: tuple[int, ...] | int, n_explain: int) -> MethodOutput:
        """Return a float64 copy after checking shapes and finiteness.

        ``input_shape`` may be an int ``p`` for tables. Raises :class:`MethodOutputError` for
        missing output or a wrong shape, ValueError for NaN or infinite values.
        """
        shape = (int(input_shape),) if isinstance(input_shape, (int, np.integer)) else tuple(input_shape)
        if self.scores is None and self.local is None:
            raise MethodOutputError("method returned neither global scores nor local attributions")
        s = None if self.scores is None else _checked(self.scores, shape, "scores")
        s_2k = None if self.scores_2k is None else _checked(self.scores_2k, shape, "scores_2k")
        local = None if self.local is None else _checked(self.local, (int(n_explain), *shape), "local attributions")
        return MethodOutput(s, local, s_2k)


def _checked(values: np.ndarray, shape: tuple[int, ...], what: str) -> np.ndarray:
    s = np.asarray(values, dtype=np.float64)
    if s.shape != shape:
        raise MethodOutputError(f"method returned {what} of shape {s.shape}, expected {shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"method returned NaN or inf {what}")
    return s
