"""A grid's export, and runs in parts: the tidy rows as a CSV file, and an earlier part's export carried into a store.

``python -m synthbench.run --export FILE`` writes :data:`EXPORT_COLUMNS` of every cell of its grid (one row per
cell and metric, :meth:`~synthbench.runner.store.ResultStore.scores`); gzip when the name ends in ``.gz``. A run
that is interrupted writes the cells it has, so a suite too long for one sitting runs in parts on machines that
keep nothing between them: each part ends with its export (committed, say), and the next part starts from a fresh
store seeded with it (``--resume-from FILE``, :func:`carry_export`), computing only the cells the export lacks.

An export holds the tidy rows and nothing else: a carried cell keeps every exported column exactly (floats are
written and read back to the last bit), so the next part's export is the union of both parts' rows, but it has no
curves, per-example values or example maps, and its model record keeps only the training seconds and the competence
the export shows (under the first model kind the cell needs). Its ``versions`` record says where it came from
(``carried_from``: the export's file name).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from synthbench.runner.grid import Cell
from synthbench.runner.store import CellResult, ResultStore

__all__ = ["EXPORT_COLUMNS", "write_export", "read_export", "carry_export", "ExportError"]

log = logging.getLogger(__name__)

#: The columns of an export, in order (:meth:`~synthbench.runner.store.ResultStore.scores` but the run id).
EXPORT_COLUMNS = [
    "dataset",
    "dataset_params",
    "n_samples",
    "n_decoys",
    "n_features",
    "k",
    "method",
    "model_preset",
    "judged",
    "judged_model",
    "control",
    "explain",
    "scorer",
    "scorer_params",
    "fold",
    "seed",
    "metric",
    "value",
    "chance",
    "seconds",
    "train_seconds",
    "competence",
    "scorer_seconds",
    "peak_memory_bytes",
    "status",
    "message",
    "flags",
    "suite",
    "suite_hash",
    "cell_id",
]

#: What a carried cell needs of its rows (the rest of its record comes from the grid's cell of the same id).
_NEEDED = {"cell_id", "metric", "value", "chance", "status", "seconds", "train_seconds", "competence"}

#: Statuses a carried cell may have: finished ones (a failed cell is computed again).
_FINISHED = ("ok", "skipped")


class ExportError(Exception):
    """An export cannot be read or carried: missing, not an export, or made by another version of the grid."""


def write_export(rows: pd.DataFrame, path: Path) -> None:
    """Write ``rows`` (:meth:`~synthbench.runner.store.ResultStore.scores`) to ``path`` as :data:`EXPORT_COLUMNS`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows.reindex(columns=EXPORT_COLUMNS).to_csv(path, index=False)


def read_export(path: Path) -> pd.DataFrame:
    """The rows of the export at ``path``, every float as it was written (pandas reads them back to the last bit)."""
    try:
        rows = pd.read_csv(path, dtype={"message": "object", "flags": "object"})
    except (OSError, ValueError) as exc:
        raise ExportError(f"cannot read export {path}: {exc}") from exc
    missing = _NEEDED - set(rows.columns)
    if missing:
        raise ExportError(f"{path} is not a synthbench export: no column {', '.join(sorted(missing))}")
    return rows


def carry_export(store: ResultStore, rows: pd.DataFrame, cells: Iterable[Cell], source: str) -> tuple[int, int]:
    """Write into ``store`` the finished cells of an export's ``rows`` that belong to ``cells`` and that the store
    has not finished; return how many it wrote and how many finished cells of the export ``cells`` lack (a grid
    that is part of the exported one carries its own cells only).

    An export none of whose finished cells is among ``cells`` is refused (:class:`ExportError`): it comes from
    another grid, or from one whose cell ids have changed since (another package version), and a run that carried
    nothing from it would recompute everything without a word. ``source`` (the export's file name) is recorded as
    the cells' ``versions["carried_from"]``.
    """
    grid = {c.cell_id: c for c in cells}
    finished = rows[rows["status"].isin(_FINISHED)]
    ours = finished["cell_id"].isin(grid.keys())
    foreign = finished.loc[~ours, "cell_id"].nunique()
    if len(finished) and not ours.any():
        raise ExportError(
            f"none of the {foreign} finished cells of {source} is a cell of this grid: it was exported from "
            "another grid, or from one whose cell ids have changed since (another package version)"
        )
    finished = finished[ours]
    done = store.finished(finished["cell_id"].unique())
    written = 0
    for cell_id, own in finished[~finished["cell_id"].isin(done)].groupby("cell_id", sort=False):
        store.write(_result(grid[cell_id], own, source))
        written += 1
    log.info(
        "carried %d cells of %s into %s (%d there already, %d not of this grid)",
        written,
        source,
        store.path,
        len(done),
        foreign,
    )
    return written, int(foreign)


def _result(cell: Cell, rows: pd.DataFrame, source: str) -> CellResult:
    """The :class:`CellResult` whose stored rows are ``rows`` (one cell's rows of an export)."""
    first = rows.iloc[0]
    scored = rows[rows["metric"].notna()]
    chance = scored[scored["chance"].notna()]
    return CellResult(
        cell,
        str(first["status"]),
        _number(first.get("message"), str),
        scores=dict(zip(scored["metric"], scored["value"].astype(float))),
        chance=dict(zip(chance["metric"], chance["chance"].astype(float))),
        seconds=_number(first["seconds"], float),
        peak_memory_bytes=_number(first.get("peak_memory_bytes"), int),
        n_features=_number(first.get("n_features"), int),
        k=_number(first.get("k"), int),
        model=_model(cell, first),
        versions={"carried_from": source},
        flags=tuple(f for f in (_number(first.get("flags"), str) or "").split(",") if f),
        scorer_seconds=_number(first.get("scorer_seconds"), float),
    )


def _model(cell: Cell, row: pd.Series) -> dict[str, Any] | None:
    """A model record whose training seconds and competence are the row's (what the store's columns sum and take
    the minimum of), under the first model kind the cell needs; None when the row has neither."""
    train, competence = _number(row["train_seconds"], float), _number(row["competence"], float)
    if not train and competence is None:
        return None
    kind = cell.needs[0] if cell.needs else "model"
    return {kind: {"train_seconds": train or 0.0, "competence": competence, "carried": True}}


def _number(value: Any, kind: type) -> Any:
    """``kind(value)``, None for an empty field (None or NaN, as a CSV reads it back)."""
    return None if value is None or pd.isna(value) else kind(value)
