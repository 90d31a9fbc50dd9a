"""The image grid end to end from the command line: run, store, leaderboard, report; two scorers; bad input."""

from __future__ import annotations

import contextlib
import io
import runpy
import sqlite3
import sys
from pathlib import Path

import pytest

from synthbench.report import build_report, load_results, write_report
from synthbench.runner.store import ResultStore
from synthbench.scoring import base as scoring_base
from synthbench.scoring import get_scorer, scorer_names

TESTS = Path(__file__).parent
GRID = [
    "--datasets",
    "shapes,digits",
    "--decoys",
    "0,2",
    "--n-samples",
    "60",
    "--folds",
    "2",
    "--methods",
    "gradient,smoothgrad_sq,random,sobel",
    "--quiet",
    "--jobs",
    "1",
]


@contextlib.contextmanager
def plugin_scorer_registered():
    """The plugin's ``ground_truth_max`` (tests/extra_scorers.py) registered here for the duration only.

    The plugin registers its scorer when imported; importing it in this process would leave it in the
    registry for every later test (listings would depend on test order). What it registers is
    undone on exit."""
    with scoring_base.SCORERS.restoring():
        runpy.run_path(str(TESTS / "extra_scorers.py"))
        yield


@pytest.fixture
def plugin_scorer():
    """For the tests that read the plugin scorer's metrics back from the store (the report)."""
    with plugin_scorer_registered():
        yield


def test_the_plugin_scorer_is_registered_only_where_a_test_asks_for_it():
    names = scorer_names()
    assert "ground_truth_max" not in names  # nothing registered it at import
    with plugin_scorer_registered():
        assert scorer_names() == [*names, "ground_truth_max"]
        assert get_scorer("ground_truth_max").channel_aggregation == "max_abs"
    assert scorer_names() == names
    with pytest.raises(KeyError, match="unknown scorer 'ground_truth_max'"):
        get_scorer("ground_truth_max")


@pytest.fixture(scope="module")
def image_store(tmp_path_factory):
    """The grid run by the command line's ``main`` in this process (tests/test_cli.py runs the module entry
    point as a process), the plugin imported by ``--plugin`` as on the command line and its registration
    undone afterwards."""
    from conftest import registrations_undone

    from synthbench.run import main

    store = tmp_path_factory.mktemp("images") / "s.sqlite"
    out, err = io.StringIO(), io.StringIO()
    try:
        with registrations_undone(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(
                [*GRID, "--store", str(store), "--plugin", "extra_scorers", "--scorer", "ground_truth,ground_truth_max"]
            )
    finally:
        sys.modules.pop("extra_scorers", None)
    assert code == 0, err.getvalue()
    return store, out.getvalue()


def test_the_image_grid_runs_and_stores_what_the_report_needs(image_store):
    store, stdout = image_store
    assert "mean rank_accuracy over folds" in stdout
    # shapes: 2 decoy counts x 2 folds x 4 methods; digits: no decoy axis, 2 folds x 4 methods; two scorers each
    con = sqlite3.connect(store)
    rows = con.execute("SELECT dataset, n_decoys, scorer, scorer_params, model_preset, status FROM cells").fetchall()
    assert len(rows) == 2 * (2 * 2 * 4 + 2 * 4) and {r[5] for r in rows} == {"ok"}
    assert {r[1] for r in rows if r[0] == "digits"} == {None} and {r[1] for r in rows if r[0] == "shapes"} == {0, 2}
    assert {r[3] for r in rows} == {'{"channel_aggregation": "sum_abs"}', '{"channel_aggregation": "max_abs"}'}
    assert {r[4] for r in rows if r[0] == "shapes" and r[4]} == {"cnn"}
    assert con.execute("SELECT count(*) FROM examples").fetchone()[0] == len(rows)
    con.close()
    with ResultStore(store, readonly=True) as db:
        maps = db.examples(db.cells()["cell_id"])
    assert {m.shape for m in maps.values()} == {(4, 32, 32), (4, 8, 8)}


@pytest.fixture(scope="module")
def image_report(image_store):
    """The store's results and their report, built once for the two tests that read them, with the plugin's
    scorer registered while they are built."""
    store, _ = image_store
    with plugin_scorer_registered():
        results = load_results(store)
        return results, build_report(results)


def test_two_scorers_in_one_store_are_never_averaged_together(image_store, image_report):
    _, stdout = image_store
    assert "gradient@cnn [ground_truth]" in stdout and "gradient@cnn [ground_truth_max]" in stdout
    results, report = image_report
    assert report.markdown.count("## Localisation leaderboard (image data, scorer") == 2
    for scorer in ("ground_truth", "ground_truth_max"):
        assert f"scorer {scorer}, explaining the test rows" in report.markdown
    # the max-over-channels maps are not the summed ones: the two parts hold different numbers
    scores = results.scores
    gt = scores[(scores["scorer"] == "ground_truth") & (scores["metric"] == "mass_accuracy")]["value"].mean()
    gm = scores[(scores["scorer"] == "ground_truth_max") & (scores["metric"] == "mass_accuracy")]["value"].mean()
    assert gt != gm


def test_the_report_shows_the_localisation_leaderboard_and_example_maps(image_report, plugin_scorer, tmp_path):
    written = write_report(image_report[1], tmp_path / "report")
    names = {p.name for p in written}
    assert {"report.md", "report.html"} <= names and any(n.endswith("maps_shapes.png") for n in names)
    assert any(n.endswith("distractor_curves.png") for n in names)  # shapes at 0 and 2 distractors; digits has none
    md = (tmp_path / "report" / "report.md").read_text()
    assert "rank_accuracy [95 % CI]" in md and "No masks" in md and "s / cell" in md
    assert md.count("## Localisation against the number of distractors") == 2  # one per scorer part
    assert "- datasets: shapes (image), digits (image)" in md  # synthbench's own: no plugin named


def test_image_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from synthbench.run import main

    store = tmp_path / "r.sqlite"
    cases = [
        (["--datasets", "shapes", "--methods", "rf"], "rf cannot run on shapes (image data)"),
        (["--datasets", "mnist", "--methods", "random"], "--data-dir PATH (or set SYNTHBENCH_DATA_DIR)"),
        (["--datasets", "mnist", "--methods", "random", "--data-dir", str(tmp_path)], "train-images-idx3-ubyte"),
        (["--datasets", "shapes", "--methods", "gradient", "--metric", "best_k", "--scorer", "nope"], "unknown scorer"),
        (["--datasets", "shapes", "--methods", "gradient", "--metric", "nope"], "unknown metric 'nope'"),
        (["--datasets", "shapes", "--decoys", "40", "--methods", "gradient"], "do not fit"),
    ]
    for args, message in cases:
        monkeypatch.delenv("SYNTHBENCH_DATA_DIR", raising=False)  # the CLI's --data-dir default
        code = main([*args, "--store", str(store), "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and message in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        assert not store.exists()


def test_an_image_grid_too_large_for_memory_is_refused_with_the_estimate_before_any_worker_starts(
    tmp_path, capsys, monkeypatch
):
    """What ``--n-samples 100000000`` meets on any machine; here the memory is made small instead, so that
    a regression would run a small grid rather than exhaust the machine's memory."""
    from synthbench.datasets import base
    from synthbench.run import main

    monkeypatch.setattr(base, "_available_bytes", lambda: 2**30)
    store = tmp_path / "r.sqlite"
    code = main(
        [
            "--datasets",
            "shapes",
            "--decoys",
            "4",
            "--n-samples",
            "30000",
            "--folds",
            "2",
            "--methods",
            "random",
            "--jobs",
            "1",
            "--quiet",
            "--store",
            str(store),
        ]
    )
    err = capsys.readouterr().err
    # 30000 images of 3x32x32 at 17 bytes per element while generated (float32, float64 noise and its copy, mask)
    assert code == 2 and err.strip() == (
        "synthbench.run: error: shapes: dataset 'shapes' with n_samples=30000 and n_decoys=4 needs about 1.5 GiB while "
        "generated, and 1.0 GiB of memory is available; use fewer samples (distractors do not change an image's size)"
    )
    assert not store.exists()


@pytest.mark.parametrize("dataset, shape", [("shapes", (8, 8)), ("xor", (3,))])
def test_a_method_returning_maps_of_the_wrong_shape_stops_the_run_with_exit_2_and_is_not_written(
    tmp_path, capsys, dataset, shape
):
    """A broken output contract is a defect of the method, not a failed cell: one line, exit 2."""
    import numpy as np

    from synthbench.methods import registry
    from synthbench.protocol import MethodOutput
    from synthbench.run import main

    def wrong(data, models, rng):
        return MethodOutput(scores=None, local=np.ones((data.X_explain.shape[0], *shape)))

    kind = "image" if dataset == "shapes" else "tabular"
    spec = registry.MethodSpec("wrong", wrong, "maps of the wrong shape", needs={kind: ()}, default=False)
    store = tmp_path / "r.sqlite"
    with registry.METHODS.temporarily("wrong", spec):
        code = main(
            [
                "--datasets",
                dataset,
                "--decoys",
                "0",
                "--n-samples",
                "40",
                "--folds",
                "2",
                "--jobs",
                "1",
                "--methods",
                "wrong,random",
                "--quiet",
                "--store",
                str(store),
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert (
        f"method 'wrong' on {dataset}: method returned local attributions of shape (20, {', '.join(map(str, shape))})"
        in err
    )
    con = sqlite3.connect(store)
    assert con.execute("SELECT COUNT(*) FROM cells").fetchone() == (0,)  # nothing written: the first cell was wrong
    assert con.execute("SELECT status FROM runs").fetchall() == [("failed",)]
    assert con.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)


def test_without_decoys_each_kind_takes_its_own_default_counts_and_table_cells_keep_their_ids(capsys):
    from synthbench.run import main, parse

    grid = ["--methods", "random", "--n-samples", "40", "--folds", "2"]
    _, cells = parse(["--datasets", "xor,shapes,digits", *grid])
    assert {(c.dataset, c.n_decoys) for c in cells} == {
        ("xor", 100),
        ("xor", 1000),
        ("shapes", 0),
        ("shapes", 4),
        ("digits", None),
    }
    _, tables = parse(["--datasets", "xor", "--decoys", "100,1000", *grid])
    assert [c.cell_id for c in cells if c.dataset == "xor"] == [c.cell_id for c in tables]
    _, given = parse(["--datasets", "xor,shapes", "--decoys", "2", *grid])  # --decoys applies to every kind
    assert {(c.dataset, c.n_decoys) for c in given} == {("xor", 2), ("shapes", 2)}
    assert main(["--list"]) == 0
    assert "  --decoys                 100,1000 on tables, 0,4 on images" in capsys.readouterr().out.splitlines()
