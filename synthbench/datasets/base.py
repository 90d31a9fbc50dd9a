"""The :class:`Dataset` container and the generator registry.

Conventions shared by every generator
-------------------------------------
* ``X`` is float32 of shape ``(n_samples, *input_shape)``: ``(n, p)`` for tables (kind
  ``"tabular"``), ``(n, C, H, W)`` for images (kind ``"image"``); ``y`` is int64 of shape
  ``(n_samples,)``, class labels ``0..K-1``.
* Tables: the relevant features come first in the columns; decoys follow. The evaluation protocol
  permutes columns per fold (a transform of the tabular kind), so methods never see this order.
  Images are not permuted: their generators place the signal at random positions.
* ``relevant`` (bool, ``input_shape``) is the global ground truth, the input elements the label
  rule reads, or ``None`` when there is none (images whose signal moves). ``relevant_local``
  (bool, ``(n_samples, *input_shape)``) is the per-instance truth (an image's mask of signal
  pixels) where the rule reads different elements for different samples, else ``None``.
* A generator that takes decoys (tables: decoy columns; images: distractor patches) declares it
  (``register(..., decoys=True)``) and receives ``n_decoys``; others have no decoy axis.
* Every random draw comes from ``numpy.random.default_rng(seed)`` created inside the generator.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from synthbench.kinds import INPUT_KINDS, KINDS
from synthbench.registry import Registry

__all__ = [
    "Dataset",
    "GeneratorSpec",
    "DatasetTooLarge",
    "KINDS",
    "DATASETS",
    "input_kind",
    "register",
    "spec",
    "make",
    "names",
    "describe",
    "estimate_bytes",
    "check_fits",
]


def input_kind(X: np.ndarray) -> str:
    """The input kind of a batch ``X`` by its dimensions (:attr:`InputKind.ndim`: ``"tabular"`` for 2-D inputs,
    ``"image"`` for 4-D ``(n, C, H, W)``); ValueError otherwise."""
    for kind in INPUT_KINDS.values():
        if X.ndim == kind.ndim:
            return kind.name
    raise ValueError(f"inputs must be (n, p) tables or (n, C, H, W) images, got shape {X.shape}")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled data set with known ground truth.

    Attributes
    ----------
    X : ndarray of float32, shape (n_samples, *input_shape)
    y : ndarray of int64, shape (n_samples,), labels ``0..K-1``
    relevant : ndarray of bool, shape input_shape, or None
        Global ground truth; ``relevant.sum()`` is the ``k`` used by the scorer.
    relevant_local : ndarray of bool, shape (n_samples, *input_shape), or None
        Per-instance ground truth (an image's signal mask).
    name : str
    params : dict
        Every parameter that defines the data (including defaults), for provenance.
    seed : int
    bayes : ndarray of float64, shape (n_samples,), or None
        Where the label rule makes it computable: for each row, the probability that the Bayes
        classifier (which knows the rule and sees the inputs) names the row's label correctly,
        ``max_c P(y = c | x)`` (1 for a noiseless rule). Its mean over rows is their Bayes accuracy.
    """

    X: np.ndarray
    y: np.ndarray
    relevant: np.ndarray | None
    relevant_local: np.ndarray | None
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    bayes: np.ndarray | None = None

    def __post_init__(self) -> None:
        input_kind(self.X)
        n, shape = self.X.shape[0], tuple(self.X.shape[1:])
        if self.X.dtype != np.float32:
            raise TypeError(f"Dataset.X must be float32, got {self.X.dtype}")
        if self.y.dtype != np.int64 or self.y.shape != (n,):
            raise TypeError(f"Dataset.y must be int64 of shape ({n},), got {self.y.dtype} {self.y.shape}")
        if self.relevant is not None and (self.relevant.dtype != np.bool_ or self.relevant.shape != shape):
            raise TypeError(f"Dataset.relevant must be bool of shape {shape} or None")
        if self.relevant_local is not None and (
            self.relevant_local.dtype != np.bool_ or self.relevant_local.shape != (n, *shape)
        ):
            raise TypeError(f"Dataset.relevant_local must be bool of shape {(n, *shape)} or None")
        if self.bayes is not None and (self.bayes.shape != (n,) or not np.all((self.bayes >= 0) & (self.bayes <= 1))):
            raise TypeError(f"Dataset.bayes must be probabilities of shape ({n},) or None")

    @property
    def kind(self) -> str:
        """``"tabular"`` or ``"image"`` (:func:`input_kind`)."""
        return input_kind(self.X)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.X.shape[1:])

    @property
    def n_features(self) -> int:
        """Input elements per sample: columns of a table, ``C * H * W`` of an image."""
        return int(np.prod(self.input_shape))

    @property
    def n_classes(self) -> int:
        """``K``, one more than the largest label (at least 2)."""
        return max(2, int(self.y.max()) + 1 if self.n_samples else 2)

    @property
    def k(self) -> int | None:
        """Number of globally relevant features (None without global truth)."""
        return None if self.relevant is None else int(self.relevant.sum())


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator: ``fn(*, n_samples, seed, [n_decoys,] **params) -> Dataset``.

    ``kind`` is the input kind of its data (:data:`KINDS`); ``decoys`` whether it takes
    ``n_decoys`` (decoy columns, distractor patches); ``fingerprint(data_dir)``, for data read
    from files in the folder ``data_dir``, a digest of their content that enters every cell id
    (None: generated data). A generator with a fingerprint :attr:`reads_files`: it is called with
    ``data_dir=`` too.
    """

    name: str
    fn: Callable[..., Dataset]
    description: str
    family: str
    kind: str = "tabular"
    decoys: bool = True
    fingerprint: Callable[[str | None], str] | None = None

    @property
    def reads_files(self) -> bool:
        """Its data are read from files in a folder the caller names (``make(..., data_dir=...)``)."""
        return self.fingerprint is not None


#: Every registered generator, by name.
DATASETS: Registry[GeneratorSpec] = Registry("dataset")


def register(
    name: str,
    *,
    description: str,
    family: str,
    kind: str = "tabular",
    decoys: bool = True,
    fingerprint: Callable[[str | None], str] | None = None,
) -> Callable[[Callable[..., Dataset]], Callable[..., Dataset]]:
    """Decorator adding a generator to the registry under ``name``.

    The decorated function has the signature
    ``fn(*, n_samples: int, n_decoys: int, seed: int, **params) -> Dataset`` (without
    ``n_decoys`` when ``decoys=False``, with ``data_dir`` when it has a ``fingerprint``); ``kind``
    is the input kind of its data; ``fingerprint`` see :class:`GeneratorSpec`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def deco(fn: Callable[..., Dataset]) -> Callable[..., Dataset]:
        DATASETS.add(name, GeneratorSpec(name, fn, description, family, kind, decoys, fingerprint))
        return fn

    return deco


def spec(name: str) -> GeneratorSpec:
    """The registered generator ``name``; the KeyError lists the valid names."""
    return DATASETS[name]


def names() -> list[str]:
    """Names of every registered generator, in registration order."""
    return DATASETS.names()


def describe() -> dict[str, str]:
    """One-line description per registered generator."""
    return {n: s.description for n, s in DATASETS.items()}


def make(
    name: str, *, n_samples: int, seed: int, n_decoys: int | None = None, data_dir: str | None = None, **params: Any
) -> Dataset:
    """Generate dataset ``name``.

    Parameters
    ----------
    n_samples, seed
        Sample count and the seed of every random draw.
    n_decoys
        For generators that take decoys: decoy columns appended after the relevant ones (tables)
        or distractor glyphs (images); None means the generator's default (0 for tables). Refused
        by generators without decoys.
    data_dir
        The folder of data sets read from files (:attr:`GeneratorSpec.reads_files`); ignored by
        generated ones. Not a parameter of the data: the files' content is (their fingerprint).
    **params
        The generator's own parameters.

    Raises
    ------
    KeyError
        Unknown name; the message lists the valid ones.
    ValueError
        ``n_samples < 1``, ``n_decoys < 0``, or ``n_decoys`` for a generator without decoys.
    DatasetTooLarge
        The data would not fit in the memory available now (see :func:`check_fits`); raised
        before anything is allocated.
    """
    gen = spec(name)
    if int(n_samples) < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if n_decoys is not None and not gen.decoys:
        raise ValueError(f"dataset {name!r} has no decoys; leave n_decoys out")
    if gen.reads_files:
        params = {**params, "data_dir": data_dir}
    if not gen.decoys:
        return gen.fn(n_samples=int(n_samples), seed=int(seed), **params)
    n_decoys = default_decoys(name) if n_decoys is None else int(n_decoys)
    if n_decoys < 0:
        raise ValueError(f"n_decoys must be >= 0, got {n_decoys}")
    check_fits(name, n_samples=n_samples, n_decoys=n_decoys, seed=seed, **params)
    return gen.fn(n_samples=int(n_samples), n_decoys=n_decoys, seed=int(seed), **params)


def default_decoys(name: str) -> int:
    """The decoy count generator ``name`` makes when given none: its own default, else 0."""
    import inspect

    default = inspect.signature(spec(name).fn).parameters.get("n_decoys")
    return 0 if default is None or default.default is inspect.Parameter.empty else int(default.default)


class DatasetTooLarge(ValueError):
    """A dataset that cannot fit in the memory available; the message gives the estimate."""


#: Peak bytes per element of ``X`` while a generator runs: the float32 result plus up to three
#: float64 temporaries of the decoy block (latent draws, their transform, the correlated mix).
BYTES_PER_ELEMENT = 4 + 3 * 8
#: The same for synthetic images (kind ``"image"``): the float32 images, the float64 draw of their
#: pixel noise and its float32 copy (``shapes`` measured 16.5 bytes with its mask).
IMAGE_BYTES_PER_ELEMENT = 4 + 8 + 4
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


def _peak_bytes(probe: Dataset, n_samples: int, n_decoys: int) -> int:
    """The peak of generating ``n_samples`` like ``probe``: its input elements times the bytes each
    costs while generated, plus one byte per element for per-instance ground truth."""
    local = 1 if probe.relevant_local is not None else 0
    if probe.kind == "tabular":  # the probe has no decoys: each adds a column
        return int(n_samples) * (probe.n_features + int(n_decoys)) * (BYTES_PER_ELEMENT + local)
    return int(n_samples) * probe.n_features * (IMAGE_BYTES_PER_ELEMENT + local)  # distractors are drawn inside


def estimate_bytes(name: str, *, n_samples: int, n_decoys: int, seed: int = 0, **params: Any) -> int:
    """Estimated peak bytes of ``make(name, n_samples=..., n_decoys=..., **params)``.

    The feature count comes from generating a few samples (tables: 8 rows without decoys, so
    parameters that change it, and fixed-size sets like ``dag``, are counted right; images: two
    images with their distractors); the peak is ``n_samples × n_features ×``
    :data:`BYTES_PER_ELEMENT` for tables, :data:`IMAGE_BYTES_PER_ELEMENT` for images, plus one
    byte per element for per-instance ground truth.
    """
    gen = spec(name)
    if gen.kind == "tabular":
        probe = gen.fn(n_samples=8, n_decoys=0, seed=int(seed), **params)
    else:
        decoys = {"n_decoys": int(n_decoys)} if gen.decoys else {}
        probe = gen.fn(n_samples=2, seed=int(seed), **decoys, **params)
    return _peak_bytes(probe, n_samples, n_decoys)


def check_fits(name: str, *, n_samples: int, n_decoys: int | None, seed: int = 0, **params: Any) -> None:
    """Raise :class:`DatasetTooLarge` when the data's estimated peak exceeds the memory available now.

    Cheap: tables of fewer than about 2·10^7 elements are not probed at all. Synthetic images
    are checked by generating two of them, so bad parameters (more distractors than an image
    holds) raise their ValueError here, and their size comes from them. Image sets without
    decoys (``digits``, files) hold only the images they have, and are not checked.
    """
    gen = spec(name)
    if gen.kind != "tabular":
        if not gen.decoys:
            return
        n_decoys = default_decoys(name) if n_decoys is None else int(n_decoys)
        probe = gen.fn(n_samples=2, n_decoys=n_decoys, seed=int(seed), **params)
        if int(n_samples) * probe.n_features < _SMALL:
            return
        _refuse_over(
            name,
            _peak_bytes(probe, n_samples, n_decoys),
            n_samples,
            n_decoys,
            "use fewer samples (distractors do not change an image's size)",
        )
        return
    if n_decoys is None or int(n_samples) * (int(n_decoys) + 64) < _SMALL:
        return
    need = estimate_bytes(name, n_samples=n_samples, n_decoys=n_decoys, seed=seed, **params)
    _refuse_over(name, need, n_samples, n_decoys, "use fewer samples or decoys")


def _refuse_over(name: str, need: int, n_samples: int, n_decoys: int, advice: str) -> None:
    have = _available_bytes()
    if have is not None and need > have:
        raise DatasetTooLarge(
            f"dataset {name!r} with n_samples={n_samples} and n_decoys={n_decoys} needs about {need / 2**30:.1f} GiB "
            f"while generated, and {have / 2**30:.1f} GiB of memory is available; {advice}"
        )
