"""Input kinds: one registered entry per kind, and every default in it names something that exists for that kind."""

from __future__ import annotations

import numpy as np
import pytest

from synthbench.datasets import KINDS, input_kind
from synthbench.kinds import INPUT_KINDS, get_kind
from synthbench.models import model_kind
from synthbench.scoring import get_scorer


@pytest.mark.parametrize("name", INPUT_KINDS.names())
def test_each_kinds_defaults_name_what_exists_for_that_kind(name):
    kind = get_kind(name)
    assert name in model_kind(kind.default_model).inputs  # the model a method that explains none is judged on
    assert name in get_scorer("ground_truth").metrics[kind.headline_metric].kinds  # the leaderboard's metric
    assert all(int(c) >= 0 for c in kind.default_decoys.split(","))
    assert input_kind(np.zeros((3,) * kind.ndim, dtype=np.float32)) == name  # inputs of its shape are of this kind


def test_the_datasets_kinds_are_the_registered_ones_and_an_unknown_kind_names_the_valid_ones():
    assert KINDS == tuple(INPUT_KINDS.names()) == ("tabular", "image")
    with pytest.raises(KeyError, match="tabular"):
        get_kind("text")
    with pytest.raises(ValueError, match="tables or"):
        input_kind(np.zeros((2, 3, 4)))
