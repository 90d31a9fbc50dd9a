"""The command line as a user meets it: listing, small runs, resume, export, errors, kill -9."""

import hashlib
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from synthbench import run as cli
from synthbench.methods import registry
from synthbench.runner.export import Export, arrays_path, carry_export, export_of, read_export, write_export
from synthbench.runner.store import ResultStore

SMALL = [
    "--datasets",
    "xor,ring",
    "--decoys",
    "0,3",
    "--n-samples",
    "120",
    "--folds",
    "2",
    "--jobs",
    "1",
    "--methods",
    "random,anova,mrmr",
    "--quiet",
]


def sb(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "synthbench.run", *args], capture_output=True, text=True, timeout=timeout
    )


def test_list_names_every_dataset_and_method(capsys):
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in ["ring_xor_sum", "switch", "dag", "rf", "treeshap", "mrmr_pymrmr", "relief"]:
        assert name in out
    from synthbench.kinds import INPUT_KINDS

    assert all(f"{k.name:<24} {k.map}; {k.decoy}s {k.default_decoys}" in out for k in INPUT_KINDS.values())


def test_list_shows_the_model_presets_and_marks_the_default_ones(capsys):
    assert cli.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("model presets (--model; neural methods explain each, * = run by default):")
    rows = {line[2:26].strip(): line[26] == "*" for line in lines[start + 1 : start + 7]}
    assert rows == {
        "passemiers2023": False,
        "passemiers2023_corrected": False,
        "sparse_mlp": False,
        "screened_mlp": True,
        "screened_mlp_softmax": False,
        "dense_mlp": False,
    }


def test_default_with_named_methods_adds_them_to_the_default_set():
    from synthbench.methods import default_methods

    _, cells = cli.parse(["--methods", "default,rf,lassonet", "--datasets", "xor", "--decoys", "5", "--folds", "2"])
    tabular = [m for m in default_methods() if m != "sobel"]  # sobel draws maps of images only: skipped on tables
    assert list(dict.fromkeys(c.method for c in cells)) == [*tabular, "rf", "lassonet"]
    _, cells = cli.parse(["--methods", "rf,default", "--datasets", "xor", "--decoys", "5", "--folds", "2"])
    assert list(dict.fromkeys(c.method for c in cells))[0] == "rf"


def test_presets_and_sample_sizes_are_axes_of_one_run(tmp_path, capsys):
    store, export = tmp_path / "r.sqlite", tmp_path / "rows.csv"
    args = [
        "--datasets",
        "xor",
        "--decoys",
        "2",
        "--n-samples",
        "90,120",
        "--folds",
        "2",
        "--jobs",
        "1",
        "--quiet",
        "--methods",
        "anova,saliency",
        "--model",
        "passemiers2023,passemiers2023_corrected",
    ]
    assert cli.main([*args, "--store", str(store), "--export", str(export)]) == 0
    out = capsys.readouterr().out
    assert "12 cells run" in out  # 2 sizes × 2 folds × (anova + saliency on 2 presets)
    board = out.split("\n\n")[0]
    assert "xor n=90/2" in board and "xor n=120/2" in board
    for row in ("saliency@passemiers2023 ", "saliency@passemiers2023_corrected ", "anova "):
        assert row in board
    rows = pd.read_csv(export)
    assert set(rows["n_samples"]) == {90, 120}
    assert rows.groupby("method")["model_preset"].apply(lambda s: set(s.dropna())).to_dict() == {
        "anova": set(),
        "saliency": {"passemiers2023", "passemiers2023_corrected"},
    }


def test_small_run_resume_and_export(tmp_path, capsys):
    store, export = tmp_path / "r.sqlite", tmp_path / "out" / "rows.csv"
    assert cli.main([*SMALL, "--store", str(store), "--export", str(export)]) == 0
    out = capsys.readouterr().out
    assert "mean best_k" in out and "chance" in out and "24 cells run, 0 already" in out  # a fresh store: every cell
    rows = pd.read_csv(export)
    for col in [
        "dataset",
        "n_samples",
        "n_decoys",
        "n_features",
        "method",
        "fold",
        "seed",
        "metric",
        "value",
        "seconds",
        "status",
    ]:
        assert col in rows
    assert len(rows.drop_duplicates(["dataset", "n_decoys", "fold", "method"])) == 2 * 2 * 2 * 3
    assert set(rows.metric) >= {"best_k", "best_2k", "auroc", "average_precision", "mean_rank"}
    assert (rows.status == "ok").all()

    con = sqlite3.connect(store)
    before = con.execute("SELECT cell_id, finished_at, seconds FROM cells ORDER BY cell_id").fetchall()
    con.close()
    assert cli.main([*SMALL, "--store", str(store)]) == 0
    assert "0 cells run, 24 already" in capsys.readouterr().out
    con = sqlite3.connect(store)
    assert con.execute("SELECT cell_id, finished_at, seconds FROM cells ORDER BY cell_id").fetchall() == before
    con.close()
    assert cli.main([*SMALL, "--store", str(store), "--force", "--methods", "random"]) == 0
    assert "8 cells run, 0 already" in capsys.readouterr().out


def test_same_command_same_numbers(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert cli.main([*SMALL, "--store", str(tmp_path / "a.sqlite"), "--export", str(a)]) == 0
    assert cli.main([*SMALL, "--store", str(tmp_path / "b.sqlite"), "--export", str(b)]) == 0
    cols = ["dataset", "n_decoys", "fold", "method", "metric", "value"]
    pd.testing.assert_frame_equal(pd.read_csv(a)[cols], pd.read_csv(b)[cols])


def test_parallel_jobs_give_the_serial_results(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    args = SMALL
    assert cli.main([*args, "--store", str(tmp_path / "a.sqlite"), "--export", str(a)]) == 0
    assert cli.main([*args, "--jobs", "2", "--store", str(tmp_path / "b.sqlite"), "--export", str(b)]) == 0
    key = ["dataset", "n_decoys", "fold", "method", "metric"]
    ra, rb = (pd.read_csv(p).sort_values(key).reset_index(drop=True) for p in (a, b))
    pd.testing.assert_frame_equal(ra[[*key, "value"]], rb[[*key, "value"]])


TIMINGS = ["seconds", "train_seconds", "scorer_seconds", "peak_memory_bytes"]


def test_a_run_in_parts_exports_what_the_whole_run_exports(tmp_path, capsys):
    small = registry.MethodSpec("small", lambda d, m, r: r.random(d.n_features), "handles 3 features", max_features=3)
    grid = [*SMALL[:-2], "random,anova,small", "--quiet"]
    whole, part, joined = tmp_path / "whole.csv", tmp_path / "part.csv.gz", tmp_path / "joined.csv.gz"
    with registry.METHODS.temporarily("small", small):
        assert cli.main([*grid, "--store", str(tmp_path / "a.sqlite"), "--export", str(whole)]) == 0
        rows = read_export(whole).rows
        assert set(rows.status) == {"ok", "skipped"}  # a skipped cell (over its limit) is carried too
        first = rows[rows.fold == 0]
        first.to_csv(part, index=False)  # the first part: fold 0 of every setting
        capsys.readouterr()
        resumed = [*grid, "--store", str(tmp_path / "b.sqlite"), "--resume-from", str(part), "--export", str(joined)]
        assert cli.main(resumed) == 0
    out = capsys.readouterr().out
    assert "carried 12 finished cells" in out and "10 cells run, 12 already" in out and "2 skipped with" in out
    key = ["cell_id", "metric"]
    a, b = (read_export(p).rows.sort_values(key).reset_index(drop=True) for p in (whole, joined))
    pd.testing.assert_frame_equal(a.drop(columns=TIMINGS), b.drop(columns=TIMINGS))
    carried = b.fold == 0
    pd.testing.assert_frame_equal(a[carried], b[carried])  # a carried cell keeps every column to the last bit
    stored = ResultStore(tmp_path / "b.sqlite").cells()
    assert (stored.versions[stored.fold == 0] == '{"carried_from": "part.csv.gz"}').all()
    # a grid that is part of the exported one carries its own cells only, and says how many it left out
    sub = [*SMALL[:1], "xor", *SMALL[2:-2], "random,anova", "--quiet", "--store", str(tmp_path / "c.sqlite")]
    assert cli.main([*sub, "--resume-from", str(whole)]) == 0
    out = capsys.readouterr().out
    assert "carried 8 finished cells" in out and "(16 of its cells are not of this grid: left out)" in out
    assert "0 cells run, 8 already" in out


def _arrays(store):
    """A store's per-example values and curves, sorted, the values as their float32 bytes."""
    with ResultStore(store, readonly=True) as db:
        pe = db.per_example().sort_values(["cell_id", "metric"]).reset_index(drop=True)
        curves = db.curves().sort_values(["cell_id", "curve", "x", "replicate"]).reset_index(drop=True)
    return pe.assign(values=[np.asarray(v, "<f4").tobytes() for v in pe["values"]]), curves


def test_a_run_in_parts_carries_its_curves_and_per_example_values(tmp_path, capsys):
    grid = [*SMALL[:1], "xor", SMALL[2], "3", *SMALL[4:-2], "random,anova", "--scorer", "road", "--quiet"]
    whole, part, joined = tmp_path / "whole.csv.gz", tmp_path / "part.csv", tmp_path / "joined.csv.gz"
    assert cli.main([*grid, "--store", str(tmp_path / "a.sqlite"), "--export", str(whole)]) == 0
    assert f"and their curves and per-example values to {tmp_path / 'whole.arrays.npz'}" in capsys.readouterr().out
    export = read_export(whole)
    pe, curves = _arrays(tmp_path / "a.sqlite")
    assert set(pe.metric) == {"road_morf", "road_lerf", "road_gap"} and not curves.empty
    first = set(export.rows.loc[export.rows.fold == 0, "cell_id"])
    write_export(
        Export(
            export.rows[export.rows.cell_id.isin(first)],
            export.per_example[export.per_example.cell_id.isin(first)],
            export.curves[export.curves.cell_id.isin(first)],
        ),
        part,
    )
    resumed = [*grid, "--store", str(tmp_path / "b.sqlite"), "--resume-from", str(part), "--export", str(joined)]
    assert cli.main(resumed) == 0
    assert "carried 2 finished cells" in capsys.readouterr().out
    # the carried cells' arrays are the whole run's to the last bit, and so are the exports'
    for a, b in zip(_arrays(tmp_path / "a.sqlite"), _arrays(tmp_path / "b.sqlite")):
        pd.testing.assert_frame_equal(a, b)
    joined_export = read_export(joined)
    pd.testing.assert_frame_equal(
        joined_export.curves.sort_values(["cell_id", "curve", "x", "replicate"]).reset_index(drop=True),
        export.curves.sort_values(["cell_id", "curve", "x", "replicate"]).reset_index(drop=True),
    )
    # an export without arrays removes a stale arrays file beside it
    write_export(Export(export.rows), whole)
    assert not arrays_path(whole).exists() and read_export(whole).per_example.empty


def test_a_carried_curve_keeps_its_points_and_its_missing_ones(tmp_path):
    from synthbench.runner.store import CellResult
    from synthbench.scoring import Curve

    _, cells = cli.parse(SMALL)
    x, values = [0.8, 0.2, 0.5], [[0.1, 0.2], [np.nan, 0.4], [0.5, 0.6]]
    result = CellResult(
        cells[0],
        "ok",
        scores={"best_k": 0.5},
        curves={"c": Curve(x, values)},
        per_example={"e": np.array([0.25, 1 / 3])},
    )
    with ResultStore(tmp_path / "a.sqlite") as db:
        db.write(result)
        write_export(export_of(db, [cells[0].cell_id]), tmp_path / "a.csv")
    assert arrays_path(tmp_path / "a.csv") == tmp_path / "a.arrays.npz"
    with ResultStore(tmp_path / "b.sqlite") as db:
        assert carry_export(db, read_export(tmp_path / "a.csv"), cells, "a.csv") == (1, 0)
        points, pe = db.curves().sort_values(["x", "replicate"]), db.per_example()
    assert points["x"].tolist() == [0.2, 0.2, 0.5, 0.5, 0.8, 0.8]
    np.testing.assert_array_equal(points["value"].to_numpy().reshape(3, 2), [values[1], values[2], values[0]])
    assert pe["values"][0].tolist() == [0.25, float(np.float32(1 / 3))]


def test_an_export_of_another_grid_is_refused(tmp_path, capsys):
    other = tmp_path / "other.csv"
    assert cli.main([*SMALL, "--seed", "1", "--store", str(tmp_path / "a.sqlite"), "--export", str(other)]) == 0
    capsys.readouterr()
    assert cli.main([*SMALL, "--store", str(tmp_path / "b.sqlite"), "--resume-from", str(other)]) == 2
    err = capsys.readouterr().err
    assert "none of the 24 finished cells of other.csv is a cell of this grid" in err
    assert ResultStore(tmp_path / "b.sqlite").cells().empty  # nothing carried, nothing run
    assert cli.main([*SMALL, "--resume-from", str(tmp_path / "none.csv")]) == 2
    assert f"--resume-from {tmp_path / 'none.csv'}: no such file" in capsys.readouterr().err


def test_an_interrupted_run_exports_the_cells_it_finished(tmp_path, capsys):
    def interrupt(data, models, rng):
        if data.n_features > 2:  # the settings with decoys: their folds come after those without
            raise KeyboardInterrupt
        return rng.random(data.n_features)

    export = tmp_path / "rows.csv"
    with registry.METHODS.temporarily("stop", registry.MethodSpec("stop", interrupt, "interrupts")):
        args = [*SMALL[:-2], "stop", "--quiet", "--store", str(tmp_path / "r.sqlite"), "--export", str(export)]
        assert cli.main(args) == 130
    assert f"its cells so far exported to {export}" in capsys.readouterr().err
    rows = read_export(export).rows
    stored = ResultStore(tmp_path / "r.sqlite").cells()
    assert len(stored) >= 1 and set(rows.cell_id) == set(stored.cell_id)
    assert (rows.n_decoys == 0).all() and (rows.status == "ok").all()


def test_failing_methods_are_recorded_and_the_grid_goes_on(tmp_path, capsys):
    def boom(data, models, rng):
        raise RuntimeError("kaput")

    nan = registry.MethodSpec("nan", lambda d, m, r: np.full(d.n_features, np.nan), "NaN")
    export = tmp_path / "rows.csv"
    with (
        registry.METHODS.temporarily("boom", registry.MethodSpec("boom", boom, "raises")),
        registry.METHODS.temporarily("nan", nan),
    ):
        code = cli.main(
            [*SMALL[:-2], "boom,random,nan", "--quiet", "--store", str(tmp_path / "r.sqlite"), "--export", str(export)]
        )
    assert code == 1
    err = capsys.readouterr().err
    assert "cells failed" in err and "RuntimeError: kaput" in err and "NaN" in err
    rows = pd.read_csv(export).drop_duplicates(["dataset", "n_decoys", "fold", "method"])
    assert (rows[rows.method == "random"].status == "ok").all()
    assert (rows[rows.method != "random"].status == "failed").all()


def test_cells_over_a_methods_declared_feature_limit_are_skipped_with_the_reason(tmp_path, capsys):
    small = registry.MethodSpec("small", lambda d, m, r: r.random(d.n_features), "handles 3 features", max_features=3)
    with registry.METHODS.temporarily("small", small):
        args = [
            "--datasets",
            "xor",
            "--decoys",
            "0,3",
            "--n-samples",
            "60",
            "--folds",
            "2",
            "--jobs",
            "1",
            "--methods",
            "small,random",
            "--quiet",
            "--store",
            str(tmp_path / "r.sqlite"),
        ]
        assert cli.main(args) == 0  # a declared limit is not a failure
        out = capsys.readouterr().out
        assert "6 cells run, 0 already" in out and "2 skipped with their reason (a method's feature limit" in out
        rows = ResultStore(tmp_path / "r.sqlite").cells()
        over = rows[rows.status == "skipped"]
        assert set(zip(over.method, over.n_decoys)) == {("small", 3)}
        assert over.message.str.contains("small declares a limit of 3 features; this cell has 5").all()
        assert cli.main(args) == 0
        assert "0 cells run, 8 already" in capsys.readouterr().out  # skipped cells are not retried


BAD_INPUT = [
    (["--explain", "test:0"], "--explain: explain must be 'test' or 'train', or either with ':N'"),
    (["--datasets", "xor,nope"], "unknown dataset 'nope'; valid: "),
    (["--methods", "rf,nope"], "unknown method 'nope'; valid: "),
    (["--decoys", "10,-5"], "non-negative"),
    (["--decoys", "abc"], "non-negative integers, got 'abc'"),
    (["--n-samples", "3", "--folds", "6"], "--n-samples (3) must be at least --folds (6)"),
    (["--folds", "1"], "at least 2"),
    # an MLP preset on images only: the CNN would run in its place, without a word
    (["--datasets", "shapes", "--model", "screened_mlp"], "--model screened_mlp: no cell of the grid explains it"),
    (["--bogus"], "unrecognized arguments"),
    (["--plugin", "no_such_module_here"], "--plugin: No module named 'no_such_module_here'"),
    (["--max-retries", "-1"], "--max-retries must be non-negative"),
    (["--batch-memory", "0"], "--batch-memory must be a positive number of MiB, got 0"),
    (["--batch-memory", "-5"], "--batch-memory must be a positive number of MiB, got -5"),
    (["--address", "127.0.0.1:6379"], "--address and --gpus-per-cell need --executor ray"),
    (["--executor", "ray", "--gpus-per-cell", "1.5"], "gpus per cell must be within [0, 1]"),
    # a value the scorer's own check refuses: the option and the value are named, whatever the check says
    (
        ["--scorer", "randomisation", "--scorer-option", "layers=nope", "--scorer-option", "n_bins=5"],
        "scorer 'randomisation' refuses layers='nope': invalid literal",
    ),
    (["--scorer", "roar", "--scorer-option", "fractions=a,b"], "scorer 'roar' refuses fractions=('a', 'b'): "),
]

#: Warnings Python prints by default (a run's stderr would show them); DeprecationWarning and the like it hides.
_HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def _shown(recwarn, caplog) -> list[str]:
    """What a real run would have added to its stderr besides the error line: warnings Python shows by
    default and log records of level WARNING or above (setup_logging sends those to stderr; in this
    process pytest collects both instead)."""
    return [str(w.message) for w in recwarn if not issubclass(w.category, _HIDDEN)] + [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
    ]


@pytest.mark.parametrize("args,message", BAD_INPUT)
def test_bad_input_is_one_line_exit_2_store_untouched(tmp_path, capsys, recwarn, caplog, args, message):
    """In this process through ``main``; test_bad_input_through_the_module_entry_point runs one case as
    ``python -m synthbench.run``, the exit status and stderr of the real process."""
    store = tmp_path / "r.sqlite"
    code = cli.main([*args, "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert not _shown(recwarn, caplog)
    assert not store.exists()


#: Bad numbers, counts and option shapes: answered before torch or any registry is imported.
CHEAP_BAD_INPUT = [
    ["--decoys", "10,-5"],
    ["--decoys", "abc"],
    ["--folds", "1"],
    ["--seed", "-1"],
    ["--jobs", "0"],
    ["--n-samples", "3", "--folds", "6"],
    ["--max-retries", "-1"],
    ["--batch-memory", "0"],
    ["--competence", "2"],
    ["--scorer-option", "nonsense"],
    ["--address", "127.0.0.1:6379"],
    ["--bogus"],
    ["--suite", "passemiers2023", "--folds", "3"],
]


def test_bad_numbers_are_answered_before_torch_or_a_registry_is_imported(tmp_path):
    """The command line checks what needs no registry first: in a fresh process, every case exits 2 with neither
    torch nor the datasets' registry imported (which take seconds: the answer comes at once)."""
    script = (
        "import sys\n"
        "from synthbench.run import main\n"
        f"cases = {CHEAP_BAD_INPUT!r}\n"
        f"codes = [main([*case, '--store', {str(tmp_path / 'r.sqlite')!r}]) for case in cases]\n"
        "loaded = ['torch' in sys.modules, 'synthbench.datasets' in sys.modules, 'synthbench.methods' in sys.modules]\n"
        "print(codes, *loaded)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert proc.stdout.strip() == f"{[2] * len(CHEAP_BAD_INPUT)} False False False", proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == len(CHEAP_BAD_INPUT)  # one line each
    assert not (tmp_path / "r.sqlite").exists()


def test_bad_input_through_the_module_entry_point(tmp_path):
    """One case of the list above as a real process: its exit status is main's 2 and its stderr the one
    line, with nothing else (import-time warnings or logging included)."""
    args, message = BAD_INPUT[4]
    store = tmp_path / "r.sqlite"
    proc = sb(*args, "--store", str(store))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert not store.exists()


def test_bad_stores_are_refused_untouched(tmp_path, capsys, recwarn, caplog):
    foreign = tmp_path / "notes.db"
    foreign.write_text("hello")
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE meta (key, value)")
    con.execute("INSERT INTO meta VALUES ('application', 'synthbench'), ('schema_version', '0')")
    con.commit()
    con.close()
    blocker = tmp_path / "file"
    blocker.write_text("")
    for store, message in [
        (foreign, "not a synthbench results database"),
        (other, "schema version 0"),
        (blocker / "r.sqlite", "cannot create store"),
    ]:
        before = hashlib.sha256(store.read_bytes()).hexdigest() if store.exists() else None
        code = cli.main([*SMALL, "--store", str(store)])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
        assert not _shown(recwarn, caplog)
        assert (hashlib.sha256(store.read_bytes()).hexdigest() if store.exists() else None) == before


def _stored(store) -> dict:
    """cell_id -> finished_at of the cells in ``store`` ({} while it is not readable yet)."""
    try:
        con = sqlite3.connect(store)
        try:
            return dict(con.execute("SELECT cell_id, finished_at FROM cells").fetchall())
        finally:
            con.close()
    except sqlite3.Error:
        return {}


def _wait_for(condition, what: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


#: Cells finished when every worker is blocked in ``gate`` (tests/gated_methods.py), the kill -9
#: grid below letting 2 gate calls through. Per fold the grid has two tasks, [random, anova, gate]
#: then [rf] (cells grouped by the models they need, in grid order), handed to the workers in that
#: order; a worker blocked in a gate takes no more. One worker blocks in fold 3's gate: folds 1-2
#: (8 cells) + random and anova of fold 3 = 10. Two block in the 3rd and 4th [random, anova, gate]
#: tasks, every task before the 4th done: 4 x 3 - 2 + 3 rf cells = 13.
FINISHED_WHEN_BLOCKED = {"1": 10, "2": 13}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_kill_9_then_rerun_loses_and_repeats_nothing(tmp_path, monkeypatch, capsys, jobs):
    """kill -9 lands mid-run at a known point: while every worker is blocked in a cell of the test
    plugin's ``gate`` method, after a known number of cells was stored. The killed run is a real
    process; the rerun, an ordinary run on the store it left, runs here through ``main`` (its
    worker processes, with ``--jobs 2``, are real ones)."""
    store, gate_dir = tmp_path / "r.sqlite", tmp_path / "gate"
    gate_dir.mkdir()
    args = [
        "--datasets",
        "xor",
        "--decoys",
        "0,5",
        "--n-samples",
        "150",
        "--folds",
        "3",
        "--jobs",
        jobs,
        "--methods",
        "random,rf,anova,gate",
        "--plugin",
        "gated_methods",
        "--quiet",
        "--store",
        str(store),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]),
        "SYNTHBENCH_GATE_DIR": str(gate_dir),
    }
    total, expected = 2 * 3 * 4, FINISHED_WHEN_BLOCKED[jobs]
    stderr = tmp_path / "stderr"
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "synthbench.run", *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**env, "SYNTHBENCH_GATE_AFTER": "2"},
        )
    try:

        def blocked() -> list:
            assert proc.poll() is None, f"the run ended (exit {proc.returncode}): {stderr.read_text()}"
            return sorted(gate_dir.glob("blocked-*"))

        _wait_for(lambda: len(blocked()) == int(jobs), f"{jobs} workers blocked in the gate")
        _wait_for(lambda: len(_stored(store)) >= expected, f"{expected} cells stored", timeout=30)
        assert len(blocked()) == int(jobs)
        os.kill(proc.pid, signal.SIGKILL)  # the run writes every cell: after this nothing more can arrive
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        (gate_dir / "release").touch()  # frees any worker still waiting in the gate
    before = _stored(store)
    assert len(before) == expected
    workers = [int(p.read_text()) for p in gate_dir.glob("blocked-*") if int(p.read_text()) != proc.pid]

    monkeypatch.setenv("SYNTHBENCH_GATE_DIR", str(gate_dir))
    monkeypatch.delenv("SYNTHBENCH_GATE_AFTER", raising=False)  # the gate lets every call through
    try:
        with registry.METHODS.restoring():  # the plugin's gate, for this test only
            code = cli.main(args)
    finally:
        sys.modules.pop("gated_methods", None)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"{total - len(before)} cells run, {len(before)} already" in out
    con = sqlite3.connect(store)
    after = dict(con.execute("SELECT cell_id, finished_at FROM cells").fetchall())
    n_rows = con.execute("SELECT count(*) FROM cells").fetchone()[0]
    con.close()
    assert n_rows == len(after) == total
    assert {k: after[k] for k in before} == before  # finished cells untouched, not recomputed
    for pid in workers:  # the killed run's orphaned workers leave the gate and exit
        _wait_for(lambda: not _alive(pid), f"worker {pid} to exit", timeout=30)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an orphan's new parent may not reap it at once)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


from synthbench.models.presets import preset_names  # noqa: E402

TESTS = os.path.dirname(os.path.abspath(__file__))
BOOM = 'raise RuntimeError("no licence for this plugin")\n'
RAISED = "raised RuntimeError while being imported: no licence for this plugin (--debug shows where)"


@pytest.mark.parametrize(
    "args,message",
    [
        (["--seed", "-3"], "--seed must be a non-negative integer, got -3"),
        (["--plugin", "{tmp}/sb_boom_plugin.py"], "--plugin: {tmp}/sb_boom_plugin.py " + RAISED),
        (["--plugin", "sb_boom_plugin"], "--plugin: sb_boom_plugin " + RAISED),
        (["--plugin", "./no_such_plugin.py"], "--plugin: ./no_such_plugin.py: no such file"),
        (["--competence", "0"], "--competence: the competence threshold must lie strictly between 0 and 1, got 0.0"),
        (["--competence", "1.5"], "--competence: the competence threshold must lie strictly between 0 and 1, got 1.5"),
        (["--model", "gbm"], "unknown model 'gbm'; valid: " + ", ".join(preset_names())),
    ],
)
def test_bad_seeds_and_plugins_are_one_line_exit_2_store_untouched(tmp_path, monkeypatch, capsys, args, message):
    (tmp_path / "sb_boom_plugin.py").write_text(BOOM)
    monkeypatch.syspath_prepend(str(tmp_path))  # the plugin by module name
    store = tmp_path / "r.sqlite"
    code = cli.main([*(a.format(tmp=tmp_path) for a in args), *SMALL, "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == f"synthbench.run: error: {message.format(tmp=tmp_path)}", err
    assert not store.exists()


def test_debug_logs_where_a_plugin_failed(tmp_path, caplog, capsys):
    plugin = tmp_path / "sb_boom_debug.py"
    plugin.write_text(BOOM)
    try:
        assert cli.main(["--plugin", str(plugin), "--debug", "--store", str(tmp_path / "r.sqlite")]) == 2
    finally:
        logging.getLogger("synthbench").setLevel(logging.NOTSET)
    assert capsys.readouterr().err.strip() == (
        f"synthbench.run: error: --plugin: {plugin} raised RuntimeError while "
        "being imported: no licence for this plugin"
    )
    [record] = [r for r in caplog.records if r.exc_info]
    assert "sb_boom_debug.py" in record.getMessage() and str(record.exc_info[1]) == "no licence for this plugin"


def test_a_plugin_can_be_a_path_to_a_py_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "sb_file_plugin.py").write_text(
        "from synthbench.methods import register_method\n\n"
        "@register_method('from_file', description='test: random scores, from a plugin file', default=False)\n"
        "def from_file(data, models, rng):\n"
        "    return rng.random(data.n_features)\n"
    )
    monkeypatch.chdir(tmp_path)
    try:
        with registry.METHODS.restoring():  # the plugin's method, for this test only
            code = cli.main(
                [
                    "--plugin",
                    "./sb_file_plugin.py",
                    "--datasets",
                    "xor",
                    "--decoys",
                    "0",
                    "--n-samples",
                    "40",
                    "--folds",
                    "2",
                    "--jobs",
                    "1",
                    "--methods",
                    "from_file",
                    "--quiet",
                    "--store",
                    "r.sqlite",
                ]
            )
    finally:
        sys.modules.pop("sb_file_plugin", None)
    assert code == 0
    assert "2 cells run, 0 already" in capsys.readouterr().out
    assert set(ResultStore(tmp_path / "r.sqlite").cells()["method"]) == {"from_file"}


def test_the_reports_plugin_errors_are_one_line_exit_2_nothing_written(tmp_path, capsys):
    from synthbench.report.cli import main as report

    plugin, out = tmp_path / "sb_boom_report.py", tmp_path / "report"
    plugin.write_text(BOOM)
    assert report(["--plugin", str(plugin), "--store", str(tmp_path / "r.sqlite"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"synthbench.report: error: --plugin: {plugin} {RAISED}"
    assert not out.exists() and not (tmp_path / "r.sqlite").exists()


def test_ctrl_c_keeps_finished_cells_prints_one_line_and_the_rerun_resumes(tmp_path, monkeypatch, capsys):
    """SIGINT to the whole process group (what Ctrl-C sends) while both workers are inside a cell."""
    store, blocked = tmp_path / "r.sqlite", tmp_path / "blocked"
    plugin = os.path.join(TESTS, "blocking_methods.py")  # as a path: the workers import it by path too
    args = [
        "--datasets",
        "xor",
        "--decoys",
        "0",
        "--n-samples",
        "40",
        "--folds",
        "2",
        "--methods",
        "random,blocker",
        "--plugin",
        plugin,
        "--quiet",
        "--store",
        str(store),
    ]
    # The run starts as from a shell: SIGINT at its default, whatever this test process inherited or set (an
    # ignored SIGINT is inherited across exec, and Python then leaves Ctrl-C ignored).
    proc = subprocess.Popen(
        [sys.executable, "-m", "synthbench.run", *args, "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "SYNTHBENCH_BLOCK": str(blocked)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline, done = time.time() + 120, 0

        def inside() -> int:  # workers inside a blocker: each touched blocked.<its pid>
            return len(list(tmp_path.glob("blocked.*")))

        while time.time() < deadline and not (inside() == 2 and done == 2):  # both random cells, then both blockers
            time.sleep(0.1)
            if store.exists():
                try:
                    with sqlite3.connect(store) as con:
                        done = con.execute("SELECT count(*) FROM cells").fetchone()[0]
                except sqlite3.Error:
                    pass
        assert inside() == 2 and done == 2, "the run never had both workers inside the blocking cells"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    assert err.strip() == "synthbench.run: interrupted; finished cells are stored, rerun the command to resume", err
    with sqlite3.connect(store) as con:
        assert con.execute("SELECT method FROM cells").fetchall() == [("random",), ("random",)]
        assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
    try:
        with registry.METHODS.restoring():
            assert cli.main([*args, "--jobs", "1"]) == 0  # SYNTHBENCH_BLOCK unset here: the blocker returns at once
    finally:
        sys.modules.pop("blocking_methods", None)
    assert "2 cells run, 2 already" in capsys.readouterr().out
