"""The :class:`Dataset` container and the generator registry.

Conventions shared by every generator
-------------------------------------
* ``X`` is float32 of shape ``(n_samples, n_features)``; ``y`` is int64 of shape ``(n_samples,)``.
* The relevant features come first in the columns; decoys follow. The evaluation protocol
  permutes columns per fold, so methods never see this order.
* ``relevant`` (bool, ``(n_features,)``) is the global ground truth: the features the label
  rule reads. ``relevant_local`` (bool, ``(n_samples, n_features)``) is the per-instance
  ground truth where the rule reads different features for different samples, else ``None``.
* Every random draw comes from ``numpy.random.default_rng(seed)`` created inside the generator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import os

import numpy as np

__all__ = ["Dataset", "GeneratorSpec", "DatasetTooLarge", "register", "make", "names", "describe", "estimate_bytes",
           "check_fits"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled table with known ground truth.

    Attributes
    ----------
    X : ndarray of float32, shape (n_samples, n_features)
    y : ndarray of int64, shape (n_samples,)
    relevant : ndarray of bool, shape (n_features,)
        Global ground truth; ``relevant.sum()`` is the ``k`` used by the scorer.
    relevant_local : ndarray of bool, shape (n_samples, n_features), or None
        Per-instance ground truth.
    name : str
    params : dict
        Every parameter that defines the data (including defaults), for provenance.
    seed : int
    """

    X: np.ndarray
    y: np.ndarray
    relevant: np.ndarray
    relevant_local: np.ndarray | None
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        n, p = self.X.shape
        if self.X.dtype != np.float32:
            raise TypeError(f"Dataset.X must be float32, got {self.X.dtype}")
        if self.y.dtype != np.int64 or self.y.shape != (n,):
            raise TypeError(f"Dataset.y must be int64 of shape ({n},), got {self.y.dtype} {self.y.shape}")
        if self.relevant.dtype != np.bool_ or self.relevant.shape != (p,):
            raise TypeError(f"Dataset.relevant must be bool of shape ({p},)")
        if self.relevant_local is not None and (
            self.relevant_local.dtype != np.bool_ or self.relevant_local.shape != (n, p)
        ):
            raise TypeError(f"Dataset.relevant_local must be bool of shape ({n}, {p}) or None")

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def k(self) -> int:
        """Number of globally relevant features."""
        return int(self.relevant.sum())


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator: ``fn(n_samples, n_decoys, rng, **params) -> Dataset fields``."""

    name: str
    fn: Callable[..., Dataset]
    description: str
    family: str


_REGISTRY: dict[str, GeneratorSpec] = {}


def register(name: str, *, description: str, family: str) -> Callable[[Callable[..., Dataset]], Callable[..., Dataset]]:
    """Decorator adding a generator to the registry under ``name``.

    The decorated function has the signature
    ``fn(*, n_samples: int, n_decoys: int, seed: int, **params) -> Dataset``.
    """

    def deco(fn: Callable[..., Dataset]) -> Callable[..., Dataset]:
        if name in _REGISTRY:
            raise ValueError(f"dataset {name!r} is already registered")
        _REGISTRY[name] = GeneratorSpec(name, fn, description, family)
        return fn

    return deco


def names() -> list[str]:
    """Names of every registered generator, in registration order."""
    return list(_REGISTRY)


def describe() -> dict[str, str]:
    """One-line description per registered generator."""
    return {n: s.description for n, s in _REGISTRY.items()}


def make(name: str, *, n_samples: int, n_decoys: int, seed: int, **params: Any) -> Dataset:
    """Generate dataset ``name`` with ``n_decoys`` decoy columns appended after the relevant ones.

    Raises
    ------
    KeyError
        Unknown name; the message lists the valid ones.
    ValueError
        ``n_samples < 1`` or ``n_decoys < 0``.
    DatasetTooLarge
        The data would not fit in the memory available now (see :func:`check_fits`); raised
        before anything is allocated.
    """
    if name not in _REGISTRY:
        raise KeyError(f"unknown dataset {name!r}; valid names: {', '.join(names())}")
    if int(n_samples) < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if int(n_decoys) < 0:
        raise ValueError(f"n_decoys must be >= 0, got {n_decoys}")
    check_fits(name, n_samples=n_samples, n_decoys=n_decoys, seed=seed, **params)
    return _REGISTRY[name].fn(n_samples=int(n_samples), n_decoys=int(n_decoys), seed=int(seed), **params)


class DatasetTooLarge(ValueError):
    """A dataset that cannot fit in the memory available; the message gives the estimate."""


#: Peak bytes per element of ``X`` while a generator runs: the float32 result plus up to three
#: float64 temporaries of the decoy block (latent draws, their transform, the correlated mix).
BYTES_PER_ELEMENT = 4 + 3 * 8
#: Below this many elements the estimate is not worth computing (about 0.5 GB at the peak).
_SMALL = 2 * 10**7


def _available_bytes() -> int | None:
    """Memory the kernel says is available now (``MemAvailable``), else the machine's physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def estimate_bytes(name: str, *, n_samples: int, n_decoys: int, seed: int = 0, **params: Any) -> int:
    """Estimated peak bytes of ``make(name, n_samples=..., n_decoys=..., **params)``.

    The feature count comes from generating 8 rows without decoys (so parameters that change it,
    and fixed-size sets like ``dag``, are counted right); the peak is ``n_samples × n_features ×``
    :data:`BYTES_PER_ELEMENT`, plus one byte per element for per-instance ground truth.
    """
    probe = _REGISTRY[name].fn(n_samples=8, n_decoys=0, seed=int(seed), **params)
    p = probe.n_features + int(n_decoys)
    per_element = BYTES_PER_ELEMENT + (1 if probe.relevant_local is not None else 0)
    return int(n_samples) * p * per_element


def check_fits(name: str, *, n_samples: int, n_decoys: int, seed: int = 0, **params: Any) -> None:
    """Raise :class:`DatasetTooLarge` when the dataset's estimated peak exceeds the memory available now.

    Cheap: grids of fewer than about 2·10^7 elements are not probed at all.
    """
    if int(n_samples) * (int(n_decoys) + 64) < _SMALL:
        return
    need = estimate_bytes(name, n_samples=n_samples, n_decoys=n_decoys, seed=seed, **params)
    have = _available_bytes()
    if have is not None and need > have:
        raise DatasetTooLarge(
            f"dataset {name!r} with n_samples={n_samples} and n_decoys={n_decoys} needs about {need / 2**30:.1f} GiB "
            f"while generated, and {have / 2**30:.1f} GiB of memory is available; use fewer samples or decoys")
