"""The report's opening: the summary written from the store, the overview heatmap, cost split from the shared models'
training, the methods' descriptions, and the page's script."""

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle
from scipy import stats

from synthbench.report import build_report, figures, load_results, mean_ci, model_table, summary_table, tables
from synthbench.report.page import SCRIPT, html_page
from synthbench.report.study.validity import holm
from synthbench.report.summary import leaders, store_summary
from synthbench.runner import ResultStore
from synthbench.runner.grid import Cell
from synthbench.runner.leaderboard import leaderboard
from synthbench.runner.store import CellResult
from synthbench.scoring import get_metric

#: best_k of three methods over four folds: a and b cannot be told apart, c is far below.
VALUES = {"a": [0.90, 0.92, 0.88, 0.91], "b": [0.89, 0.93, 0.86, 0.90], "c": [0.10, 0.12, 0.09, 0.11]}


def _store(path, *, verdict=False):
    """xor with 4 decoys, four folds: methods a (saliency), b (deeplift), c (anova); the MLP of each fold trained in 8 s
    (a and b each ran 1 s more), fold 2's below the competence threshold. With ``verdict``, ROAD beside it on the same
    cells. The tests load it with every model (fold 2's cells averaged in, marked) unless they say otherwise."""
    names = {"a": "saliency", "b": "deeplift", "c": "anova"}
    with ResultStore(path) as db:
        for fold in range(4):
            mlp = {
                "mlp": {
                    "test_auroc": 0.55 if fold == 2 else 0.9,
                    "test_accuracy": 0.8,
                    "train_seconds": 8.0,
                    "competence": 0.1 if fold == 2 else 0.9,
                }
            }
            for key, method in names.items():
                explains = method != "anova"
                db.write(
                    CellResult(
                        Cell("xor", 150, 4, 0, 4, fold, method, model="sparse_mlp" if explains else None),
                        "ok",
                        scores={"best_k": VALUES[key][fold]},
                        chance={"best_k": 0.05},
                        seconds=9.0 if explains else 0.5,
                        model=mlp if explains else None,
                    )
                )
                if verdict:  # ROAD orders the methods as the truth does, a little noisily
                    gap = VALUES[key][fold] / 2 + 0.01 * fold
                    db.write(
                        CellResult(
                            Cell("xor", 150, 4, 0, 4, fold, method, scorer="road", model="sparse_mlp"),
                            "ok",
                            scores={"road_gap": gap},
                            chance={"road_gap": float("nan")},
                            seconds=9.0,
                            model=mlp,
                            scorer_seconds=2.0,
                        )
                    )
    return path


def test_a_methods_own_seconds_leave_out_the_shared_models_training(tmp_path):
    with ResultStore(_store(tmp_path / "s.sqlite"), readonly=True) as db:
        cells, rows, catalogue = db.cells().set_index("method"), db.scores(), db.catalogue()
    assert (
        cells.loc["saliency", "train_seconds"].tolist() == [8.0] * 4
        and (cells.loc["anova", "train_seconds"] == 0).all()
    )
    board = leaderboard(rows, catalogue=catalogue)  # the printed leaderboard too
    assert board.loc["saliency@sparse_mlp", "s/cell"] == pytest.approx(1.0) and board.loc["anova", "s/cell"] == 0.5
    # fold 2's MLP did not learn: its cells are left out of the means unless every model is asked for
    assert board.loc["saliency@sparse_mlp", "xor/4"] == pytest.approx(np.mean(np.delete(VALUES["a"], 2)))
    assert board.loc["saliency@sparse_mlp", "incompetent"] == 1 and board.loc["anova", "incompetent"] == 0
    every = leaderboard(rows, catalogue=catalogue, all_models=True)
    assert every.loc["saliency@sparse_mlp", "xor/4"] == pytest.approx(np.mean(VALUES["a"]))
    default = load_results(tmp_path / "s.sqlite")
    assert summary_table(default).loc["saliency@sparse_mlp", ["cells", "incompetent"]].tolist() == [3, 1]
    results = load_results(tmp_path / "s.sqlite", all_models=True)
    table = summary_table(results)
    assert table.loc["saliency@sparse_mlp", "seconds"] == pytest.approx(1.0)  # 9 s of which 8 s training the MLP
    assert table.loc["saliency@sparse_mlp", "model_seconds"] == pytest.approx(8.0)
    assert (table.loc["anova", "seconds"], table.loc["anova", "model_seconds"]) == pytest.approx((0.5, 0.0))
    fits = tables.model_fits(results)
    assert len(fits) == 4 and fits["train_seconds"].tolist() == [8.0] * 4  # once per fold, not once per cell
    assert fits["methods"].iloc[0] == ["deeplift@sparse_mlp", "saliency@sparse_mlp"]
    models = model_table(results)
    assert models[["models", "incompetent", "train_seconds", "accuracy"]].values.tolist() == [[4, 1, 8.0, 0.8]]
    assert models["competence"].iloc[0] == pytest.approx(0.7)
    # The cost figure puts each method at its own seconds.
    styles = figures.method_styles(results.methods, results.families)
    fig = figures.cost_quality(table, styles, metric=results.metric("best_k"))
    plotted = {round(float(x), 3) for line in fig.axes[0].lines for x in np.atleast_1d(line.get_xdata())}
    assert {1.0, 0.5} <= plotted and 9.0 not in plotted
    md = build_report(results).markdown
    board = md.split("## Leaderboard")[1].split("\n\n", 3)[2]
    row = next(line for line in board.splitlines() if line.startswith("| [saliency@sparse_mlp]"))
    assert "method s / cell" in board and "+ model training s" in board and "| 1 " in row and "| 8 " in row
    models_md = md.split("## The models the methods explain")[1].split("## ")[0]
    assert "training s / fit" in models_md and re.search(r"\| 0\.800 +\| 8 +\| 0\.70 +\| – +\| – +\| 1 / 4", models_md)
    cost = md.split("## Cost against quality")[1].split("## ")[0]
    assert "method's own mean wall seconds" in cost and "`mlp@sparse_mlp` 8 s per fit (4 fits)" in cost


def test_the_leaders_are_the_best_mean_and_those_a_paired_holm_corrected_test_cannot_tell_apart(tmp_path):
    results = load_results(_store(tmp_path / "s.sqlite"), all_models=True)
    found = leaders(results, "best_k", "xor")
    assert found.best == "saliency@sparse_mlp" and found.tied == ["deeplift@sparse_mlp"] and found.below == 1
    raw = {m: stats.ttest_rel(VALUES[k], VALUES["a"]).pvalue for m, k in (("deeplift@sparse_mlp", "b"), ("anova", "c"))}
    assert found.p == pytest.approx({"anova": 2 * raw["anova"], "deeplift@sparse_mlp": raw["deeplift@sparse_mlp"]})
    assert holm({"x": 0.01, "y": 0.04, "z": 0.03}) == pytest.approx({"x": 0.03, "y": 0.06, "z": 0.06})
    assert holm({"x": 0.5, "y": 0.9}) == pytest.approx({"x": 1.0, "y": 1.0})


def test_the_summary_is_written_from_the_data_and_every_value_links_to_its_table(tmp_path):
    results = load_results(_store(tmp_path / "s.sqlite", verdict=True), all_models=True)
    text = store_summary(results)
    mean, lo, hi, _ = mean_ci(VALUES["a"], limits=(0, 1))
    assert (
        f"[saliency@sparse_mlp](#method-saliency) leads with [{mean:.2f} [{lo:.2f}, {hi:.2f}]](#part1-setting-xor)"
        in text
    )
    assert "not significantly apart from it" in text and "[deeplift@sparse_mlp](#method-deeplift)" in text
    assert "1 other is significantly below" in text
    assert "`mlp@sparse_mlp` on [1 of 4](#part1-models) fits (some on xor/4) fell below a competence of 0.5" in text
    assert "road `road_gap` agrees with the ground truth: mean rank correlation ρ [+1.00" in text
    assert "(#trust) over 1 of 1 settings" in text
    assert "[24 cells (24 finished, 0 failed, 0 skipped, 0 missing) of 4 method entries" in text
    assert "Training the shared models took [32 s](#part1-cost) (4 fits" in text
    unlinked = re.sub(r"\[([^\]]|\[[^\]]*\])*\]\(#[^)]+\)", "", text)  # every link (its text may hold [lo, hi])
    assert re.findall(r"\d\.\d\d", unlinked.replace("α = 0.05", "")) == []  # no value outside a link
    md = build_report(results).markdown
    for target in set(re.findall(r"\]\(#([^)]+)\)", text)):  # every link lands on an id of the page
        assert f'id="{target}"' in md, target


def test_the_overview_marks_chance_incompetent_models_and_orders_the_rows(tmp_path):
    results = load_results(_store(tmp_path / "s.sqlite"), all_models=True)
    table = tables.overview_table(results, "best_k")
    assert table.set_index("method").loc[
        "deeplift@sparse_mlp", ["mean", "cells", "incompetent"]
    ].tolist() == pytest.approx([np.mean(VALUES["b"]), 4, 1])
    assert (table["chance"] == 0.05).all()
    order = ["anova", "saliency@sparse_mlp", "deeplift@sparse_mlp"]
    fig = figures.overview_heatmap(table, metric=get_metric("best_k"), methods=order)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == order
    assert [t.get_text() for t in ax.get_xticklabels()] == ["xor/4\nchance 0.05"]
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    assert [(p.get_x(), p.get_y()) for p in hatched] == [(-0.5, 0.5), (-0.5, 1.5)]  # the two methods on the MLP
    greyed = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_hatch()]
    assert greyed == []  # anova's 0.10 is above 0.05 with an interval that does not reach it
    low = table.assign(chance=0.2)  # now anova's interval reaches chance
    ax = figures.overview_heatmap(low, metric=get_metric("best_k"), methods=order).axes[0]
    assert [(p.get_x(), p.get_y()) for p in ax.patches if isinstance(p, Rectangle) and not p.get_hatch()] == [
        (-0.5, -0.5)
    ]


def test_the_overview_stays_readable_with_forty_methods():
    methods = [f"method_{i:02d}@sparse_mlp" for i in range(40)]
    columns = [("ring", 100), ("ring", 1000), ("xor", 100), ("xor", 1000), ("ring_xor", 100), ("ring_xor", 1000)]
    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        [(m, s, d, v, v - 0.1, v + 0.1, 0.05, 6, 0) for m in methods for s, d in columns for v in [rng.uniform()]],
        columns=["method", "setting", "n_decoys", "mean", "lo", "hi", "chance", "cells", "incompetent"],
    )
    fig = figures.overview_heatmap(table, metric=get_metric("best_k"), methods=methods)
    ax = fig.axes[0]
    assert len(ax.get_yticklabels()) == 40 and min(t.get_fontsize() for t in ax.get_yticklabels()) >= 7
    height = fig.get_size_inches()[1] * ax.get_position().height
    assert height / 40 >= 0.2  # at least a fifth of an inch per row
    assert len(ax.texts) == 240  # every value written


def test_the_methods_section_says_what_each_method_computes_with_its_parameters_and_reference(tmp_path):
    md = build_report(load_results(_store(tmp_path / "s.sqlite"))).markdown
    section = md.split("## Methods")[1].split("## ")[0]
    entry = re.search(r'<dt id="method-saliency" data-method="saliency" data-family="attribution">.*?</dd>', section)
    assert entry and "input gradient" in entry.group(0) and "Parameters: tabular: <code>{}</code>" in entry.group(0)
    assert "Reference: Simonyan" in entry.group(0)
    assert section.index('id="method-anova"') < section.index('id="method-saliency"')  # classical first


def test_the_page_is_one_file_with_a_small_inline_script_and_no_address_outside():
    page = html_page("# title\n\n| method | x |\n|---|---|\n| a | 1 |\n", {})
    assert page.count("<script>") == 1 and "src=" not in page and len(SCRIPT) < 8000
    assert not re.search(r"https?:|//[a-z]", page.replace('content="width=device-width', ""))
