"""A graded ladder of maps whose order is known by construction: one method's maps blended with a seeded random map.

Each rung ``<base>_noise<pct>`` is the base method's local map with a share ``random_share = pct / 100`` of a random
map mixed in: per explained row, both maps scaled to unit L2 norm, then ``(1 - share) * base + share * random``
(``share`` 0, 0.25, 0.5 and 0.75; the ``random`` control is the top rung, all noise). The random map is standard
normal, ``(n_explain, p)``, drawn from the fold's ``("method", "ladder", base)`` stream: the same for every rung of a
base on a fold, so the rungs differ only by the share. Less noise is more faithful to the model and closer to the
truth, so the rungs' order is known: how often a verdict orders them so is its ladder score
(:func:`synthbench.report.study.verdicts.verdict_ladder`), a validity that does not depend on how far apart the real
methods happen to be.

Bases: ``integrated_gradients`` on the network, ``gbm_treeshap`` and ``gbm_full_treeshap`` on the boosters. The global
score of a rung is the mean absolute value of its map over the explained rows. Reports tell a rung by the
``random_share`` parameter its cells record.
"""

from __future__ import annotations

import numpy as np

from synthbench.catalogue import RUNG_PARAM
from synthbench.methods.registry import get_method, register_method, run_method
from synthbench.models import SharedModels
from synthbench.protocol import FoldData, MethodOutput

__all__ = ["LADDER_BASES", "LADDER_SHARES", "RUNG_PARAM", "ladder_rung", "rung_name"]

#: The base method of each model's ladder: model kind -> method.
LADDER_BASES = {"mlp": "integrated_gradients", "gbm": "gbm_treeshap", "gbm_full": "gbm_full_treeshap"}

#: The random shares of the registered rungs (the ``random`` control is the rung at 1).
LADDER_SHARES = (0.0, 0.25, 0.5, 0.75)


def rung_name(base: str, share: float) -> str:
    """The registered name of ``base``'s rung at ``share``: ``integrated_gradients_noise25``."""
    return f"{base}_noise{round(100 * share)}"


def _unit_rows(maps: np.ndarray) -> np.ndarray:
    """Each row of ``maps`` ``(n, p)`` divided by its L2 norm (a row of zeros stays zeros)."""
    norms = np.linalg.norm(maps, axis=1, keepdims=True)
    return np.divide(maps, norms, out=np.zeros_like(maps), where=norms > 0)


def ladder_rung(
    data: FoldData, models: SharedModels, rng: np.random.Generator, *, base: str, random_share: float
) -> MethodOutput:
    """``base``'s maps on the explained rows blended with the fold's random map at ``random_share``, ``(n_explain,
    p)``, signed; score = mean |map| over the rows."""
    if not 0.0 <= random_share < 1.0:
        raise ValueError(f"random_share must be in [0, 1), got {random_share}")
    found = run_method(get_method(base), data, models)
    if found.local is None:
        raise ValueError(f"the ladder's base {base!r} gives no map per explained row")
    local = np.asarray(found.local, dtype=np.float64).reshape(len(found.local), -1)
    noise = data.rng("method", "ladder", base).standard_normal(local.shape)
    blended = (1.0 - random_share) * _unit_rows(local) + random_share * _unit_rows(noise)
    blended = blended.reshape(np.shape(found.local))
    return MethodOutput(np.abs(blended).mean(axis=0), blended)


for _kind, _base in LADDER_BASES.items():
    _spec = get_method(_base)
    for _share in LADDER_SHARES:
        register_method(
            rung_name(_base, _share),
            description=f"ladder rung: {_base}'s maps with {round(100 * _share)} % of a seeded random map "
            "(rows at unit norm); the order of the rungs is known",
            reference="synthbench's ladder of known order; base: " + _spec.reference,
            needs={"tabular": (_kind,)},
            default=False,
            params={"base": _base, RUNG_PARAM: _share},
            maps=True,
        )(ladder_rung)
