"""The report: tables and intervals against references, breakpoints, rank tests, the command and its bad input."""

import hashlib
import os
import re
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from PIL import Image
from scipy import stats

from synthbench.catalogue import Catalogue, ScorerInfo
from synthbench.report import (
    Results,
    breakpoints,
    build_report,
    decoy_table,
    load_results,
    mean_ci,
    model_table,
    pareto_front,
    rank_test,
    summary_table,
    write_report,
)
from synthbench.report.cli import main as report_main
from synthbench.runner import GridSpec, ResultStore
from synthbench.runner.execute import execute
from synthbench.runner.grid import Cell
from synthbench.runner.store import CellResult
from synthbench.scoring import get_metric, get_scorer

METHODS = ("random", "anova", "mrmr")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A real small grid: two datasets × decoys 0, 4, 30 × 3 folds × three fast methods."""
    path = tmp_path_factory.mktemp("report") / "r.sqlite"
    cells = GridSpec(("xor", "ring"), METHODS, (0, 4, 30), n_samples=150, n_folds=3).cells()
    with ResultStore(path) as db:
        execute(cells, db, command="test grid")
    return path


def _copy_without(store, tmp_path, where):
    """A copy of ``store`` without the cells matching the SQL condition ``where`` (and their scores); their ids."""
    partial = tmp_path / "partial.sqlite"
    partial.write_bytes(store.read_bytes())
    con = sqlite3.connect(partial)
    con.execute("PRAGMA foreign_keys = ON")
    gone = con.execute(f"SELECT cell_id FROM cells WHERE {where}").fetchall()
    con.execute(f"DELETE FROM cells WHERE {where}")
    con.commit()
    con.close()
    return partial, gone


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_mean_ci_is_the_student_t_interval_clipped_to_the_limits():
    v = np.array([0.2, 0.5, 0.9, 0.4])
    mean, lo, hi, n = mean_ci(v)
    ref = stats.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
    assert (mean, n) == (pytest.approx(v.mean()), 4) and (lo, hi) == pytest.approx(ref)
    _, lo, hi, _ = mean_ci(np.array([0.0, 1.0, 1.0]), limits=(0.0, 1.0))
    assert lo >= 0.0 and hi == 1.0
    assert np.isnan(mean_ci([0.7, np.nan])[1]) and mean_ci([0.7, np.nan])[0] == 0.7
    assert np.isnan(mean_ci([])[0])


def test_summary_means_match_the_stored_cells_and_counts_failed_skipped_missing(store, tmp_path):
    partial, gone = _copy_without(store, tmp_path, "method = 'mrmr' AND dataset = 'ring' AND n_decoys = 30")
    with ResultStore(partial) as db:
        db.write(CellResult(Cell("ring", 150, 30, 0, 3, 0, "mrmr"), "failed", "boom"))
        db.write(CellResult(Cell("ring", 150, 30, 0, 3, 1, "mrmr"), "skipped", "over the limit"))
    results = load_results(partial)
    table = summary_table(results)
    raw = results.scores[results.scores["metric"] == "best_k"]
    for method in METHODS:
        assert table.at[method, "best_k"] == pytest.approx(raw.loc[raw["method"] == method, "value"].mean())
    assert table.at["mrmr", "cells"] == 18 - len(gone)
    assert table.loc["mrmr", ["failed", "skipped", "missing"]].tolist() == [1, 1, 1]
    assert table.loc["anova", ["failed", "skipped", "missing"]].tolist() == [0, 0, 0]
    assert list(results.missing()[["method", "setting", "n_decoys", "fold"]].iloc[0]) == ["mrmr", "ring", 30, 2]
    ring = summary_table(results, setting="ring")
    assert ring.at["mrmr", "cells"] == 6
    curves = decoy_table(results)
    assert curves[(curves.method == "mrmr") & (curves.setting == "ring")]["n_decoys"].tolist() == [
        0,
        4,
    ]  # absent, not 0


def test_model_table_counts_each_folds_shared_model_once_and_flags_the_incompetent_ones(tmp_path):
    aurocs = {0: 0.55, 1: 0.70, 2: 0.45}  # the MLP of each fold; two methods explain each
    with ResultStore(tmp_path / "m.sqlite") as db:
        for fold, auroc in aurocs.items():
            mlp = {
                "mlp": {
                    "test_auroc": auroc,
                    "test_accuracy": 0.5,
                    "train_seconds": 1.0,
                    "competence": {0: 0.3, 1: 0.6, 2: 0.1}[fold],
                }
            }
            for method in ("saliency", "deeplift"):
                db.write(
                    CellResult(
                        Cell("xor", 150, 4, 0, 3, fold, method),
                        "ok",
                        scores={"best_k": 0.5},
                        chance={"best_k": 0.1},
                        seconds=1.0,
                        model=mlp,
                    )
                )
            db.write(
                CellResult(
                    Cell("xor", 150, 4, 0, 3, fold, "anova"),
                    "ok",
                    scores={"best_k": 1.0},
                    chance={"best_k": 0.1},
                    seconds=0.1,
                )
            )
        db.write(CellResult(Cell("xor", 150, 4, 0, 3, 0, "rf"), "failed", "boom"))
    results = load_results(tmp_path / "m.sqlite")
    table = model_table(results)
    assert table[["model", "setting", "n_decoys", "models", "incompetent"]].values.tolist() == [["mlp", "xor", 4, 3, 2]]
    row = table.iloc[0]
    assert (row["auroc"], row["auroc_lo"]) == pytest.approx(mean_ci(list(aurocs.values()), limits=(0, 1))[:2])
    assert row["methods"] == ["deeplift", "saliency"]
    md = build_report(results).markdown
    assert "**Did not learn, nothing to say:** `mlp` on [2 of 3](#models) fits (some on xor/4)" in md  # the summary
    section = md.split("## The models the methods explain")[1].split("## ")[0]
    assert "| mlp · xor " in section and "0.57 [" in section and "2 / 3" in section and "saliency" in section


def test_breakpoint_is_the_last_decoy_count_before_the_first_fall_below_the_level():
    rows = []
    for method, means in {"holds": [1, 0.95, 0.9], "falls": [1, 0.8, 0.95], "never": [0.5, 0.4, 0.3]}.items():
        rows += [(method, "s", d, m) for d, m in zip([0, 10, 100], means)]
    curves = pd.DataFrame(rows, columns=["method", "setting", "n_decoys", "mean"])
    points = breakpoints(curves, level=0.9).set_index("method")
    assert points.at["holds", "breakpoint"] == 100 and points.at["holds", "held_throughout"]
    assert (
        points.at["falls", "breakpoint"] == 0 and not points.at["falls", "held_throughout"]
    )  # no credit for recovering
    assert np.isnan(points.at["never", "breakpoint"]) and points.at["never", "smallest"] == 0


def test_pareto_front_keeps_methods_no_other_beats_on_both_time_and_quality():
    summary = pd.DataFrame(
        {
            "best_k": [0.2, 0.5, 0.4, 0.9, 0.9],
            "mean_rank": [9.0, 4.0, 5.0, 1.5, 1.0],
            "seconds": [0.01, 0.1, 1.0, 5.0, np.nan],
        },
        index=["a", "b", "c", "d", "e"],
    )
    assert pareto_front(summary, get_metric("best_k")).index.tolist() == ["a", "b", "d"]
    assert pareto_front(summary, get_metric("mean_rank")).index.tolist() == ["a", "b", "d"]  # lower is better here
    summary.loc["c", "mean_rank"] = 3.0
    assert pareto_front(summary, get_metric("mean_rank")).index.tolist() == ["a", "b", "c", "d"]


def _results_from_blocks(values: dict[str, list[float]]) -> Results:
    rows = [
        dict(
            cell_id=f"{m}{b}",
            method=m,
            setting="s",
            n_decoys=b,
            seed=0,
            fold=0,
            metric="best_k",
            value=v,
            chance=0.1,
            status="ok",
        )
        for m, vs in values.items()
        for b, v in enumerate(vs)
        if not np.isnan(v)
    ]
    scores = pd.DataFrame(rows)
    truth = get_scorer("ground_truth")
    return Results(
        scores=scores,
        cells=scores.drop(columns=["metric", "value", "chance"]),
        runs=pd.DataFrame(),
        path=None,
        catalogue=Catalogue({"ground_truth": ScorerInfo("ground_truth", truth.metrics)}),
    )


def test_rank_test_matches_scipy_and_scikit_posthocs_and_names_the_significant_pairs():
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 0.3, 12)
    values = {
        "best": list(base + 0.6),
        "middle": list(base + 0.3 + rng.normal(0, 0.2, 12)),
        "worst": list(base),
        "partial": [0.5] * 4 + [np.nan] * 8,
    }
    results = _results_from_blocks(values)
    test = rank_test(results)
    assert test.left_out == ["partial"] and test.blocks == 12
    assert test.ranks.index.tolist() == ["best", "middle", "worst"] and test.ranks["best"] == 1.0
    matrix = pd.DataFrame({m: values[m] for m in ("best", "middle", "worst")})
    assert (test.statistic, test.p_value) == pytest.approx(tuple(stats.friedmanchisquare(*matrix.T.to_numpy())))
    ref = sp.posthoc_nemenyi_friedman(matrix.to_numpy())
    assert test.pairwise.to_numpy() == pytest.approx(ref.to_numpy())
    assert ("best", "worst") in test.significant_pairs()
    assert "significantly better than" in test.sentence() and "worst" in test.sentence()
    assert "partial left out" in test.sentence()
    few = rank_test(_results_from_blocks({"a": [1.0], "b": [0.5], "c": [0.2]}))
    assert not few.tested and "Too little data" in few.sentence()


def test_report_files_are_self_contained_deterministic_and_leave_the_store_untouched(store, tmp_path):
    before = digest(store)
    assert report_main(["--store", str(store), "--out", str(tmp_path / "a")]) == 0
    # A second process with other string hashing: nothing may depend on the iteration order of a set of names.
    other = subprocess.run(
        [sys.executable, "-m", "synthbench.report", "--store", str(store), "--out", str(tmp_path / "b")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert other.returncode == 0, other.stderr
    assert digest(store) == before
    names = {"report.md", "report.html", "overview.png", "curves.png", "breakpoints.png", "cost.png", "cd.png"}
    assert {p.name for p in (tmp_path / "a").iterdir()} == names
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    for name in names - {"report.md", "report.html"}:
        with Image.open(tmp_path / "a" / name) as im:
            assert im.format == "PNG" and min(im.size) > 200
    html = (tmp_path / "a" / "report.html").read_text()
    assert re.findall(r'src="(?!data:image/png;base64,)', html) == [] and "http" not in html.replace("http-equiv", "")
    assert html.count("data:image/png;base64,") == 5
    md = (tmp_path / "a" / "report.md").read_text()
    for text in [
        "## What the store says",
        "## Overview",
        "## Leaderboard",
        'data-setting="xor"',
        'data-setting="ring"',
        "## Breakpoints",
        "Friedman test",
        "## Methods",
        "## Provenance",
        *METHODS,
    ]:
        assert text in md
    assert "No cell of this store explains a trained model" in md and "Near chance" not in md
    assert "test grid" in md and "cores" in md and "total wall time" in md


def test_a_partial_store_shows_missing_cells_as_missing(store, tmp_path):
    partial, _ = _copy_without(store, tmp_path, "method = 'mrmr' AND dataset = 'xor'")
    report = build_report(load_results(partial))
    xor = report.markdown.split('data-setting="xor"')[1].split("</details>")[0]
    row = next(line for line in xor.splitlines() if line.startswith("| [mrmr]"))
    assert "–" in row and row.rstrip(" |").endswith("9")  # no mean, 9 cells missing
    assert "| missing" in report.markdown.split("## Breakpoints")[1]  # mrmr has no xor breakpoint


def test_a_method_of_one_input_kind_is_never_missing_from_the_other(tmp_path):
    with ResultStore(tmp_path / "k.sqlite") as db:
        for fold in range(2):
            db.write(
                CellResult(
                    Cell("xor", 100, 3, 0, 2, fold, "anova"),
                    "ok",
                    scores={"best_k": 1.0},
                    chance={"best_k": 0.1},
                    seconds=0.1,
                )
            )
            db.write(
                CellResult(
                    Cell("shapes", 100, 2, 0, 2, fold, "sobel"),
                    "ok",
                    scores={"rank_accuracy": 0.2},
                    chance={"rank_accuracy": 0.1},
                    seconds=0.1,
                )
            )
        db.write(
            CellResult(
                Cell("shapes", 100, 2, 0, 2, 0, "random"),
                "ok",
                scores={"rank_accuracy": 0.1},
                chance={"rank_accuracy": 0.1},
                seconds=0.1,
            )
        )
    missing = load_results(tmp_path / "k.sqlite").missing()
    assert missing[["method", "setting", "fold"]].values.tolist() == [["random", "shapes", 1]]  # not sobel on xor


def test_a_store_without_a_finished_cell_still_reports_its_failures(tmp_path):
    with ResultStore(tmp_path / "f.sqlite") as db:
        db.write(CellResult(Cell("xor", 100, 3, 0, 2, 0, "random"), "failed", "boom"))
        db.write(CellResult(Cell("xor", 100, 3, 0, 2, 1, "anova"), "skipped", "over the limit"))
    written = write_report(build_report(load_results(tmp_path / "f.sqlite")), tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "report.md" in [p.name for p in written] and "Too little data" in md and "none (no finished cell)" in md
    rows = {
        line.split("|")[1].strip().split("]")[0][1:]: line
        for line in md.split("## Leaderboard")[1].split("<details")[0].splitlines()
        if line.startswith("| [random]") or line.startswith("| [anova]")
    }
    assert rows["random"].count("–") >= 3 and rows["random"].rstrip(" |").split("|")[-3].strip() == "1"  # failed
    assert rows["anova"].rstrip(" |").split("|")[-2].strip() == "1"  # over limit


@pytest.mark.parametrize("case", ["missing", "foreign", "empty", "unwritable"])
def test_bad_input_is_one_line_exit_2_and_nothing_written(case, store, tmp_path, capsys):
    out = tmp_path / "out"
    path = {
        "missing": tmp_path / "nope.sqlite",
        "foreign": tmp_path / "notes.txt",
        "empty": tmp_path / "empty.sqlite",
        "unwritable": store,
    }[case]
    if case == "foreign":
        path.write_text("hello\n")
    if case == "empty":
        ResultStore(path).close()
    if case == "unwritable":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "report"
    assert report_main(["--store", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("synthbench.report: error:") and err.count("\n") == 1
    assert not out.exists()


def test_a_failure_while_writing_leaves_the_folder_as_it_was(store, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    report = build_report(load_results(store))

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(report.figures["cost.png"]), "savefig", broken)
    with pytest.raises(OSError):
        write_report(report, out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_the_module_runs_as_a_command(store, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "synthbench.report",
            "--store",
            str(store),
            "--out",
            str(tmp_path / "r"),
            "--metrics",
            "auroc,best_k",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "auroc [95 % CI]" in (tmp_path / "r" / "report.md").read_text()
    bad = subprocess.run(
        [sys.executable, "-m", "synthbench.report", "--store", str(store), "--metrics", "nope"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "unknown" in bad.stderr


def test_rows_and_models_of_two_presets_are_never_pooled(tmp_path):
    aurocs = {"passemiers2023": 0.52, "sparse_mlp": 0.97}
    with ResultStore(tmp_path / "p.sqlite") as db:
        for fold in range(3):
            for preset, auroc in aurocs.items():
                mlp = {"mlp": {"test_auroc": auroc + 0.01 * fold, "test_accuracy": 0.5, "train_seconds": 1.0}}
                db.write(
                    CellResult(
                        Cell("xor", 150, 4, 0, 3, fold, "saliency", model=preset),
                        "ok",
                        scores={"best_k": auroc},
                        chance={"best_k": 0.1},
                        seconds=1.0,
                        model=mlp,
                    )
                )
            db.write(
                CellResult(
                    Cell("xor", 150, 4, 0, 3, fold, "anova"),
                    "ok",
                    scores={"best_k": 1.0},
                    chance={"best_k": 0.1},
                    seconds=0.1,
                )
            )
    results = load_results(tmp_path / "p.sqlite")
    summary = summary_table(results)
    assert summary.loc["saliency@passemiers2023", "best_k"] == pytest.approx(0.52)
    assert summary.loc["saliency@sparse_mlp", "best_k"] == pytest.approx(0.97)
    assert "saliency" not in summary.index and "anova" in summary.index
    table = model_table(results).set_index("model")
    assert table.loc["mlp@passemiers2023", "auroc"] == pytest.approx(0.53)
    assert table.loc["mlp@sparse_mlp", "auroc"] == pytest.approx(0.98)
    assert table.loc["mlp@sparse_mlp", "methods"] == ["saliency@sparse_mlp"]


def test_styles_never_repeat_and_families_group_the_rows():
    from synthbench.methods import METHODS, default_methods, get_method
    from synthbench.report.figures import entry_family, method_styles

    neural = [m for m in default_methods() if get_method(m).uses_preset]
    rows = [m for m in default_methods() if m not in neural] + ["lassonet", "fsnet"]
    rows += [f"{m}@{p}" for p in ("passemiers2023", "sparse_mlp") for m in neural]
    assert len(rows) >= 30
    known = {name: spec.family for name, spec in METHODS.items()}  # as a store records them
    styles = method_styles(rows, known)
    looks = [(s.color, s.marker) for s in styles.values()]
    assert len(set(looks)) == len(rows)  # no two rows look alike anywhere, so none within a panel
    assert entry_family("rf", known) == "classical" and entry_family("lassonet", known) == "neural selector"
    assert entry_family("saliency@sparse_mlp", known) == "attribution · sparse_mlp"
    assert entry_family("unknown@sparse_mlp", known) == "other · sparse_mlp"
    families = [entry_family(m, known) for m in styles]
    assert families == sorted(families, key=families.index)  # each family's rows are contiguous


def test_the_example_maps_show_the_images_of_the_fold_the_cells_ran_on(tmp_path):
    from synthbench.protocol import cell_fold
    from synthbench.report.tables import example_maps
    from synthbench.scoring.truth.localisation import pixel_masks

    grid = GridSpec(
        ("shapes",),
        ("random",),
        (1, 2),
        n_samples=40,
        n_folds=2,
        seed=3,
        explain="train",
        dataset_params={"shapes": {"size": 12}},
    )
    with ResultStore(tmp_path / "s.sqlite") as db:
        execute(grid.cells(), db)
    ((images, masks, maps),) = example_maps(load_results(tmp_path / "s.sqlite")).values()
    # The first fold of the most distractors, regenerated as the runner built it.
    data, _ = cell_fold(
        "shapes", n_samples=40, seed=3, n_folds=2, fold=0, n_decoys=2, dataset_params={"size": 12}, explain="train"
    )
    m = len(images)
    assert m == 4 and list(maps) == ["random"]
    np.testing.assert_array_equal(images, data.X_explain[:m])
    np.testing.assert_array_equal(masks, pixel_masks(data.relevant_local[:m]))


def test_provenance_names_a_plugin_only_for_the_datasets_a_plugin_registered():
    """A store holding a plugin's dataset and synthbench's own: the own one is not 'from the plugin nan'
    (pandas stores a missing plugin beside a named one as NaN)."""
    from synthbench.report import document
    from synthbench.report.results import _DATASET_COLUMNS

    info = pd.DataFrame.from_dict(
        {"bars": ["image", True, "f", "d", "/abs/my_plugins.py"], "shapes": ["image", True, "f", "d", None]},
        orient="index",
        columns=_DATASET_COLUMNS,
    )
    results = Results(scores=pd.DataFrame(), cells=pd.DataFrame(), runs=pd.DataFrame(), path="s.sqlite", datasets=info)
    assert document._plugin(results, "bars") == "/abs/my_plugins.py"
    assert document._plugin(results, "shapes") is None and document._plugin(results, "nope") is None
    assert (
        document._datasets_line(results)
        == "- datasets: bars (image, from the plugin `/abs/my_plugins.py`), shapes (image)"
    )
