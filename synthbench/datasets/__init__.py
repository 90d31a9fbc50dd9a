"""Synthetic datasets with known ground truth.

Use :func:`make` with a registered name (see :func:`names` / :func:`describe`)::

    from synthbench.datasets import make
    ds = make("ring", n_samples=1000, n_decoys=50, seed=0)

Families (one module each; importing this package registers them all):

* :mod:`~synthbench.datasets.tables.nonlinear` -- ``ring``, ``xor``, ``ring_xor``, ``ring_xor_sum``
  (Passemiers et al. 2023);
* :mod:`~synthbench.datasets.tables.dag` -- ``dag``, ``dag_confounders`` (same benchmark's causal set);
* :mod:`~synthbench.datasets.tables.l2x` -- ``l2x_xor``, ``orange_skin``, ``nonlinear_additive``,
  ``switch`` (L2X / INVASE, with per-instance ground truth);
* :mod:`~synthbench.datasets.tables.hypercube` -- ``hypercube`` (Madelon-style);
* :mod:`~synthbench.datasets.images` -- ``shapes``, ``shapes_xor`` (synthetic images with signal
  masks among distractor glyphs) and ``digits`` (scikit-learn's 8x8 digits);
* :mod:`~synthbench.datasets.files` -- ``mnist``, ``fashion_mnist``, ``cifar10`` from local files.

Every tabular generator accepts ``n_decoys`` (0 allowed) and ``decoy_correlation`` in ``[0, 1)``;
see :mod:`~synthbench.datasets.tables.decoys`. The synthetic images take ``n_decoys`` distractor glyphs.
"""

from . import tables, images, files  # noqa: F401  (imported to register the generators: tables, images, image files)
from .base import (
    DATASETS,
    KINDS,
    Dataset,
    DatasetTooLarge,
    GeneratorSpec,
    check_fits,
    describe,
    estimate_bytes,
    input_kind,
    make,
    names,
    register,
    spec,
)

__all__ = [
    "Dataset",
    "DatasetTooLarge",
    "GeneratorSpec",
    "KINDS",
    "DATASETS",
    "input_kind",
    "make",
    "spec",
    "names",
    "describe",
    "register",
    "estimate_bytes",
    "check_fits",
]
