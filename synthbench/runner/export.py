"""A grid's export, and runs in parts: the tidy rows as a CSV file with the cells' arrays beside it, and an
earlier part's export carried into a store.

``python -m synthbench.run --export FILE`` writes :data:`EXPORT_COLUMNS` of every cell of its grid (one row per
cell and metric, :meth:`~synthbench.runner.store.ResultStore.scores`); gzip when the name ends in ``.gz``. Where
its cells recorded curves or per-example values (ROAD, the randomisation checks, fragility, meta-consistency:
what a study's reliability and meta-consistency read), it writes them beside it, in the compressed NumPy file
:func:`arrays_path` names (``part.csv.gz`` -> ``part.arrays.npz``). A run that is interrupted writes the cells it
has, so a suite too long for one sitting runs in parts on machines that keep nothing between them: each part ends
with its export (committed, say), and the next part starts from a fresh store seeded with it
(``--resume-from FILE``, :func:`carry_export`), computing only the cells the export lacks.

A carried cell keeps every exported column, curve point and per-example value exactly (floats are written and
read back to the last bit), so the next part's export is the union of both parts', and a report or study of the
last part's store is the one a single run's store gives. It has no example maps (the images a report draws), and
its model record keeps only the training seconds and the competence the export shows (under the first model kind
the cell needs). Its ``versions`` record says where it came from (``carried_from``: the export's file name).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from synthbench.runner.grid import Cell
from synthbench.runner.store import CellResult, ResultStore
from synthbench.scoring.base import Curve

__all__ = [
    "EXPORT_COLUMNS",
    "Export",
    "export_of",
    "arrays_path",
    "write_export",
    "read_export",
    "carry_export",
    "ExportError",
]

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


#: The curve points' columns (:meth:`~synthbench.runner.store.ResultStore.curves`) and their types in an export's
#: NumPy file, where each is the array ``cv_<column>``; per-example values are ``pe_cell``, ``pe_metric`` (one entry
#: per cell and metric), ``pe_n`` (its number of values) and ``pe_values`` (all of them, concatenated).
_CURVES = {"cell_id": str, "curve": str, "x": np.float64, "replicate": np.int64, "value": np.float64}


@dataclass(frozen=True)
class Export:
    """What an export holds: ``rows`` (:data:`EXPORT_COLUMNS`), ``per_example`` (``cell_id, metric, values``, as
    :meth:`~synthbench.runner.store.ResultStore.per_example` gives them) and ``curves`` (``cell_id, curve, x,
    replicate, value``, as :meth:`~synthbench.runner.store.ResultStore.curves` gives them)."""

    rows: pd.DataFrame
    per_example: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["cell_id", "metric", "values"]))
    curves: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(_CURVES)))


def export_of(store: ResultStore, cell_ids: Iterable[str]) -> Export:
    """The export of the cells ``cell_ids`` of ``store``."""
    ids = list(cell_ids)
    return Export(store.scores(ids), store.per_example(ids), store.curves(ids))


def arrays_path(path: Path) -> Path:
    """Where the export at ``path`` keeps its cells' arrays: its name without ``.csv`` or ``.csv.gz``, then
    ``.arrays.npz``."""
    name = path.name
    for suffix in (".csv.gz", ".csv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return path.with_name(f"{name}.arrays.npz")


def write_export(export: Export, path: Path) -> Path | None:
    """Write ``export``'s rows to ``path`` as :data:`EXPORT_COLUMNS`, and its per-example values and curves, when it
    has any, to :func:`arrays_path` (float32 values and float64 points, exactly as the store keeps them); return
    that file, or None (an arrays file left there by an earlier export is then removed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    export.rows.reindex(columns=EXPORT_COLUMNS).to_csv(path, index=False)
    arrays = arrays_path(path)
    if export.per_example.empty and export.curves.empty:
        arrays.unlink(missing_ok=True)
        return None
    pe, cv = export.per_example, export.curves
    values = [np.asarray(v, dtype="<f4") for v in pe["values"]]
    np.savez_compressed(
        arrays,
        pe_cell=pe["cell_id"].to_numpy(dtype=str),
        pe_metric=pe["metric"].to_numpy(dtype=str),
        pe_n=np.array([len(v) for v in values], dtype=np.int64),
        pe_values=np.concatenate(values) if values else np.zeros(0, dtype="<f4"),
        **{f"cv_{column}": cv[column].to_numpy(dtype=kind) for column, kind in _CURVES.items()},
    )
    return arrays


def read_export(path: Path) -> Export:
    """The export at ``path``: its rows, every float as it was written (pandas reads them back to the last bit),
    and the per-example values and curves of :func:`arrays_path` where that file exists (empty otherwise)."""
    try:
        rows = pd.read_csv(path, dtype={"message": "object", "flags": "object"})
    except (OSError, ValueError) as exc:
        raise ExportError(f"cannot read export {path}: {exc}") from exc
    missing = _NEEDED - set(rows.columns)
    if missing:
        raise ExportError(f"{path} is not a synthbench export: no column {', '.join(sorted(missing))}")
    arrays = arrays_path(path)
    if not arrays.exists():
        return Export(rows)
    try:
        with np.load(arrays, allow_pickle=False) as f:
            a = {name: f[name] for name in ("pe_cell", "pe_metric", "pe_n", "pe_values", *(f"cv_{c}" for c in _CURVES))}
    except (OSError, ValueError, KeyError) as exc:
        raise ExportError(f"cannot read the arrays of export {path} ({arrays.name}): {exc}") from exc
    per_example = pd.DataFrame(
        {
            "cell_id": a["pe_cell"],
            "metric": a["pe_metric"],
            "values": np.split(a["pe_values"].astype(np.float64), np.cumsum(a["pe_n"])[:-1]) if len(a["pe_n"]) else [],
        }
    )
    return Export(rows, per_example, pd.DataFrame({column: a[f"cv_{column}"] for column in _CURVES}))


def carry_export(store: ResultStore, export: Export, cells: Iterable[Cell], source: str) -> tuple[int, int]:
    """Write into ``store`` the finished cells of ``export`` (their rows, per-example values and curves) that belong
    to ``cells`` and that the store has not finished; return how many it wrote and how many finished cells of the
    export ``cells`` lack (a grid that is part of the exported one carries its own cells only).

    An export none of whose finished cells is among ``cells`` is refused (:class:`ExportError`): it comes from
    another grid, or from one whose cell ids have changed since (another package version), and a run that carried
    nothing from it would recompute everything without a word. ``source`` (the export's file name) is recorded as
    the cells' ``versions["carried_from"]``.
    """
    grid = {c.cell_id: c for c in cells}
    rows = export.rows
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
    per_example = dict(tuple(export.per_example.groupby("cell_id", sort=False)))
    curves = dict(tuple(export.curves.groupby("cell_id", sort=False)))
    written = 0
    for cell_id, own in finished[~finished["cell_id"].isin(done)].groupby("cell_id", sort=False):
        result = _result(grid[cell_id], own, source)
        if cell_id in per_example:
            own_values = per_example[cell_id]
            result.per_example.update(zip(own_values["metric"], own_values["values"]))
        if cell_id in curves:
            result.curves.update(_curves(curves[cell_id]))
        store.write(result)
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


def _curves(points: pd.DataFrame) -> dict[str, Curve]:
    """The curves of one cell's points (``curve, x, replicate, value``; a store keeps them as a set, so each
    curve's x comes out ascending)."""
    out = {}
    for name, own in points.groupby("curve", sort=False):
        xs, x_at = np.unique(own["x"].to_numpy(), return_inverse=True)
        values = np.full((len(xs), int(own["replicate"].max()) + 1), np.nan)
        values[x_at, own["replicate"].to_numpy()] = own["value"].to_numpy()
        out[str(name)] = Curve(xs, values)
    return out


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
