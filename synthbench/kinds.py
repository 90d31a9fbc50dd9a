"""Input kinds: what a data set's examples are, one registered entry each (tables, images).

Everything that differs between kinds lives in its entry, read through :func:`get_kind`: the
shape of the inputs, whether the protocol permutes their columns, what the decoy axis counts,
the run's default decoy counts, the model a scorer judges a method on when the method explains
none, the ground truth's headline metric, what a map is, and the small data the check battery
(:mod:`synthbench.testing`) runs components on. The module imports only the
registry, so the command line reads the defaults before anything heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synthbench.registry import Registry

__all__ = ["InputKind", "INPUT_KINDS", "register_kind", "get_kind", "KINDS"]


@dataclass(frozen=True)
class InputKind:
    """One kind of input.

    Attributes
    ----------
    name : the name datasets, methods and metrics declare (``"tabular"``, ``"image"``)
    plural : what a run calls a set of them (``"tables"``)
    ndim : the dimensions of a batch of inputs: 2 for ``(n, p)``, 4 for ``(n, C, H, W)``
    permuted : the protocol permutes the columns anew for each fold (tables: a method cannot lean on a position)
    decoy : what the decoy axis counts (decoy columns; distractor glyphs)
    default_decoys : the decoy counts of ``python -m synthbench.run`` without ``--decoys``
    default_model : the model kind a scorer judges a method on when the method explains none
    headline_metric : the ground truth's leaderboard metric
    map : what one example's map is
    check_dataset : the data set the check battery runs components of this kind on
    check_params : its parameters there (``n_samples``, ``n_decoys``, ``seed`` and the generator's own), as pairs
    """

    name: str
    plural: str
    ndim: int
    permuted: bool
    decoy: str
    default_decoys: str
    default_model: str
    headline_metric: str
    map: str
    check_dataset: str
    check_params: tuple[tuple[str, Any], ...]


#: Every input kind, by name, in registration order.
INPUT_KINDS: Registry[InputKind] = Registry("input kind")


def register_kind(kind: InputKind) -> InputKind:
    """Add ``kind`` under its name (ValueError when the name is taken)."""
    return INPUT_KINDS.add(kind.name, kind)


def get_kind(name: str) -> InputKind:
    """The input kind ``name``; the KeyError lists the valid names."""
    return INPUT_KINDS[name]


register_kind(
    InputKind(
        name="tabular",
        plural="tables",
        ndim=2,
        permuted=True,
        decoy="decoy",
        default_decoys="100,1000",
        default_model="mlp",
        headline_metric="best_k",
        map="one score per column (p,)",
        check_dataset="xor",
        check_params=(("n_samples", 240), ("n_decoys", 6), ("seed", 1)),
    )
)
register_kind(
    InputKind(
        name="image",
        plural="images",
        ndim=4,
        permuted=False,
        decoy="distractor",
        default_decoys="0,4",
        default_model="cnn",
        headline_metric="rank_accuracy",
        map="a relevance per channel and pixel (C, H, W)",
        check_dataset="shapes",
        check_params=(("n_samples", 96), ("n_decoys", 2), ("seed", 1), ("size", 16)),
    )
)

#: The names of the built-in input kinds, in registration order.
KINDS = tuple(INPUT_KINDS.names())
