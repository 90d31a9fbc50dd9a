"""Image data sets read from local files: MNIST and Fashion-MNIST (IDX), CIFAR-10 (python pickles).

Nothing is downloaded. The files are looked for in the folder the caller names
(``datasets.make(name, ..., data_dir=PATH)``; ``python -m synthbench.run --data-dir PATH``, whose
default is the environment variable :data:`DATA_DIR_ENV`), first in a subfolder named after the
data set, then in the folder itself:

* ``mnist`` and ``fashion_mnist``: ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
  ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each gzipped (``.gz``) or not;
* ``cifar10``: ``cifar-10-batches-py/data_batch_1`` ... ``data_batch_5`` and ``test_batch``
  (the python version of the archive, unpacked).

The benchmark makes its own folds, so the training and test files are pooled; ``n_samples``
images are a seeded random subset. Pixels are scaled to ``[0, 1]``; images are ``(n, 1, 28, 28)``
or ``(n, 3, 32, 32)``. There is no ground truth (these sets serve remove-and-retrain). The
files' SHA-256 enters every cell id (:func:`fingerprint`), so results on different copies of
the data are never mixed.
"""

from __future__ import annotations

import gzip
import hashlib
import pickle
from functools import lru_cache
from pathlib import Path

import numpy as np

from synthbench.datasets.base import Dataset, register
from synthbench.defaults import DATA_DIR_ENV

__all__ = ["DATA_DIR_ENV", "MissingDataFiles", "read_idx", "data_files", "fingerprint"]

"""Environment variable the command lines read as their ``--data-dir`` default (the library never reads it)."""

_IDX = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_CIFAR = tuple(f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)) + ("cifar-10-batches-py/test_batch",)
_EXPECTED = {"mnist": _IDX, "fashion_mnist": _IDX, "cifar10": _CIFAR}


class MissingDataFiles(FileNotFoundError):
    """The files of a local image data set are not where they should be; the message names them."""


def _root(data_dir: str | Path | None) -> Path:
    if not data_dir:
        raise MissingDataFiles(
            f"name the folder holding the image files: --data-dir PATH (or set {DATA_DIR_ENV}); "
            "in Python, data_dir=PATH"
        )
    return Path(data_dir)


def data_files(name: str, data_dir: str | Path | None) -> list[Path]:
    """The files of data set ``name`` (``mnist``, ``fashion_mnist``, ``cifar10``) in ``data_dir``, in the order of
    :data:`_EXPECTED`.

    Raises
    ------
    MissingDataFiles
        Naming every expected file and the folders searched.
    """
    root = _root(data_dir)
    folders = [root / name, root]
    for folder in folders:
        found = []
        for stem in _EXPECTED[name]:
            candidates = [folder / stem, folder / f"{stem}.gz"] if name != "cifar10" else [folder / stem]
            match = next((c for c in candidates if c.is_file()), None)
            if match is None:
                break
            found.append(match)
        else:
            return found
    gz = " (each may be gzipped, .gz)" if name != "cifar10" else ""
    raise MissingDataFiles(f"{name}: expected {', '.join(_EXPECTED[name])}{gz} in {folders[0]} or {folders[1]}")


def _open(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX file (gzipped or not) as a numpy array of its declared shape (unsigned bytes only).

    Raises ValueError for a file that is not IDX of unsigned bytes, or whose length disagrees
    with its header.
    """
    path = Path(path)
    with _open(path) as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    if data[2] != 0x08:
        raise ValueError(f"{path}: only unsigned-byte IDX files are read (type code {data[2]:#x})")
    ndim = data[3]
    header = 4 + 4 * ndim
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    body = np.frombuffer(data, dtype=np.uint8, offset=header)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} ({int(np.prod(shape))} bytes) but holds {body.size}")
    return body.reshape(shape)


def _read_cifar(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    for path in paths:
        with path.open("rb") as f:
            batch = pickle.load(f, encoding="bytes")
        try:
            images.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            labels.append(np.asarray(batch[b"labels"], dtype=np.int64))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{path} is not a CIFAR-10 python batch ({exc})") from None
    return np.concatenate(images), np.concatenate(labels)


@lru_cache(maxsize=8)
def _digest(paths: tuple[str, ...], stamps: tuple[tuple[int, int], ...]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def fingerprint(name: str, data_dir: str | Path | None) -> str:
    """SHA-256 (16 hex digits) of the data set's files in ``data_dir``, cached by path, size and modification time."""
    paths = data_files(name, data_dir)
    stamps = tuple((p.stat().st_size, p.stat().st_mtime_ns) for p in paths)
    return _digest(tuple(str(p) for p in paths), stamps)


def _load(name: str, data_dir: str | Path | None) -> tuple[np.ndarray, np.ndarray]:
    paths = data_files(name, data_dir)
    if name == "cifar10":
        return _read_cifar(paths)
    train_x, train_y, test_x, test_y = (read_idx(p) for p in paths)
    images = np.concatenate([train_x, test_x])
    labels = np.concatenate([train_y, test_y]).astype(np.int64)
    if images.ndim != 3 or len(images) != len(labels):
        raise ValueError(f"{name}: images of shape {images.shape} do not match {len(labels)} labels")
    return images[:, None], labels


def _subset(name: str, n_samples: int, seed: int, data_dir: str | Path | None) -> Dataset:
    images, labels = _load(name, data_dir)
    if n_samples > len(labels):
        raise ValueError(f"{name} has {len(labels)} images; n_samples={n_samples} is too many")
    rows = np.random.default_rng(seed).permutation(len(labels))[:n_samples]
    X = images[rows].astype(np.float32) / 255.0
    return Dataset(X, labels[rows], None, None, name, {}, seed)


def _register(name: str, description: str) -> None:
    def generator(*, n_samples: int, seed: int, data_dir: str | Path | None = None) -> Dataset:
        return _subset(name, n_samples, seed, data_dir)

    generator.__name__ = name
    generator.__doc__ = f"{description}; see the module docstring."
    register(
        name,
        description=description,
        family="image files",
        kind="image",
        decoys=False,
        fingerprint=lambda data_dir: fingerprint(name, data_dir),
    )(generator)


_register("mnist", "MNIST from local IDX files (70,000 28x28 digits, 10 classes); no ground truth")
_register("fashion_mnist", "Fashion-MNIST from local IDX files (70,000 28x28 garments, 10 classes); no ground truth")
_register("cifar10", "CIFAR-10 from the local python batches (60,000 32x32 colour images, 10 classes); no ground truth")
