"""Controls: the ``input`` control, and every method's chance measured on its own model (issue 22 §3).

Under a scorer that judges the explained model (ROAD, ROAR, KAR) a control is judged on each model
the grid's methods explain, so ``rf`` (the forest) is set beside ``random@forest``, never beside
the control measured on the MLP.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fold_of

from synthbench import datasets
from synthbench.methods import default_methods, get_method, run_method
from synthbench.models import SharedModels
from synthbench.runner.grid import GridSpec
from synthbench.scoring import explained_kind
from synthbench.scoring.removal.retrain import RetrainScorer


def test_the_input_control_maps_are_the_explained_inputs():
    spec = get_method("input")
    assert spec.control and "input" in default_methods() and spec.inputs == ("tabular", "image")
    assert all(get_method(m).control for m in ("random", "sobel")) and not get_method("mrmr").control
    for ds in (
        datasets.make("xor", n_samples=60, n_decoys=2, seed=0),
        datasets.make("shapes", n_samples=24, n_decoys=1, seed=0, size=12),
    ):
        data = fold_of(ds)
        out = run_method(spec, data, SharedModels(data))
        assert out.local.shape == data.X_explain.shape and out.local.dtype == np.float64
        np.testing.assert_array_equal(out.local, data.X_explain)  # signed, as given
        np.testing.assert_allclose(out.scores, np.abs(data.X_explain.astype(np.float64)).mean(axis=0))


def test_a_control_gets_a_cell_on_each_model_the_grid_explains_and_runs_beside_its_methods():
    grid = GridSpec(
        ("xor",),
        ("rf", "treeshap", "random", "mrmr", "saliency"),
        (2,),
        n_samples=200,
        n_folds=2,
        scorers=("ground_truth", "road"),
    )
    cells = grid.cells()
    judged = [c for c in cells if c.judged is not None]
    assert [(c.method, c.scorer, c.judged, c.model, c.label) for c in judged] == [
        ("random", "road", "forest", None, "random@forest")
    ] * 2  # one per fold: not mrmr, not under ground_truth
    plain = [c for c in cells if c.method == "random" and c.scorer == "road" and c.judged is None]
    assert [c.model for c in plain] == ["passemiers2023_corrected"] * 2  # the MLP cell per preset, as before
    assert "judged" in judged[0].config() and "judged" not in plain[0].config()
    assert judged[0].cell_id not in {c.cell_id for c in cells if c is not judged[0]}
    assert explained_kind(judged[0].spec, "tabular") == judged[0].judged_model == "forest"
    assert plain[0].judged_model == "mlp" and [c for c in cells if c.scorer == "ground_truth"][0].judged_model is None
    forest_task = next(t for t in GridSpec.tasks(cells) if judged[0] in t.cells)
    assert {c.label for c in forest_task.cells} == {"rf", "treeshap", "random@forest"}  # one forest for all of them
    alone = GridSpec(("xor",), ("random", "saliency"), (2,), n_samples=200, n_folds=2, scorers=("road",)).cells()
    assert not [c for c in alone if c.judged]  # nothing but preset models explained: no extra cell
    with pytest.raises(ValueError, match="explains the 'forest' model"):
        get_method("rf").judged_on("tabular", "mlp")


def test_roar_retrains_the_forest_for_a_control_judged_on_it(monkeypatch):
    data = fold_of(datasets.make("xor", n_samples=120, n_decoys=2, seed=0))
    models = SharedModels(data)
    kinds = []
    train_many_on = models.train_many_on
    monkeypatch.setattr(
        models, "train_many_on", lambda kind, *a, **kw: kinds.append(kind) or train_many_on(kind, *a, **kw)
    )
    spec = get_method("random").judged_on("tabular", "forest")
    scores = RetrainScorer(fractions=(0.5,), repeats=1, random_masks="epoch").score(
        run_method(spec, data, models), data, spec, models
    )
    assert kinds == ["forest"] and set(models.info) == {"forest"}  # no MLP trained; no epochs to redraw in
    clean = np.mean(models.get("forest").predict(data.X_test) == data.y_test)
    assert scores.curves["roar"].values[0, 0] == clean


@pytest.fixture(scope="module")
def road_store(tmp_path_factory):
    """A tiny ROAD grid with a forest method, an MLP method and the controls, run into a store."""
    from synthbench.runner.execute import execute
    from synthbench.runner.store import ResultStore

    path = tmp_path_factory.mktemp("controls") / "r.sqlite"
    grid = GridSpec(
        ("xor",),
        ("rf", "anova", "random", "input"),
        (2,),
        n_samples=200,
        n_folds=2,
        seed=3,
        scorers=("road",),
        scorer_options={"fractions": (0.3, 0.7)},
    )
    with ResultStore(path) as store:
        assert execute(grid.cells(), store).failed == 0
        rows = store.scores()
    return path, rows


def test_the_forest_methods_chance_is_the_control_judged_on_the_forest(road_store):
    from synthbench.report import load_results, summary_table
    from synthbench.runner.leaderboard import format_leaderboard, leaderboard
    from synthbench.runner.store import ResultStore

    path, rows = road_store
    gap = rows[rows["metric"] == "road_gap"]
    on_forest = gap.loc[(gap["method"] == "random") & (gap["judged"] == "forest"), "value"].mean()
    on_mlp = gap.loc[(gap["method"] == "random") & gap["model_preset"].notna(), "value"].mean()
    assert not np.isclose(on_forest, on_mlp)  # the two controls differ, so pairing with the wrong one shows
    summary = summary_table(load_results(path), metrics=("road_gap",))
    assert summary.loc["rf", "road_gap_chance"] == pytest.approx(on_forest)
    assert summary.loc["anova@passemiers2023_corrected", "road_gap_chance"] == pytest.approx(on_mlp)
    with ResultStore(path, readonly=True) as store:
        board = leaderboard(rows, "road_gap", catalogue=store.catalogue())
    assert board.loc["chance@forest", "xor/2"] == pytest.approx(on_forest)
    assert board.loc["chance@passemiers2023_corrected", "xor/2"] == pytest.approx(on_mlp)
    assert {"random@forest", "input@forest", "rf"} <= set(board.index)
    text = format_leaderboard(board, "road_gap")
    assert "Controls input, random do as well as " in text and " of 2 methods on `road_gap`" in text
    with ResultStore(path, readonly=True) as store:  # the forest control was judged on rf's own forest
        curves = store.curves().merge(store.cells()[["cell_id", "method", "judged", "fold"]], on="cell_id")
    clean = curves[(curves["x"] == 0) & (curves["curve"] == "morf")]
    by = clean.assign(who=clean["method"] + clean["judged"].fillna("")).set_index(["fold", "who"])["value"]
    for fold in (0, 1):
        assert by[(fold, "randomforest")] == by[(fold, "rf")]


def test_the_report_says_whether_the_controls_do_as_well_as_the_methods(road_store):
    from synthbench.report import build_report, load_results

    md = build_report(load_results(road_store[0])).markdown
    assert "on each method's own model" in md
    line = next(x for x in md.splitlines() if x.startswith("Controls input, random do as well as"))
    assert "of 2 methods on `road_gap`" in line
    assert "| [random@forest](#method-random)" in md and "| [input@forest](#method-input)" in md
