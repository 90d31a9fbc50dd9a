"""The results database: an embedded SQLite file, one row per cell and one per (cell, metric).

Every cell is written in a single transaction, so a run killed at any instant leaves only
whole cells behind; a rerun skips cells whose status is ``ok`` or ``skipped`` (the data exceed
a limit the method declares) and retries failed ones.

Its tables and their columns, and the upgrades of older stores: :mod:`synthbench.runner.schema`.

Several runs may share one store (two terminals, an array job). Creating and upgrading the file
happen under SQLite's write lock, so concurrent openers wait for each other. Before a run
computes a fold's cells it *claims* them in one transaction (:meth:`ResultStore.claim`): cells
finished or claimed by another live run are left to that run, so overlapping grids never compute
a cell twice. A claim ends when its cell is written or its run ends; a run that died leaves
claims that lapse: at once when its process is gone from this host, otherwise once its
heartbeat (:meth:`ResultStore.heartbeat`, refreshed by the running process) is older than the
claimant's ``stale_after``.

A run is one execution of a grid (one command): where it ran, how long, and how it ended
(``running`` until it ends; a run whose process was killed stays ``running`` with no end time).
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from synthbench.catalogue import Catalogue, ModelInfo, ScorerInfo, scorer_from_json, scorer_to_json
from synthbench.runner.schema import APPLICATION, SCHEMA, SCHEMA_VERSION, UPGRADES

if TYPE_CHECKING:  # the grid imports every registry; reading a store needs none
    from synthbench.runner.grid import Cell

__all__ = [
    "ResultStore",
    "StoreError",
    "CellResult",
    "SCHEMA_VERSION",
    "RUN_STATUSES",
    "STALE_AFTER_SECONDS",
    "plugin_of",
]

#: How a run ends (its status is ``running`` until then).
RUN_STATUSES = ("finished", "interrupted", "failed")

#: The seconds a cell spent training the shared models it needs: the sum of the ``train_seconds`` of each model
#: its ``model`` JSON records (SQLite's json_each; 0 when it records none).
_TRAIN_SECONDS = (
    "(SELECT total(json_extract(j.value, '$.train_seconds')) FROM json_each({table}.model) j) AS train_seconds"
)

#: The competence of the least competent model a cell needs (:mod:`synthbench.models.competence`), from its ``model``
#: JSON; null when it records none (a method that explains no model, data without a ceiling, an older cell).
_COMPETENCE = "(SELECT min(json_extract(j.value, '$.competence')) FROM json_each({table}.model) j) AS competence"

#: Default seconds after which a silent run's claims lapse (the running process refreshes its
#: heartbeat far more often; see :func:`synthbench.runner.execute.execute`).
STALE_AFTER_SECONDS = 600.0


class StoreError(Exception):
    """The store cannot be opened or written: missing, not a synthbench database, wrong schema, unwritable."""


@dataclass
class CellResult:
    """The outcome of one cell, as written to the store.

    ``status`` is ``ok``, ``failed`` or ``skipped``; ``invalid`` (a method broke its output
    contract) exists only between a worker and the runner, which raises instead of writing it.
    """

    cell: Cell
    status: str
    message: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    chance: dict[str, float] = field(default_factory=dict)
    seconds: float | None = None
    peak_memory_bytes: int | None = None
    n_features: int | None = None
    k: int | None = None
    model: dict[str, Any] | None = None
    permutation: list[int] | None = None
    versions: dict[str, str] | None = None
    flags: tuple[str, ...] = ()
    scorer_seconds: float | None = None
    examples: np.ndarray | None = None  # float32 (m, H, W): the first explained images' relevance maps
    curves: dict[str, Any] = field(default_factory=dict)  # name -> synthbench.scoring.Curve (x, values (m, R))
    input_shape: tuple[int, ...] | None = None  # the data's input shape: (p,) or (C, H, W)
    global_truth: bool | None = None  # the data have global ground truth (Dataset.relevant)
    masks: bool | None = None  # the data have per-instance ground truth (Dataset.relevant_local)
    per_example: dict[str, np.ndarray] = field(default_factory=dict)  # metric -> its value per explained example (n,)


class ResultStore:
    """A synthbench results database at ``path``.

    Parameters
    ----------
    path : path of the SQLite file
    create : create the file (and its folder) when it does not exist; otherwise a missing
        file is a :class:`StoreError`.
    readonly : open without ever writing the file (reports, notebooks); implies ``create=False``.
        Writes raise :class:`StoreError`.
    """

    def __init__(self, path: str | Path, *, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        exists = self.path.exists()
        if not exists and (readonly or not create):
            raise StoreError(f"store {self.path} does not exist")
        if exists and self.path.is_dir():
            raise StoreError(f"store path {self.path} is a directory, not a database file")
        if readonly:
            self._check_existing()
            try:
                self._con = self._open_readonly()
            except (OSError, sqlite3.Error) as exc:
                raise StoreError(f"cannot open store {self.path}: {exc}") from exc
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._con.execute("PRAGMA foreign_keys = ON")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot {'open' if exists else 'create'} store {self.path}: {exc}") from exc
        self._create_or_check(may_create=create)
        try:
            self._upgrade()
            self._describe_stored()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot upgrade store {self.path}: {exc}") from exc

    def _create_or_check(self, may_create: bool) -> None:
        """Under the write lock: create the schema in a file without tables, or check that it is a store.

        Two processes opening a new path at once both get here; the second waits for the
        first's transaction and then finds the schema in place.
        """
        try:
            with self._transaction():
                tables = {r[0] for r in self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not tables and may_create:
                    for stmt in SCHEMA:
                        self._con.execute(stmt)
                    self._con.executemany(
                        "INSERT INTO meta VALUES (?, ?)",
                        [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION))],
                    )
                    return
                meta = dict(self._con.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise StoreError(f"cannot open store {self.path}: {exc}") from exc
            raise StoreError(f"{self.path} is not a synthbench results database ({exc})") from None
        except OSError as exc:
            raise StoreError(f"cannot open store {self.path}: {exc}") from exc
        self._check_meta(meta)

    def _open_readonly(self) -> sqlite3.Connection:
        """The file opened read-only; an older schema is upgraded in an in-memory copy instead."""
        con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
        if con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION):
            return con
        memory = sqlite3.connect(":memory:", isolation_level=None)
        con.backup(memory)
        con.close()
        self._con = memory
        self._upgrade()
        memory.execute("PRAGMA query_only = ON")
        return memory

    def _check_existing(self) -> None:
        try:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            finally:
                con.close()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path} is not a synthbench results database ({exc})") from None
        self._check_meta(meta)

    def _check_meta(self, meta: dict[str, str]) -> None:
        if meta.get("application") != APPLICATION:
            raise StoreError(f"{self.path} is not a synthbench results database")
        if meta.get("schema_version") not in (str(SCHEMA_VERSION), *UPGRADES):
            raise StoreError(
                f"{self.path} has schema version {meta.get('schema_version')}, this synthbench reads {SCHEMA_VERSION}"
            )

    def _upgrade(self) -> None:
        """Bring an older schema up to :data:`SCHEMA_VERSION`, one step per transaction.

        The version is read inside each step's transaction, so a concurrent opener that
        upgraded first leaves nothing to do.
        """
        while True:
            self._con.execute("PRAGMA foreign_keys = OFF")
            try:
                with self._transaction():
                    version = self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
                    if version not in UPGRADES:
                        return
                    for stmt in UPGRADES[version]:
                        self._con.execute(stmt)
                    if self._con.execute("PRAGMA foreign_key_check").fetchall():
                        raise sqlite3.IntegrityError("scores without a cell after the upgrade")
                    self._con.execute(
                        "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(int(version) + 1),)
                    )
            finally:
                self._con.execute("PRAGMA foreign_keys = ON")

    def _describe_stored(self) -> None:
        """Record the datasets and methods of stored cells that the store does not describe yet (cells
        written before schema 7), the control flag of methods described before schema 8, the
        reference of those described before schema 9 and the scorers and model kinds of cells written
        before schema 10, for those this process has registered, so reports need no plugin."""
        from synthbench import datasets
        from synthbench.methods import METHODS

        missing = {
            table: [
                r[0]
                for r in self._con.execute(
                    f"SELECT DISTINCT {column} FROM cells WHERE {column} NOT IN (SELECT {column} FROM {table})"
                )
                if r[0] in registry
            ]
            for table, column, registry in (("datasets", "dataset", datasets.DATASETS), ("methods", "method", METHODS))
        }
        unflagged = [
            r[0] for r in self._con.execute("SELECT method FROM methods WHERE control IS NULL") if r[0] in METHODS
        ]
        uncited = [
            r[0] for r in self._con.execute("SELECT method FROM methods WHERE reference IS NULL") if r[0] in METHODS
        ]
        scorers = _registered_scorers(self._unrecorded("scorers"))
        models = _registered_models(self._unrecorded("models"))
        if not any(missing.values()) and not unflagged and not uncited and not scorers and not models:
            return
        with self._transaction():
            for name in missing["datasets"]:
                self._con.execute("INSERT OR IGNORE INTO datasets VALUES (?, ?, ?, ?, ?, ?)", _dataset_row(name))
            for name in missing["methods"]:
                self._con.execute("INSERT OR IGNORE INTO methods VALUES (?, ?, ?, ?, ?, ?, ?)", _method_row(name))
            self._con.executemany(
                "UPDATE methods SET control = ? WHERE method = ? AND control IS NULL",
                [(int(METHODS[name].control), name) for name in unflagged],
            )
            self._con.executemany(
                "UPDATE methods SET reference = ? WHERE method = ? AND reference IS NULL",
                [(METHODS[name].reference, name) for name in uncited],
            )
            self._con.executemany(
                "INSERT OR IGNORE INTO scorers VALUES (?, ?, ?, ?)", map(_scorer_row, scorers.values())
            )
            self._con.executemany("INSERT OR IGNORE INTO models VALUES (?, ?, ?, ?)", map(_model_row, models.values()))

    def _unrecorded(self, table: str) -> list[str]:
        """The scorers (``table="scorers"``) or model kinds (``"models"``) of stored cells that ``table`` lacks."""
        used = (
            "SELECT DISTINCT scorer FROM cells"
            if table == "scorers"
            else "SELECT DISTINCT j.key FROM cells, json_each(cells.model) j WHERE json_valid(cells.model)"
        )
        column = table[:-1] if table == "scorers" else "model"
        return [r[0] for r in self._con.execute(f"{used} EXCEPT SELECT {column} FROM {table}")]

    def catalogue(self) -> Catalogue:
        """What the scorers of the store's cells and the model kinds they record are (:mod:`synthbench.catalogue`),
        as the store records them. Those of cells written before schema 10 that the store does not record (an old
        store opened read-only) are taken from this process's registries, which are then imported; a scorer or
        model kind neither knows is absent."""
        scorers = {r[0]: scorer_from_json(*r) for r in self._con.execute("SELECT * FROM scorers")}
        models = {
            r[0]: ModelInfo(r[0], bool(r[1]), r[2] or "", r[3]) for r in self._con.execute("SELECT * FROM models")
        }
        scorers.update(_registered_scorers(self._unrecorded("scorers")))
        models.update(_registered_models(self._unrecorded("models")))
        return Catalogue(scorers, models)

    def _transaction(self):
        return _Transaction(self._con)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finished(self, cell_ids: Iterable[str]) -> set[str]:
        """Those of ``cell_ids`` already stored with status ``ok`` or ``skipped`` (over a method's declared limit)."""
        ids = list(cell_ids)
        done: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            q = f"SELECT cell_id FROM cells WHERE status IN ('ok', 'skipped') AND cell_id IN ({marks})"
            done.update(r[0] for r in self._con.execute(q, chunk))
        return done

    def start_run(
        self,
        *,
        command: str | None,
        executor: dict[str, Any] | None,
        machine: dict[str, Any] | None,
        package_version: str,
        cells_total: int,
        cells_pending: int,
        scorers: Iterable[str] = (),
    ) -> int:
        """Record the start of a run (status ``running``) and return its ``run_id``; the run's ``scorers`` are
        described as this process registers them (their metrics and abilities), so a store's description of a
        scorer is its latest run's even where that run computes no cell."""
        row = (
            _now(),
            "running",
            command,
            _json(executor),
            _json(machine),
            package_version,
            cells_total,
            cells_pending,
            socket.gethostname(),
            os.getpid(),
            time.time(),
        )
        described = _registered_scorers(scorers).values()
        try:
            with self._transaction():
                self._con.executemany("INSERT OR REPLACE INTO scorers VALUES (?, ?, ?, ?)", map(_scorer_row, described))
                cur = self._con.execute(
                    "INSERT INTO runs (started_at, status, command, executor, machine, package_version, cells_total,"
                    " cells_pending, host, pid, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to store {self.path}: {exc}") from exc
        return int(cur.lastrowid or 0)  # a row was inserted: its id

    def finish_run(self, run_id: int, *, status: str, wall_seconds: float, ok: int, failed: int, skipped: int) -> None:
        """Record how run ``run_id`` ended (``status`` is one of :data:`RUN_STATUSES`) and drop its claims."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
        try:
            with self._transaction():
                self._con.execute("DELETE FROM claims WHERE run_id = ?", (run_id,))
                self._con.execute(
                    "UPDATE runs SET finished_at = ?, status = ?, wall_seconds = ?, cells_ok = ?, cells_failed = ?,"
                    " cells_skipped = ? WHERE run_id = ?",
                    (_now(), status, wall_seconds, ok, failed, skipped, run_id),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to store {self.path}: {exc}") from exc

    def write(self, result: CellResult, run_id: int | None = None) -> None:
        """Store one cell and its scores atomically (as part of run ``run_id``), replacing any earlier row of that
        cell."""
        c = result.cell
        config = c.config()
        row = (
            c.cell_id,
            c.dataset,
            json.dumps(dict(c.dataset_params), sort_keys=True),
            c.n_samples,
            c.n_decoys,
            result.n_features,
            result.k,
            c.method,
            json.dumps(c.method_params, sort_keys=True),
            c.fold,
            c.n_folds,
            c.seed,
            c.explain,
            c.scorer,
            result.status,
            result.message,
            ",".join(result.flags),
            result.seconds,
            result.peak_memory_bytes,
            _json(result.model),
            _json(result.permutation),
            _json(result.versions),
            config["version"],
            _now(),
            *(c.suite or (None, None)),
            run_id,
            c.model,
            result.scorer_seconds,
            _json(config.get("scorer_params")),
            None if result.input_shape is None else json.dumps([int(d) for d in result.input_shape]),
            _flag(result.global_truth),
            _flag(result.masks),
            c.judged,
            c.judged_model,
        )
        described = (_dataset_row(c.dataset), _method_row(c.method))
        scorer, models = _registered_scorers([c.scorer]).values(), _registered_models(result.model or {}).values()
        try:
            with self._transaction():
                self._con.execute("INSERT OR REPLACE INTO datasets VALUES (?, ?, ?, ?, ?, ?)", described[0])
                self._con.execute("INSERT OR REPLACE INTO methods VALUES (?, ?, ?, ?, ?, ?, ?)", described[1])
                self._con.executemany("INSERT OR REPLACE INTO scorers VALUES (?, ?, ?, ?)", map(_scorer_row, scorer))
                self._con.executemany("INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?)", map(_model_row, models))
                self._con.execute("DELETE FROM claims WHERE cell_id = ?", (c.cell_id,))
                self._con.execute("DELETE FROM cells WHERE cell_id = ?", (c.cell_id,))
                self._con.execute(f"INSERT INTO cells VALUES ({','.join('?' * len(row))})", row)
                self._con.executemany(
                    "INSERT INTO scores VALUES (?, ?, ?, ?)",
                    [(c.cell_id, m, _finite_or_none(v), result.chance.get(m)) for m, v in result.scores.items()],
                )
                self._con.executemany(
                    "INSERT INTO curves VALUES (?, ?, ?, ?, ?)",
                    [
                        (c.cell_id, name, float(x), r, _finite_or_none(float(v)))
                        for name, curve in result.curves.items()
                        for x, row in zip(curve.x, curve.values)
                        for r, v in enumerate(row)
                    ],
                )
                self._con.executemany(
                    "INSERT INTO per_example VALUES (?, ?, ?, ?)",
                    [
                        (c.cell_id, name, len(values), np.ascontiguousarray(values, dtype="<f4").tobytes())
                        for name, values in result.per_example.items()
                    ],
                )
                if result.examples is not None:
                    maps = np.ascontiguousarray(result.examples, dtype=np.float32)
                    self._con.execute(
                        "INSERT INTO examples VALUES (?, ?, ?)",
                        (c.cell_id, json.dumps(list(maps.shape)), maps.tobytes()),
                    )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to store {self.path}: {exc}") from exc

    def claim(
        self, cells: Sequence[Cell], run_id: int, *, force: bool = False, stale_after: float = STALE_AFTER_SECONDS
    ) -> tuple[list[Cell], list[Cell], list[Cell]]:
        """Claim ``cells`` for run ``run_id`` before computing them, in one transaction.

        Parameters
        ----------
        cells : the cells about to be computed
        run_id : the claiming run (from :meth:`start_run`)
        force : claim finished cells too (they will be recomputed)
        stale_after : seconds of heartbeat silence after which another run's claim lapses

        Returns
        -------
        claimed, finished, busy : lists of cells
            ``claimed`` now belong to this run; ``finished`` were stored with status ``ok`` or
            ``skipped`` meanwhile (never with ``force``); ``busy`` are claimed by another run that
            is alive (a run on this host whose process exists, or one on another host whose
            heartbeat is younger than ``stale_after``). Lapsed claims are taken over.
        """
        by_id = {c.cell_id: c for c in cells}
        ids = list(by_id)
        now, host = time.time(), socket.gethostname()
        try:
            with self._transaction():
                done = set() if force else self.finished(ids)
                holders: dict[str, tuple[Any, ...]] = {}  # cell id -> (run, status, host, pid, heartbeat)
                for i in range(0, len(ids), 500):
                    chunk = ids[i : i + 500]
                    holders.update(
                        (r[0], r[1:])
                        for r in self._con.execute(
                            "SELECT k.cell_id, k.run_id, r.status, r.host, r.pid, r.heartbeat_at FROM claims k"
                            " LEFT JOIN runs r ON r.run_id = k.run_id"
                            f" WHERE k.cell_id IN ({','.join('?' * len(chunk))})",
                            chunk,
                        )
                    )
                busy = {
                    cid
                    for cid, (holder, status, h, pid, beat) in holders.items()
                    if holder != run_id and _alive(status, h, pid, beat, host, now, stale_after)
                }
                claimed = [cid for cid in ids if cid not in done and cid not in busy]
                self._con.executemany(
                    "INSERT OR REPLACE INTO claims VALUES (?, ?, ?)", [(cid, run_id, now) for cid in claimed]
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to store {self.path}: {exc}") from exc
        return ([by_id[c] for c in claimed], [by_id[c] for c in ids if c in done], [by_id[c] for c in ids if c in busy])

    def heartbeat(self, run_id: int) -> None:
        """Mark run ``run_id`` alive now; safe from any thread (it uses a connection of its own)."""
        try:
            con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            try:
                con.execute("UPDATE runs SET heartbeat_at = ? WHERE run_id = ?", (time.time(), run_id))
            finally:
                con.close()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to store {self.path}: {exc}") from exc

    def runs(self) -> pd.DataFrame:
        """One row per run, oldest first; ``last_cell_at`` is when its last cell was stored.

        ``executor`` and ``machine`` are JSON text (engine and its settings; host, platform, CPU,
        memory, GPUs, Python and torch versions).
        """
        return pd.read_sql_query(
            "SELECT r.*, (SELECT MAX(c.finished_at) FROM cells c WHERE c.run_id = r.run_id) AS last_cell_at"
            " FROM runs r ORDER BY r.run_id",
            self._con,
        )

    def cells(self, cell_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """One row per stored cell (all, or those of ``cell_ids``): its columns, then ``train_seconds``
        (the part of ``seconds`` spent training the shared models the method needs, once per fold and shared
        with every cell of the fold that needs them: the sum of the ``train_seconds`` its ``model`` records;
        0 for a method that needs no model), so ``seconds - train_seconds`` is the method's own time, and
        ``competence`` (of the least competent model the cell needs, :mod:`synthbench.models.competence`; null
        when unknown)."""
        return self._query(
            f"SELECT *, {_TRAIN_SECONDS.format(table='cells')}, {_COMPETENCE.format(table='cells')} FROM cells",
            cell_ids,
        )

    def scores(self, cell_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Tidy rows, one per cell and metric, with the cell's configuration and status.

        Columns: cell_id, dataset, dataset_params (JSON text), n_samples, n_decoys (null without
        decoys), n_features, k, method, model_preset (the preset of the model the method explains,
        or null), judged (the model kind a control was judged on beside the default, or null),
        judged_model (the model kind the scorer measured, or null), control (bool: the method is a
        control, as the store records it or, for methods it does not flag, as registered here),
        explain, scorer, scorer_params, fold, seed, metric, value, chance, seconds (the method's, with the
        training of the shared models it needs), train_seconds (that training, as in :meth:`cells`), competence (as in
        :meth:`cells`), scorer_seconds, peak_memory_bytes, status, message, flags (comma-separated), suite,
        suite_hash, run_id. Failed cells appear once with a null
        metric, so they are never silently missing. Rows of different scorers, explain modes,
        presets, judged models or dataset parameters are different results: group by them before averaging.
        """
        sql = (
            "SELECT c.cell_id, c.dataset, c.dataset_params, c.n_samples, c.n_decoys, c.n_features, c.k, c.method,"
            " c.model_preset, c.judged, c.judged_model, m.control, c.explain, c.scorer, c.scorer_params, c.fold,"
            " c.seed,"
            f" s.metric, s.value, s.chance, c.seconds, {_TRAIN_SECONDS.format(table='c')},"
            f" {_COMPETENCE.format(table='c')}, c.scorer_seconds,"
            " c.peak_memory_bytes, c.status, c.message, c.flags, c.suite, c.suite_hash, c.run_id"
            " FROM cells c LEFT JOIN scores s ON s.cell_id = c.cell_id LEFT JOIN methods m ON m.method = c.method"
        )
        rows = self._query(sql, cell_ids, alias="c.")
        control = rows["control"].astype("boolean")
        if control.isna().any():  # methods the store does not flag (an old store opened read-only)
            from synthbench.methods import METHODS

            control = control.fillna(rows["method"].map(lambda name: name in METHODS and METHODS[name].control))
        return rows.assign(control=control.astype(bool))

    def curves(self, cell_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Tidy curve points, one per cell, curve, x and replicate (all cells, or those of ``cell_ids``).

        Columns: cell_id, curve, x, replicate, value; join on ``cell_id`` with :meth:`scores` or
        :meth:`cells` for the configuration.
        """
        return self._query("SELECT cell_id, curve, x, replicate, value FROM curves", cell_ids)

    def per_example(self, cell_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Each metric's value per explained example, one row per cell and metric (all cells, or those of
        ``cell_ids``): columns ``cell_id, metric, values`` (``values`` a float64 array ``(n,)``, the examples in
        the fold's explain order); empty for scorers that record none and for cells written before schema 11."""
        rows = self._query("SELECT cell_id, metric, n, data FROM per_example", cell_ids)
        values = [np.frombuffer(b, dtype="<f4", count=n).astype(np.float64) for n, b in zip(rows["n"], rows["data"])]
        return rows.drop(columns=["n", "data"]).assign(values=values)

    def datasets(self) -> pd.DataFrame:
        """One row per dataset the store describes: ``dataset, kind`` (``tabular``, ``image``), ``decoys``
        (whether it takes decoys), ``family``, ``description``, ``plugin`` (what ``--plugin`` must name to
        register it again; null for synthbench's own). Datasets of cells written before schema 7 that no
        process with them registered has opened the store for writing since are absent."""
        frame = pd.read_sql_query("SELECT * FROM datasets ORDER BY dataset", self._con)
        return frame.assign(decoys=frame["decoys"].astype(bool))

    def methods(self) -> pd.DataFrame:
        """One row per method the store describes: ``method, family`` (what report figures group by),
        ``description``, ``inputs`` (JSON list of input kinds), ``plugin`` (as for :meth:`datasets`),
        ``control`` (1 for a control, 0 otherwise; null for rows written before schema 8) and
        ``reference`` (the publication or software the method follows, :attr:`MethodSpec.reference
        <synthbench.methods.registry.MethodSpec.reference>`; '' when its plugin gives none; null for rows
        written before schema 9 in a store not opened for writing since by a process that registers the
        method, such as an old store opened read-only)."""
        return pd.read_sql_query("SELECT * FROM methods ORDER BY method", self._con)

    def examples(self, cell_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored example maps (float32 ``(m, H, W)``) of those of ``cell_ids`` that have them."""
        ids = list(cell_ids)
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            q = f"SELECT cell_id, shape, maps FROM examples WHERE cell_id IN ({','.join('?' * len(chunk))})"
            for cid, shape, blob in self._con.execute(q, chunk):
                out[cid] = np.frombuffer(blob, dtype=np.float32).reshape(json.loads(shape))
        return out

    def _query(self, sql: str, cell_ids: Iterable[str] | None, alias: str = "") -> pd.DataFrame:
        if cell_ids is None:
            return pd.read_sql_query(sql, self._con)
        ids = list(cell_ids)
        frames = [
            pd.read_sql_query(
                f"{sql} WHERE {alias}cell_id IN ({','.join('?' * len(ids[i : i + 500]))})",
                self._con,
                params=ids[i : i + 500],
            )
            for i in range(0, len(ids), 500)
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.read_sql_query(sql + " WHERE 0", self._con)


class _Transaction:
    def __init__(self, con: sqlite3.Connection) -> None:
        self._con = con

    def __enter__(self) -> None:
        self._con.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self._con.execute("COMMIT")
        elif self._con.in_transaction:  # SQLite has already rolled back after some errors (a full disk)
            self._con.execute("ROLLBACK")


def _alive(
    status: str | None,
    host: str | None,
    pid: int | None,
    heartbeat: float | None,
    this_host: str,
    now: float,
    stale_after: float,
) -> bool:
    """Whether a claim's run may still be computing its cell."""
    if status != "running" or heartbeat is None or now - heartbeat > stale_after:
        return False
    if host == this_host and pid is not None:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _json(obj: Any) -> str | None:
    return None if obj is None else json.dumps(obj, sort_keys=True)


def _finite_or_none(v: float) -> float | None:
    return None if v is None or v != v else float(v)


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(bool(value))


def _dataset_row(name: str) -> tuple:
    """The ``datasets`` row of the registered dataset ``name``."""
    from synthbench import datasets

    spec = datasets.spec(name)
    return name, spec.kind, int(spec.decoys), spec.family, spec.description, plugin_of(spec.fn)


def _method_row(name: str) -> tuple:
    """The ``methods`` row of the registered method ``name``."""
    from synthbench.methods import METHODS

    spec = METHODS[name]
    return (
        name,
        spec.family,
        spec.description,
        json.dumps(list(spec.inputs)),
        plugin_of(spec.fn),
        int(spec.control),
        spec.reference,
    )


def _registered_scorers(names: Iterable[str]) -> dict[str, ScorerInfo]:
    """What this process has registered of the scorers ``names`` (those it has not are left out); imports the
    scorers' registry only when there is a name to look up."""
    names = list(names)
    if not names:
        return {}
    from synthbench.scoring import SCORERS

    return {
        n: ScorerInfo(n, SCORERS[n].metrics, SCORERS[n].abilities, plugin_of(SCORERS[n])) for n in names if n in SCORERS
    }


def _registered_models(names: Iterable[str]) -> dict[str, ModelInfo]:
    """What this process has registered of the model kinds ``names``, as :func:`_registered_scorers`."""
    names = list(names)
    if not names:
        return {}
    from synthbench.models import kinds, model_kind

    known = set(kinds())
    return {
        n: ModelInfo(n, model_kind(n).uses_preset, model_kind(n).description, plugin_of(model_kind(n).train))
        for n in names
        if n in known
    }


def _scorer_row(info: ScorerInfo) -> tuple:
    return info.name, *scorer_to_json(info), info.plugin


def _model_row(info: ModelInfo) -> tuple:
    return info.name, int(info.uses_preset), info.description, info.plugin


def plugin_of(obj: Any) -> str | None:
    """What ``--plugin`` must name to register ``obj`` (a registered function) again.

    None for synthbench's own components and for those defined in a script or an interactive
    session (``__main__``: importing it again would run it again); the module's name when Python
    finds it by that name on its path (``mypackage.plugin``); otherwise the absolute path of the
    file that defines it (a plugin given as ``--plugin ./mine.py``).
    """
    obj = getattr(obj, "func", obj)  # functools.partial
    name = getattr(obj, "__module__", None) or ""
    if name in ("", "__main__", "synthbench") or name.startswith("synthbench."):
        return None
    module = sys.modules.get(name)
    if module is None:  # code run without a module (exec): nothing to import
        return None
    path = getattr(module, "__file__", None)
    if path is None or "." in name:
        return name
    found = importlib.machinery.PathFinder.find_spec(name)
    if found is not None and found.origin and Path(found.origin).resolve() == Path(path).resolve():
        return name
    return str(Path(path).resolve())
