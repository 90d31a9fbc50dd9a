"""The learnability ceiling, competence, and the booster they lean on (issue 31)."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from synthbench.models.competence import (
    Ceiling,
    check_threshold,
    competence,
    competent,
    learnability_ceiling,
    relevant_only,
)
from synthbench.protocol import FoldData, cell_fold


class _Fixed:
    """A 'model' answering fixed labels for the held-out rows (its class decided when it was fitted)."""

    classes_ = np.array([0, 1])

    def __init__(self, answers):
        self.answers = np.asarray(answers)

    def predict_proba(self, X):
        answers = np.resize(self.answers, len(X))  # the same ten answers for each block of ten rows
        return np.column_stack([1 - answers, answers]).astype(float)


def _hand_fold() -> FoldData:
    """100 held-out rows, ten blocks of six of class 1 then four of class 0 (chance 0.6); two relevant columns of
    five."""
    y_test = np.tile([1, 1, 1, 1, 1, 1, 0, 0, 0, 0], 10)
    X = np.zeros((100, 5), dtype=np.float32)
    relevant = np.array([False, True, False, True, False])
    return FoldData(X, y_test, X, y_test, X, y_test, relevant, None, seed=0, fold=0, bayes_accuracy=0.95)


def test_the_ceiling_and_competence_of_a_fold_pinned_by_hand():
    data = _hand_fold()
    seen = []

    def trainer(answers):
        def train(restricted):
            seen.append(restricted.X_train.shape)
            return _Fixed(answers)

        return train

    # the trees reach 9/10 and 7/10 on the relevant columns: the ceiling is 0.9, reached by "b"
    ceiling = learnability_ceiling(
        data, {"a": trainer([1, 1, 1, 0, 0, 0, 0, 0, 0, 0]), "b": trainer([1, 1, 1, 1, 1, 1, 1, 0, 0, 0])}
    )
    assert seen == [(100, 2), (100, 2)]  # each trained on the two relevant columns only
    assert (ceiling.accuracy, ceiling.model, ceiling.chance, ceiling.bayes_accuracy) == (0.9, "b", 0.6, 0.95)
    assert ceiling.auroc == pytest.approx(21 / 24)  # b's: every positive above 3 of the 4 negatives, tied with one
    # a model at 0.75 closes (0.75 - 0.6) / (0.9 - 0.6) = 0.5 of the gap
    assert competence(0.75, ceiling) == pytest.approx(0.5)
    assert competence(0.6, ceiling) == pytest.approx(0.0) and competence(0.9, ceiling) == pytest.approx(1.0)
    assert competent({"competence": 0.5}) and not competent({"competence": 0.49}) and competent({}) is None


def test_without_relevant_columns_the_ceiling_is_the_bayes_accuracy_and_without_either_it_is_unknown():
    data = dataclasses.replace(_hand_fold(), relevant=None)
    ceiling = learnability_ceiling(data, {"a": lambda d: pytest.fail("nothing to train on")})
    assert ceiling.accuracy is None and ceiling.value == 0.95
    assert competence(0.6 + 0.35 / 2, ceiling) == pytest.approx(0.5)
    unknown = learnability_ceiling(dataclasses.replace(data, bayes_accuracy=None), {})
    assert unknown.value is None and competence(0.9, unknown) is None


def test_a_fold_where_even_the_ceiling_is_at_chance_is_not_learnable_and_no_model_is_competent():
    # 167 held-out rows at chance 0.5: a ceiling must clear chance by two standard errors (0.077) to count
    ceiling = Ceiling(accuracy=0.57, auroc=None, model="gbm", bayes_accuracy=None, chance=0.5, n_test=167)
    assert ceiling.learnable is False and competence(0.99, ceiling) == 0.0
    assert dataclasses.replace(ceiling, accuracy=0.58).learnable


def test_relevant_only_keeps_the_truths_columns_in_the_folds_order():
    data = _hand_fold()
    data = dataclasses.replace(data, X_train=np.arange(500, dtype=np.float32).reshape(100, 5))
    assert relevant_only(data).X_train.tolist() == data.X_train[:, [1, 3]].tolist()


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, float("nan")])
def test_a_threshold_outside_the_open_unit_interval_is_refused(bad):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        check_threshold(bad)


def test_the_fold_records_competence_and_a_model_trained_on_shuffled_labels_is_flagged_incompetent():
    from conftest import registrations_undone

    from synthbench.models import SharedModels
    from synthbench.models.booster import train_fold_gbm
    from synthbench.models.shared import ModelKind, register_model

    data, _ = cell_fold("xor", n_samples=600, seed=0, n_folds=3, fold=0, n_decoys=8)
    learned = SharedModels(data)
    learned.get("gbm")
    info = learned.info["gbm"]
    assert info["ceiling_accuracy"] >= 0.95 and info["bayes_accuracy"] == 1.0 and info["chance"] > 0.45
    assert info["competence"] >= 0.8 and competent(info)
    # the ceiling is computed once per fold and shared by every kind
    learned.get("forest")
    assert learned.info["forest"]["ceiling_accuracy"] == info["ceiling_accuracy"]
    # a booster fitted on shuffled labels, judged against the fold's own ceiling
    with registrations_undone():
        register_model(
            ModelKind(
                "crippled",
                lambda d, s, replicate=0: train_fold_gbm(
                    dataclasses.replace(d, y_train=d.rng("shuffle").permutation(d.y_train)), s
                ),
                "gbm on shuffled labels",
            )
        )
        models = SharedModels(data)
        models.get("crippled")
    assert models.info["crippled"]["ceiling_accuracy"] == info["ceiling_accuracy"]
    assert models.info["crippled"]["competence"] < 0.3 and not competent(models.info["crippled"])


def test_ring_xor_sum_bayes_accuracy_matches_a_monte_carlo_of_its_noise():
    from synthbench.datasets.tables.nonlinear import ring_xor_sum_bayes, ring_xor_sum_label

    rng = np.random.default_rng(1)
    X = (2 * rng.random((400, 6)) - 1).astype(np.float32)
    bayes = ring_xor_sum_bayes(X)
    # the Bayes classifier answers the likelier class; count how often it is right over 4000 noise draws per row
    p1 = np.mean([ring_xor_sum_label(X, rng.normal(0, 0.2, 400)) for _ in range(4000)], axis=0)
    guess = (p1 >= 0.5).astype(int)
    right = np.where(guess == 1, p1, 1 - p1)
    assert np.abs(right - bayes).max() < 0.03
    assert 0.85 < bayes.mean() < 1.0


def test_the_store_gives_each_cell_its_competence_and_the_leaderboard_leaves_incompetent_ones_out(tmp_path):
    from synthbench.runner.execute import execute
    from synthbench.runner.grid import Cell
    from synthbench.runner.leaderboard import format_competence, format_leaderboard, leaderboard
    from synthbench.runner.store import ResultStore

    noise = (("flip_y", 1.0),)  # every label redrawn at random: nothing to learn, not even on the informative columns
    cells = [Cell("hypercube", 300, 20, 0, 3, f, m, dataset_params=noise) for f in range(2) for m in ("rf", "anova")]
    cells += [Cell("xor", 600, 8, 0, 3, 0, m) for m in ("gbm_gain", "anova")]
    with ResultStore(tmp_path / "r.sqlite") as store:
        assert execute(cells, store).failed == 0
        table, rows, catalogue = store.cells(), store.scores(), store.catalogue()
    for c in table.itertuples():
        if c.method == "anova":
            assert pd.isna(c.model) and pd.isna(c.competence)
        else:
            (kind,) = json.loads(c.model)
            info = json.loads(c.model)[kind]
            assert c.competence == info["competence"]
            assert (c.competence == 0.0) == (c.dataset == "hypercube")  # nothing learnable there
            assert c.flags == ""
    board = leaderboard(rows, catalogue=catalogue)
    assert board.loc["rf", "incompetent"] == 2 and board.loc["anova", "incompetent"] == 0
    assert np.isnan(board.loc["rf", "hypercube/20"])  # left out of the mean, the row kept
    assert board.loc["gbm_gain", "xor/8"] == 1.0 and board.loc["gbm_gain", "incompetent"] == 0
    assert "below 0.5" in format_leaderboard(board)
    shown = leaderboard(rows, catalogue=catalogue, all_models=True)
    assert not np.isnan(shown.loc["rf", "hypercube/20"]) and shown.loc["rf", "incompetent"] == 2
    printed = format_competence(table, catalogue)
    assert "forest" in printed and "gbm" in printed
    assert "no model here learns hypercube/20 at n = 300 (best: forest at competence 0.00 < 0.5" in printed


def test_a_setting_no_model_learns_is_named_with_the_smallest_sample_size_where_one_does():
    from synthbench.runner.competence import learnability

    rows = [
        ("gbm", "xor", "{}", n, 1000, fold, c)
        for n, cs in ((500, [0.1, 0.2]), (2000, [0.6, 0.7]), (4000, [0.9, 1.0]))
        for fold, c in enumerate(cs)
    ]
    rows += [("mlp@sparse_mlp", "xor", "{}", n, 1000, fold, 0.0) for n in (500, 2000, 4000) for fold in range(2)]
    rows += [("gbm", "ring", "{}", 500, 1000, 0, np.nan)]  # competence unknown: neither learnable nor not
    fits = pd.DataFrame(
        rows, columns=["model", "dataset", "dataset_params", "n_samples", "n_decoys", "fold", "competence"]
    )
    table = learnability(fits).set_index(["dataset", "n_samples"])
    assert table.loc[("xor", 500), ["best_model", "learnable", "learnable_at"]].tolist() == ["gbm", False, 2000]
    assert table.loc[("xor", 500), "best_competence"] == pytest.approx(0.15)
    assert table.loc[("xor", 4000), "learnable"] and table.loc[("ring", 500), "learnable"] is None


def test_with_a_disk_cache_every_task_of_a_fold_reads_the_ceiling_the_first_one_computed(tmp_path, monkeypatch):
    """The default run splits a fold into tasks by the models they need (the booster's, the network's), each in its
    own process: with the run's disk cache the ceiling's trainings run once per fold and preset (the network of the
    fold's preset takes part), not once per task."""
    from synthbench.models import SharedModels, TrainSettings, shared

    computed = []

    def counted(data, trainers):
        computed.append(data.fold)
        return learnability_ceiling(data, trainers)

    monkeypatch.setattr(shared, "learnability_ceiling", counted)
    settings = TrainSettings(cache_dir=str(tmp_path))
    folds = [cell_fold("ring", n_samples=300, seed=0, n_folds=3, fold=f, n_decoys=4)[0] for f in (0, 0, 1, 0)]
    presets = ("screened_mlp", "screened_mlp", "screened_mlp", "sparse_mlp")
    first, second, other, another = (SharedModels(d, settings, preset=p).ceiling for d, p in zip(folds, presets))
    assert computed == [0, 1, 0]  # the second task of fold 0 read it; fold 1 and another preset computed their own
    assert dataclasses.replace(second, seconds=0.0) == dataclasses.replace(first, seconds=0.0)
    assert second.seconds < first.seconds
    uncached = SharedModels(folds[0], preset="screened_mlp").ceiling  # no cache: computed, and the same
    assert dataclasses.replace(uncached, seconds=0.0) == dataclasses.replace(first, seconds=0.0)


def test_two_processes_asking_for_a_fold_s_ceiling_at_once_compute_it_once(tmp_path):
    """The second waits on the fold's lock while the first computes, then reads what it wrote."""
    import threading
    import time

    from synthbench.models.cache import cached_ceiling

    data = _hand_fold()
    calls, results = [], []
    start = threading.Barrier(2)

    def compute():
        calls.append(1)
        time.sleep(0.5)  # the other asker arrives meanwhile
        return Ceiling(0.9, 0.8, "gbm", 0.95, 0.6, 100, 0.5)

    def ask():
        start.wait()
        results.append(cached_ceiling(data, ["gbm"], compute, tmp_path))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert [dataclasses.replace(r, seconds=0.0) for r in results] == [Ceiling(0.9, 0.8, "gbm", 0.95, 0.6, 100, 0.0)] * 2
    # another set of kinds is another ceiling
    cached_ceiling(data, ["forest"], compute, tmp_path)
    assert len(calls) == 2


def test_no_model_stands_above_the_ceiling_beyond_fold_noise_the_network_taking_part():
    """On a ring the network beats both trees (its curved boundary), so a ceiling of the trees alone let the default
    run's screened network reach competence 1.17 on ring / 100. With the network of the fold's preset in the ceiling,
    every model's held-out accuracy is at most the ceiling plus the fold noise: two standard errors of the
    difference of two accuracies of that size on the fold's held-out rows, sqrt(2 c (1 - c) / n)."""
    from synthbench.models import SharedModels

    # fold 5 of ring / 30: the screened network 0.988 on its held-out rows, the trees' best on the two relevant
    # columns 0.922, two standard errors 0.059 above it
    data = cell_fold("ring", n_samples=1000, seed=0, n_folds=6, fold=5, n_decoys=30)[0]
    models = SharedModels(data, preset="screened_mlp")
    for kind in ("mlp", "gbm", "forest"):
        models.get(kind)
    ceiling = models.ceiling
    noise = 2 * np.sqrt(2 * ceiling.value * (1 - ceiling.value) / ceiling.n_test)
    for kind, info in models.info.items():
        allowed = 1 + noise / (ceiling.value - ceiling.chance)
        assert info["test_accuracy"] <= ceiling.value + noise and info["competence"] <= allowed, kind
    assert ceiling.model == "mlp:screened_mlp" and ceiling.value > ceiling.bayes_accuracy - 0.05


def test_with_its_setting_s_folds_the_ceiling_trains_their_relevant_only_networks_as_one_batch(tmp_path, monkeypatch):
    """The first fold that asks trains every fold's network on its relevant columns as one batch; the others read
    theirs from the cache, and each fold's ceiling is the one it computes alone."""
    from synthbench.models import SharedModels, Siblings, TrainSettings, neural
    from synthbench.protocol import setting_folds

    folds = setting_folds("ring", n_samples=300, seed=0, n_folds=3, n_decoys=4)
    batches: list[list[int]] = []
    train = neural.train_mlps

    def spied(members, **kwargs):
        batches.append([np.shape(m.X)[1] for m in members])
        return train(members, **kwargs)

    monkeypatch.setattr(neural, "train_mlps", spied)
    siblings = Siblings("ring, 300 rows", lambda: folds)
    settings = TrainSettings(cache_dir=str(tmp_path))
    ceilings = [SharedModels(f, settings, preset="screened_mlp", siblings=siblings).ceiling for f in folds]
    assert batches == [[2, 2, 2]]  # the three folds' networks on the two relevant columns, once
    for fold, ceiling in zip(folds, ceilings, strict=True):
        alone = SharedModels(fold, TrainSettings(), preset="screened_mlp").ceiling
        assert dataclasses.replace(ceiling, seconds=0.0) == dataclasses.replace(alone, seconds=0.0)
