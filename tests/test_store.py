"""The SQLite results store: round trip, atomic replacement, refusal of foreign files."""

import dataclasses
import hashlib
import json
import sqlite3
import sys

import numpy as np
import pandas as pd
import pytest

from synthbench.runner.grid import Cell, GridSpec
from synthbench.runner.store import SCHEMA_VERSION, CellResult, ResultStore, StoreError


def cell(fold=0, method="random"):
    return Cell("xor", 100, 3, 0, 2, fold, method)


def result(c, status="ok", value=0.5):
    return CellResult(
        c,
        status,
        None if status == "ok" else "boom",
        {"best_k": value, "auroc": float("nan")},
        {"best_k": 0.4},
        1.5,
        1000,
        n_features=5,
        k=2,
        permutation=[1, 0, 2, 3, 4],
    )


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_round_trip_and_finished(tmp_path):
    with ResultStore(tmp_path / "sub" / "r.sqlite") as store:
        a, b, c = cell(0), cell(1), cell(0, "rf")
        store.write(result(a))
        store.write(result(b, "failed"))
        assert store.finished([a.cell_id, b.cell_id, c.cell_id]) == {a.cell_id}
        rows = store.scores([a.cell_id, b.cell_id])
        ok = rows[rows.cell_id == a.cell_id].set_index("metric")
        assert ok.loc["best_k", "value"] == 0.5 and ok.loc["best_k", "chance"] == 0.4
        assert ok.loc["auroc", "value"] != ok.loc["auroc", "value"]  # NaN stored as NULL
        assert store.cells().set_index("cell_id").loc[a.cell_id, "permutation"] == "[1, 0, 2, 3, 4]"


def test_rewriting_a_cell_replaces_it(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        c = cell()
        store.write(result(c, "failed"))
        store.write(result(c, "ok", 1.0))
        assert len(store.cells()) == 1
        rows = store.scores()
        assert rows.loc[rows.metric == "best_k", "value"].tolist() == [1.0]


def test_reopening_keeps_results(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        store.write(result(cell()))
    with ResultStore(path, create=False) as store:
        assert store.finished([cell().cell_id]) == {cell().cell_id}


def test_foreign_files_are_refused_untouched(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database\n")
    before = digest(text)
    with pytest.raises(StoreError, match="not a synthbench results database"):
        ResultStore(text)
    assert digest(text) == before

    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = digest(other)
    with pytest.raises(StoreError, match="not a synthbench"):
        ResultStore(other)
    assert digest(other) == before


def test_other_schema_version_is_refused(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultStore(path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="schema version 99"):
        ResultStore(path)


def test_missing_and_unwritable_paths(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        ResultStore(tmp_path / "missing.sqlite", create=False)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create"):
        ResultStore(blocker / "r.sqlite")
    with pytest.raises(StoreError, match="directory"):
        ResultStore(tmp_path)


def test_cell_ids_depend_on_every_setting():
    base = cell()
    variants = [
        Cell("xor", 101, 3, 0, 2, 0, "random"),
        Cell("xor", 100, 4, 0, 2, 0, "random"),
        Cell("xor", 100, 3, 1, 2, 0, "random"),
        Cell("xor", 100, 3, 0, 3, 0, "random"),
        Cell("xor", 100, 3, 0, 2, 1, "random"),
        Cell("xor", 100, 3, 0, 2, 0, "rf"),
        Cell("ring", 100, 3, 0, 2, 0, "random"),
        Cell("xor", 100, 3, 0, 2, 0, "random", "train"),
    ]
    ids = {v.cell_id for v in variants}
    assert len(ids) == len(variants) and base.cell_id not in ids
    assert base.cell_id == cell().cell_id


def test_grid_groups_cells_by_fold_and_by_the_models_they_need():
    grid = GridSpec(("xor", "ring"), ("random", "rf", "mi", "treeshap", "saliency"), (0, 5), n_samples=50, n_folds=3)
    cells = grid.cells()
    tasks = GridSpec.tasks(cells)
    assert len(cells) == 2 * 2 * 3 * 5 and len(tasks) == 2 * 2 * 3 * 3
    assert sorted({tuple(c.method for c in t.cells) for t in tasks}) == [
        ("random", "mi"),
        ("rf", "treeshap"),
        ("saliency",),
    ]
    assert all(len({c.task_key for c in t.cells}) == 1 for t in tasks)


def test_tasks_run_fold_by_fold_within_blocks_of_settings():
    grid = GridSpec(("xor", "ring"), ("random",), (0, 5, 9), n_samples=50, n_folds=3)
    cells = grid.cells()
    settings = list(dict.fromkeys(c.setting_key for c in cells))  # the grid's order: xor/0, xor/5, ..., ring/9
    assert len(settings) == 6

    def order(tasks):
        return [(settings.index(t.head.setting_key), t.head.fold) for t in tasks]

    everything = [(s, f) for f in range(3) for s in range(6)]  # fold 0 of every setting first
    assert order(GridSpec.tasks(cells)) == everything
    blocks = [(s, f) for b in (0, 4) for f in range(3) for s in range(b, min(b + 4, 6))]
    assert order(GridSpec.tasks(cells, block=4)) == blocks  # settings 0-3 whole, then 4-5
    assert order(GridSpec.tasks(cells[::-1], block=4))[:4] == [(5, 0), (4, 0), (3, 0), (2, 0)]  # the cells' order
    with pytest.raises(ValueError, match="block must be at least 1"):
        GridSpec.tasks(cells, block=0)


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('application', 'synthbench'), ('schema_version', '1');
CREATE TABLE cells (
    cell_id TEXT PRIMARY KEY, dataset TEXT NOT NULL, dataset_params TEXT NOT NULL,
    n_samples INTEGER NOT NULL, n_decoys INTEGER NOT NULL, n_features INTEGER, k INTEGER,
    method TEXT NOT NULL, method_params TEXT NOT NULL, fold INTEGER NOT NULL, n_folds INTEGER NOT NULL,
    seed INTEGER NOT NULL, explain TEXT NOT NULL, scorer TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')), message TEXT, flags TEXT NOT NULL DEFAULT '',
    seconds REAL, peak_memory_bytes INTEGER, model TEXT, permutation TEXT, versions TEXT,
    package_version TEXT NOT NULL, finished_at TEXT NOT NULL
);
CREATE TABLE scores (
    cell_id TEXT NOT NULL REFERENCES cells(cell_id) ON DELETE CASCADE,
    metric TEXT NOT NULL, value REAL, chance REAL, PRIMARY KEY (cell_id, metric)
);
CREATE INDEX cells_grid ON cells(dataset, n_decoys, method);
"""


def _v1_store(path, source):
    """A schema-1 store at ``path`` holding the cells of the current store ``source``."""
    con = sqlite3.connect(path)
    con.executescript(V1_SCHEMA)
    con.execute("ATTACH ? AS new", (str(source),))
    con.execute(
        "INSERT INTO cells SELECT cell_id, dataset, dataset_params, n_samples, n_decoys, n_features, k, method,"
        " method_params, fold, n_folds, seed, explain, scorer, status, message, flags, seconds,"
        " peak_memory_bytes, model, permutation, versions, package_version, finished_at FROM new.cells"
    )
    con.execute("INSERT INTO scores SELECT * FROM new.scores")
    con.commit()
    con.close()


def test_a_version_1_store_is_upgraded_in_place_and_keeps_its_cells(tmp_path):
    new, old = tmp_path / "new.sqlite", tmp_path / "old.sqlite"
    with ResultStore(new) as store:
        store.write(result(cell()))
    _v1_store(old, new)  # what synthbench wrote before suites: schema 1, same cell
    with ResultStore(old) as store:
        assert store.finished([cell().cell_id]) == {cell().cell_id}
        assert len(store.scores()) == 2  # the upgrade kept the cell's scores
        suited = Cell("xor", 100, 3, 0, 2, 1, "random", suite=("s", "abc"))
        store.write(result(suited))
        store.write(CellResult(cell(2), "skipped", "over the limit"))
        cells = store.cells().set_index("cell_id")
        assert cells.loc[suited.cell_id, ["suite", "suite_hash"]].tolist() == ["s", "abc"]
        assert store.finished([cell(2).cell_id]) == {cell(2).cell_id}
    con = sqlite3.connect(old)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("DELETE FROM cells WHERE cell_id = ?", (cell().cell_id,))  # the cascade survived the rebuild
    assert con.execute("SELECT count(*) FROM scores WHERE cell_id = ?", (cell().cell_id,)).fetchone()[0] == 0


def test_a_full_disk_stops_the_run_with_a_clear_error_and_keeps_finished_cells(tmp_path):
    from synthbench.runner.execute import execute

    path = tmp_path / "r.sqlite"
    cells = GridSpec(("xor",), ("random", "anova"), tuple(range(12)), n_samples=60, n_folds=2).cells()
    with ResultStore(path) as store:
        pages = store._con.execute("PRAGMA page_count").fetchone()[0]
        store._con.execute(f"PRAGMA max_page_count = {pages + 3}")  # SQLite's own "database or disk is full"
        with pytest.raises(StoreError, match="cannot write to store .*database or disk is full"):
            execute(cells, store)
    with ResultStore(path, create=False) as store:
        kept = store.cells()
        assert 0 < len(kept) < len(cells)
        scores = store.scores()
        assert (scores.groupby("cell_id").size() == scores.groupby("cell_id").size().max()).all()  # whole cells only
        assert store.finished(c.cell_id for c in cells) == set(kept.cell_id)


def test_read_only_opening_never_writes_the_file_and_reads_an_old_schema_through_a_private_copy(tmp_path):
    new, old = tmp_path / "new.sqlite", tmp_path / "old.sqlite"
    with ResultStore(new) as store:
        store.write(result(cell()))
    _v1_store(old, new)
    before = old.read_bytes()
    with ResultStore(old, readonly=True) as store:
        assert len(store.scores()) == 2 and store.scores()["run_id"].isna().all()
        assert store.runs().empty
        with pytest.raises(StoreError, match="cannot write"):
            store.write(result(cell(2)))
    with ResultStore(new, readonly=True) as store:
        with pytest.raises(StoreError, match="cannot write"):
            store.write(result(cell(2)))
    assert old.read_bytes() == before
    with pytest.raises(StoreError, match="does not exist"):
        ResultStore(tmp_path / "missing.sqlite", readonly=True)
    assert not (tmp_path / "missing.sqlite").exists()


def test_each_execution_is_recorded_as_a_run_with_its_machine_wall_time_and_outcome(tmp_path):
    from synthbench.runner.execute import execute

    cells = GridSpec(("xor",), ("random", "anova"), (0, 3), n_samples=60, n_folds=2).cells()
    with ResultStore(tmp_path / "r.sqlite") as store:
        first = execute(cells[:4], store, command="python -m synthbench.run --x")

        def stop(_result):
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            execute(cells, store, on_cell=stop)
        runs = store.runs().set_index("run_id")
        stored = store.cells().set_index("cell_id")
    assert runs.loc[first.run_id, ["status", "command", "cells_total", "cells_pending", "cells_ok"]].tolist() == [
        "finished",
        "python -m synthbench.run --x",
        4,
        4,
        4,
    ]
    assert runs.loc[first.run_id, "wall_seconds"] == pytest.approx(first.wall_seconds)
    machine = json.loads(runs.loc[first.run_id, "machine"])
    assert machine["cores"] >= 1 and machine["python"] and isinstance(machine["gpus"], list)
    assert json.loads(runs.loc[first.run_id, "executor"])["name"] == "serial"
    second = runs.index[-1]
    assert runs.loc[second, ["status", "cells_total", "cells_pending", "cells_ok"]].tolist() == [
        "interrupted",
        len(cells),
        len(cells) - 4,
        1,
    ]
    assert (stored.loc[[c.cell_id for c in cells[:4]], "run_id"] == first.run_id).all()
    assert (stored["run_id"] == second).sum() == 1


def test_neural_methods_get_one_cell_per_preset_and_the_preset_enters_the_id_and_the_task():
    grid = GridSpec(
        ("xor",), ("rf", "saliency", "deeplift"), (3,), n_samples=60, n_folds=2, models=("passemiers2023", "sparse_mlp")
    )
    cells = grid.cells()
    assert sorted((c.method, c.model) for c in cells if c.fold == 0) == [
        ("deeplift", "passemiers2023"),
        ("deeplift", "sparse_mlp"),
        ("rf", None),
        ("saliency", "passemiers2023"),
        ("saliency", "sparse_mlp"),
    ]
    assert len({c.cell_id for c in cells}) == len(cells)
    assert [c.label for c in cells[:3]] == ["rf", "saliency@passemiers2023", "saliency@sparse_mlp"]
    tasks = GridSpec.tasks(cells)
    assert all(len({c.model for c in t.cells}) == 1 for t in tasks)  # one preset's MLP per task
    # A method that needs no MLP keeps its id whatever the presets.
    alone = GridSpec(("xor",), ("rf",), (3,), n_samples=60, n_folds=2).cells()
    assert {c.cell_id for c in alone} == {c.cell_id for c in cells if c.method == "rf"}
    with pytest.raises(KeyError, match="unknown model preset .nope.; valid names: passemiers2023"):
        GridSpec(("xor",), ("saliency",), (3,), models=("nope",)).cells()


def _version(path) -> str:
    return sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]


def _as_schema(path, version: int, undo, *statements: str) -> None:
    """Make the store at ``path`` look as schema ``version`` wrote it: ``undo(con)``, then ``statements``."""
    con = sqlite3.connect(path)
    undo(con)
    for statement in statements:
        con.execute(statement)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    con.commit()
    con.close()


def _drop_per_example(con: sqlite3.Connection) -> None:
    """Undo schema 11: no per-example values."""
    con.execute("DROP TABLE per_example")


def _drop_catalogue(con: sqlite3.Connection) -> None:
    """Undo schemas 11 and 10: no per-example values, no scorers or models tables."""
    _drop_per_example(con)
    con.execute("DROP TABLE scorers")
    con.execute("DROP TABLE models")


def _drop_references(con: sqlite3.Connection) -> None:
    """Undo schemas 11 to 9: no reference on methods."""
    _drop_catalogue(con)
    con.execute("ALTER TABLE methods DROP COLUMN reference")


def _drop_judged(con: sqlite3.Connection) -> None:
    """Undo schemas 11 to 8: no judged columns on cells, no control flag or reference on methods."""
    _drop_references(con)
    for column in ("judged", "judged_model"):
        con.execute(f"ALTER TABLE cells DROP COLUMN {column}")
    con.execute("ALTER TABLE methods DROP COLUMN control")


def _drop_descriptions(con: sqlite3.Connection) -> None:
    """Undo schemas 11 to 7: no datasets or methods tables, no data columns on cells."""
    _drop_judged(con)
    con.execute("DROP TABLE datasets")
    con.execute("DROP TABLE methods")
    for column in ("input_shape", "global_truth", "masks"):
        con.execute(f"ALTER TABLE cells DROP COLUMN {column}")


def test_a_version_6_store_gains_the_descriptions_keeps_its_cell_ids_and_resumes_without_recomputing(tmp_path):
    from synthbench.runner.execute import execute

    path = tmp_path / "v6.sqlite"
    cells = GridSpec(("xor",), ("random", "anova"), (2,), n_samples=40, n_folds=2).cells()
    with ResultStore(path) as store:
        execute(cells, store)
        before = store.scores().sort_values(["cell_id", "metric"]).reset_index(drop=True)
    _as_schema(path, 6, _drop_descriptions)
    with ResultStore(path, readonly=True) as store:  # upgraded in memory: nothing described, the cells kept
        assert store.datasets().empty and store.methods().empty and store.cells()["input_shape"].isna().all()
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "6"
    with ResultStore(path) as store:  # opened for writing: upgraded, and what this process has registered described
        assert store.datasets().set_index("dataset").loc["xor", ["kind", "decoys", "plugin"]].tolist() == [
            "tabular",
            True,
            None,
        ]
        assert set(store.methods()["method"]) == {"random", "anova"}
        summary = execute(cells, store)
        after = store.scores().sort_values(["cell_id", "metric"]).reset_index(drop=True)
    assert summary.skipped == len(cells) and summary.ok == 0  # every cell id unchanged: nothing recomputed
    pd.testing.assert_frame_equal(after, before)
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )


def test_each_cell_records_its_data_and_the_store_describes_its_datasets_and_methods(tmp_path):
    from synthbench.runner.execute import execute

    cells = GridSpec(
        ("xor", "shapes", "digits"),
        ("random",),
        {"tabular": (2,), "image": (1,)},
        n_samples=24,
        n_folds=2,
        dataset_params={"shapes": {"size": 12}},
    ).cells()
    with ResultStore(tmp_path / "r.sqlite") as store:
        execute(cells, store)
        data = store.cells().drop_duplicates("dataset").set_index("dataset")
        described = store.datasets().set_index("dataset")
        methods = store.methods().set_index("method")
    assert data.loc["xor", ["input_shape", "global_truth", "masks"]].tolist() == ["[4]", 1, 0]
    assert data.loc["shapes", ["input_shape", "global_truth", "masks"]].tolist() == ["[3, 12, 12]", 0, 1]
    assert data.loc["digits", ["input_shape", "global_truth", "masks"]].tolist() == ["[1, 8, 8]", 0, 0]
    assert described[["kind", "decoys"]].to_dict("index") == {
        "digits": {"kind": "image", "decoys": False},
        "shapes": {"kind": "image", "decoys": True},
        "xor": {"kind": "tabular", "decoys": True},
    }
    assert described["plugin"].isna().all()  # synthbench's own
    assert methods.loc["random", ["family", "inputs"]].tolist() == ["classical", '["tabular", "image"]']


def test_plugin_of_names_the_module_or_the_file_to_pass_to_plugin(tmp_path, monkeypatch):
    from synthbench.plugins import import_plugin
    from synthbench.runner.store import plugin_of

    (tmp_path / "sb_where_mod.py").write_text("def f():\n    pass\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "sb_where_file.py").write_text("def f():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        by_name = import_plugin("sb_where_mod")
        by_path = import_plugin(str(tmp_path / "elsewhere" / "sb_where_file.py"))
        assert plugin_of(by_name.f) == "sb_where_mod"  # found by its name on the path
        assert plugin_of(by_path.f) == str(tmp_path / "elsewhere" / "sb_where_file.py")  # only by its path
    finally:
        sys.modules.pop("sb_where_mod", None)
        sys.modules.pop("sb_where_file", None)
    from synthbench import datasets

    assert plugin_of(datasets.spec("xor").fn) is None  # synthbench's own

    def in_a_script():
        pass

    in_a_script.__module__ = "__main__"
    assert plugin_of(in_a_script) is None  # importing a script again would run it again


def _drop_curves(con: sqlite3.Connection) -> None:
    """Undo schemas 11 to 6: no descriptions, no curves."""
    _drop_descriptions(con)
    con.execute("DROP TABLE curves")


def test_a_version_5_store_gains_the_curves_table_and_keeps_its_cells(tmp_path):
    path = tmp_path / "v5.sqlite"
    with ResultStore(path) as store:
        store.write(result(cell()))
    _as_schema(path, 5, _drop_curves)
    with ResultStore(path, readonly=True) as store:  # upgraded in memory: no curves, the cell kept
        assert store.curves().empty and len(store.cells()) == 1
    from synthbench.scoring import Curve

    with ResultStore(path) as store:
        store.write(
            dataclasses.replace(result(cell(fold=1)), curves={"morf": Curve([0.0, 0.5], [[1.0, 0.9], [0.5, 0.4]])})
        )
        curves = store.curves()
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    assert sorted(zip(curves["x"], curves["replicate"], curves["value"])) == [
        (0.0, 0, 1.0),
        (0.0, 1, 0.9),
        (0.5, 0, 0.5),
        (0.5, 1, 0.4),
    ]


def _drop_claims(con: sqlite3.Connection) -> None:
    """Undo schemas 11 to 5: no curves, claims, examples, scorer columns or liveness columns on runs."""
    _drop_curves(con)
    con.execute("DROP TABLE claims")
    con.execute("DROP TABLE examples")
    for column in ("scorer_seconds", "scorer_params"):
        con.execute(f"ALTER TABLE cells DROP COLUMN {column}")
    for column in ("host", "pid", "heartbeat_at"):
        con.execute(f"ALTER TABLE runs DROP COLUMN {column}")


def test_a_version_4_store_gains_claims_and_keeps_its_cells(tmp_path):
    path = tmp_path / "v4.sqlite"
    with ResultStore(path) as store:
        store.write(result(cell()))
        run = store.start_run(
            command="x", executor=None, machine=None, package_version="0", cells_total=1, cells_pending=1
        )
    _as_schema(path, 4, _drop_claims)
    with ResultStore(path, readonly=True) as store:
        assert len(store.scores().drop_duplicates("cell_id")) == 1
    with ResultStore(path) as store:
        assert store.runs().loc[0, "run_id"] == run and store.runs()["host"].isna().all()
        claimed, finished, busy = store.claim([cell(), cell(fold=1)], run)
        # the old run has no heartbeat: its (absent) claims could not block anything
        assert [c.fold for c in claimed] == [1] and len(finished) == 1 and not busy


def test_a_version_3_store_gains_the_preset_column_and_keeps_its_cells(tmp_path):
    path = tmp_path / "v3.sqlite"
    with ResultStore(path) as store:
        store.write(result(cell()))
    # what synthbench wrote before presets: schema 3, no model_preset column
    _as_schema(path, 3, _drop_claims, "ALTER TABLE cells DROP COLUMN model_preset")
    with ResultStore(path, readonly=True) as store:  # read-only: upgraded in memory, file untouched
        assert store.scores()["model_preset"].isna().all()
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "3"
    with ResultStore(path) as store:
        neural = Cell("xor", 100, 3, 0, 2, 0, "saliency", model="sparse_mlp")
        store.write(result(neural))
        rows = store.scores().drop_duplicates("cell_id").set_index("cell_id")
        assert rows.loc[neural.cell_id, "model_preset"] == "sparse_mlp" and len(rows) == 2


def test_a_version_7_store_opens_resumes_and_then_round_trips_the_judged_field(tmp_path):
    path = tmp_path / "v7.sqlite"
    on_mlp = Cell("xor", 100, 3, 0, 2, 0, "random", scorer="road", model="sparse_mlp")
    judged = Cell("xor", 100, 3, 0, 2, 0, "random", scorer="road", judged="forest")
    with ResultStore(path) as store:
        store.write(result(on_mlp))
    _as_schema(path, 7, _drop_judged)  # what synthbench wrote before a control was judged on the forest
    with ResultStore(path, readonly=True) as store:  # upgraded in memory: columns empty, the registry flags controls
        rows = store.scores()
        assert rows["judged"].isna().all() and rows["judged_model"].isna().all() and rows["control"].all()
    with ResultStore(path) as store:
        assert store.finished([on_mlp.cell_id]) == {on_mlp.cell_id}  # its id unchanged: nothing to recompute
        assert store.methods().set_index("method").loc["random", "control"] == 1  # flagged when opened for writing
        store.write(result(judged))
        cells = store.cells().set_index("cell_id")
        rows = store.scores().drop_duplicates("cell_id").set_index("cell_id")
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    assert cells.loc[judged.cell_id, ["judged", "judged_model"]].tolist() == ["forest", "forest"]
    assert pd.isna(cells.loc[judged.cell_id, "model_preset"]) and pd.isna(cells.loc[on_mlp.cell_id, "judged"])
    assert rows.loc[judged.cell_id, ["judged", "control"]].tolist() == ["forest", True]
    assert judged.cell_id != dataclasses.replace(judged, judged=None).cell_id


def test_each_method_row_records_the_reference_it_was_registered_with(tmp_path):
    from synthbench.methods import METHODS, MethodSpec

    cited = MethodSpec("cited", lambda d, m, r: r.random(d.n_features), "test", reference="Doe & Roe 2024 (Venue)")
    bare = MethodSpec("bare", lambda d, m, r: r.random(d.n_features), "test")  # a plugin that gives none
    with (
        METHODS.temporarily("cited", cited),
        METHODS.temporarily("bare", bare),
        ResultStore(tmp_path / "r.sqlite") as store,
    ):
        for method in ("cited", "bare", "saliency"):
            store.write(result(cell(method=method)))
        references = store.methods().set_index("method")["reference"]
    assert references.to_dict() == {
        "bare": "",
        "cited": "Doe & Roe 2024 (Venue)",
        "saliency": METHODS["saliency"].reference,
    }
    assert references["saliency"].startswith("Simonyan")


def test_a_version_8_store_gains_the_references_of_the_methods_registered_here_and_keeps_its_cells(tmp_path):
    from synthbench.methods import METHODS, MethodSpec

    path = tmp_path / "v8.sqlite"
    gone = MethodSpec(
        "gone",
        lambda d, m, r: r.random(d.n_features),
        "a plugin not imported when reopened",
        reference="Doe 2024 (Venue)",
    )
    cells = [cell(), cell(method="anova"), cell(method="gone")]
    with METHODS.temporarily("gone", gone), ResultStore(path) as store:
        for c in cells:
            store.write(result(c))
        ids = {c.cell_id for c in cells}
        before = store.scores().sort_values(["cell_id", "metric"]).reset_index(drop=True)
    _as_schema(path, 8, _drop_references)  # what synthbench wrote before methods carried a reference
    with ResultStore(path, readonly=True) as store:  # upgraded in memory: the column there, empty; the file untouched
        methods = store.methods().set_index("method")
        assert methods["reference"].isna().all() and methods.loc["random", "control"] == 1
        pd.testing.assert_frame_equal(store.scores().sort_values(["cell_id", "metric"]).reset_index(drop=True), before)
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "8"
    with ResultStore(path) as store:  # opened for writing: upgraded, the references of methods registered here filled
        references = store.methods().set_index("method")["reference"]
        assert store.finished(ids) == ids  # nothing to recompute
        after = store.scores().sort_values(["cell_id", "metric"]).reset_index(drop=True)
    assert _version(path) == str(SCHEMA_VERSION)
    assert references["random"] == "control (chance)" and references["anova"] == METHODS["anova"].reference != ""
    assert pd.isna(references["gone"])  # not registered in this process: left unknown, not guessed
    pd.testing.assert_frame_equal(after, before)


def test_per_example_values_round_trip_as_float32_and_are_replaced_with_their_cell(tmp_path):
    values = np.array([0.1, 0.5, np.nan, 1.0 / 3.0])
    with ResultStore(tmp_path / "s.sqlite") as store:
        store.write(dataclasses.replace(result(cell()), per_example={"best_k": values}))
        store.write(result(cell(fold=1)))  # a cell without any
        got = store.per_example()
        assert list(got["cell_id"]) == [cell().cell_id] and list(got["metric"]) == ["best_k"]
        np.testing.assert_array_equal(got["values"].iloc[0], values.astype(np.float32).astype(np.float64))
        store.write(dataclasses.replace(result(cell()), per_example={"best_k": values[:2]}))  # rerun: replaced
        assert [len(v) for v in store.per_example()["values"]] == [2]
        assert store.per_example([cell(fold=1).cell_id]).empty
