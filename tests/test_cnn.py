"""The CNN model kind: deterministic for a seed, cached, and competent on shapes and digits."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from synthbench import datasets
from synthbench.models import SharedModels
from synthbench.models.cache import cached_train_many
from synthbench.models.cnn import CNNConfig, build_cnn, train_cnn, train_cnns
from synthbench.models.loop import MemberData
from synthbench.protocol import FoldData, dataset_folds

QUICK = CNNConfig.from_dict(dict(channels=(4, 8), hidden=8, max_epochs=3))


def _images(n=120, seed=0):
    ds = datasets.make("shapes", n_samples=n, n_decoys=1, seed=seed, size=12, patch=3)
    return ds.X, ds.y


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_same_seed_same_weights_and_the_global_generator_untouched():
    X, y = _images()
    state = torch.random.get_rng_state()
    a, b = train_cnn(X, y, config=QUICK, seed=3), train_cnn(X, y, config=QUICK, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    assert _same(a.module, b.module) and not _same(a.module, train_cnn(X, y, config=QUICK, seed=4).module)
    proba = a.predict_proba(X)
    assert proba.shape == (len(y), 2) and np.allclose(proba.sum(1), 1)
    again = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(again.predict_proba(X), proba)


def test_cache_loads_the_trained_cnn(tmp_path):
    X, y = _images()

    calls = []

    def counting(members, **k):
        calls.extend(m.seed for m in members)
        return train_cnns(members, **k)

    def cached(seed):
        return cached_train_many(counting, [MemberData(X, y, seed)], config=QUICK, cache_dir=tmp_path, n_classes=3)[0]

    first, second = cached(1), cached(1)
    assert calls == [1] and _same(first.module, second.module) and list(second.classes_) == [0, 1, 2]
    cached(2)
    assert calls == [1, 2]


def test_architecture_is_one_the_attribution_rules_walk():
    net = build_cnn((3, 32, 32), 4, generator=torch.Generator().manual_seed(0))
    kinds = [type(m).__name__ for m in net]
    assert kinds == [
        "Conv2d",
        "ReLU",
        "MaxPool2d",
        "Conv2d",
        "ReLU",
        "MaxPool2d",
        "Conv2d",
        "ReLU",
        "MaxPool2d",
        "Flatten",
        "Linear",
        "ReLU",
        "Linear",
    ]
    assert net(torch.zeros(2, 3, 32, 32)).shape == (2, 4)
    assert build_cnn((1, 8, 8), 10, CNNConfig(global_pool="avg"), generator=torch.Generator())(
        torch.zeros(1, 1, 8, 8)
    ).shape == (1, 10)
    with pytest.raises(ValueError, match="global_pool"):
        build_cnn((1, 8, 8), 2, CNNConfig(global_pool="mean"), generator=torch.Generator())
    with pytest.raises(ValueError, match="images"):
        train_cnn(np.zeros((10, 4), dtype=np.float32), np.zeros(10, dtype=np.int64), seed=0)


@pytest.mark.parametrize("name", ["shapes", "digits"])
def test_the_default_cnn_learns_shapes_and_digits(name):
    """Held-out accuracy of the default preset on fold 0 of 6, n = 1000 (shapes at its default 4 distractors)."""
    ds = datasets.make(name, n_samples=1000, seed=0)
    data = FoldData.from_dataset(ds, dataset_folds(ds, n_folds=6, seed=0)[0])
    models = SharedModels(data, preset="cnn")
    models.get("cnn")
    assert models.info["cnn"]["test_accuracy"] >= 0.95, models.info
