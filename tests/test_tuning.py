"""The seeded MLP search: training rows only, deterministic, a budget of at least one trial."""

import dataclasses

import numpy as np
import pytest

from synthbench.models.tuning import config_of, search_mlp
from synthbench.protocol import cell_fold


def test_the_search_reads_no_held_out_row_and_repeats_itself_under_a_seed(monkeypatch):
    import synthbench.models.tuning as tuning

    data, _ = cell_fold("xor", n_samples=300, seed=11, n_folds=3, fold=0, n_decoys=4)
    seen = []
    train = tuning.train_mlp

    def spy(X, y, *, config, **kwargs):  # records what each trial trains on; 15 epochs keep the test short
        seen.append(X)
        return train(
            X, y, config=dataclasses.replace(config, train=dataclasses.replace(config.train, max_epochs=15)), **kwargs
        )

    monkeypatch.setattr(tuning, "train_mlp", spy)
    config, trials = search_mlp(data.X_train, data.y_train, budget=3, seed=0)
    training = {row.tobytes() for row in data.X_train}
    assert seen and all(row.tobytes() in training for X in seen for row in X)
    held = {row.tobytes() for row in data.X_test}
    assert not any(row.tobytes() in held for X in seen for row in X)
    assert len(trials) == 3 and config == config_of(max(trials, key=lambda t: t.accuracy).params)
    again, trials_again = search_mlp(data.X_train, data.y_train, budget=3, seed=0)
    assert again == config and [t.params for t in trials_again] == [t.params for t in trials]
    assert [t.accuracy for t in trials_again] == [t.accuracy for t in trials]


@pytest.mark.parametrize("budget", [0, -2])
def test_a_budget_below_one_trial_is_refused(budget):
    with pytest.raises(ValueError, match="at least 1 trial"):
        search_mlp(np.zeros((10, 2), dtype=np.float32), np.array([0, 1] * 5), budget=budget, seed=0)


def test_the_screened_space_starts_from_the_screened_preset_and_an_unknown_space_is_refused():
    from synthbench.models.presets import get_preset
    from synthbench.models.tuning import SPACES

    assert config_of(SPACES["screened"].first, "screened") == get_preset("screened_mlp").config
    with pytest.raises(ValueError, match="unknown search space"):
        search_mlp(np.zeros((10, 2), dtype=np.float32), np.array([0, 1] * 5), budget=1, seed=0, space="wide")
