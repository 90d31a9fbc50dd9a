"""Tests of the training modules (models.loop, models.mlp, models.networks, models.cache): determinism, early
stopping, learning, pickling, cache."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score

from synthbench import datasets
from synthbench.models import cache, loop, mlp, networks
from synthbench.models.cache import cached_train_many
from synthbench.models.device import select_device, torch_threads
from synthbench.models.layers import GaussianNoise
from synthbench.models.loop import MemberData
from synthbench.models.mlp import MLPConfig, TrainedMLP, train_mlp, train_mlps

# Short runs for the tests that do not need a converged model.
QUICK = MLPConfig.from_dict(dict(max_epochs=8, patience=100))


def _linear_problem(n: int = 300, p: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """An easy, linearly separable problem: ``y = [x0 + x1 > 0]``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, p)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    return X, y


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key].cpu(), sb[key].cpu()), key


@pytest.fixture(scope="module")
def easy_model() -> tuple[np.ndarray, np.ndarray, TrainedMLP]:
    X, y = _linear_problem()
    return X, y, train_mlp(X, y, config=MLPConfig.from_dict(dict(lr=5e-3)), seed=0)


# ---------------------------------------------------------------- device selection


def test_select_device_cpu_and_auto() -> None:
    assert select_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert select_device("auto").type == expected
    assert select_device().type == expected
    assert select_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("name", ["cuda", "cuda:0"])
def test_select_device_cuda_unavailable(name: str) -> None:
    with pytest.raises(ValueError, match="CUDA is not available"):
        select_device(name)


@pytest.mark.parametrize("name", ["gpu", "tpu", "", "cuda:x"])
def test_select_device_unknown(name: str) -> None:
    with pytest.raises(ValueError):
        select_device(name)


def test_train_rejects_bad_input() -> None:
    X, y = _linear_problem(n=20, p=3)
    with pytest.raises(ValueError, match="integer class labels"):
        train_mlp(X, y - 1, seed=0, config=QUICK)
    with pytest.raises(ValueError, match="integer class labels"):
        train_mlp(X, y + 0.5, seed=0, config=QUICK)
    with pytest.raises(ValueError, match="shape"):
        train_mlp(X, y[:-1], seed=0, config=QUICK)
    with pytest.raises(ValueError, match="2-D"):
        train_mlp(X[:, 0], y, seed=0, config=QUICK)
    with pytest.raises(ValueError, match="positive"):
        train_mlp(X, y, seed=0, config=MLPConfig.from_dict(dict(max_epochs=0)))
    with pytest.raises(ValueError, match="too few"):
        train_mlp(X[:1], y[:1], seed=0, config=QUICK)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            train_mlp(X, y, seed=0, config=QUICK, device="cuda")


# ---------------------------------------------------------------- determinism


def test_same_seed_bit_identical() -> None:
    X, y = _linear_problem()
    a = train_mlp(X, y, config=QUICK, seed=3)
    b = train_mlp(X, y, config=QUICK, seed=3)
    _assert_same_weights(a.module, b.module)
    assert a.history == b.history
    np.testing.assert_array_equal(a.validation_indices, b.validation_indices)


def test_different_seeds_differ() -> None:
    X, y = _linear_problem()
    a = train_mlp(X, y, config=QUICK, seed=3)
    b = train_mlp(X, y, config=QUICK, seed=4)
    assert not torch.equal(a.module[1].weight, b.module[1].weight)
    assert not np.array_equal(a.validation_indices, b.validation_indices)


def test_global_state_untouched() -> None:
    X, y = _linear_problem(n=100)
    threads = torch.get_num_threads()
    rng_state = torch.get_rng_state()
    train_mlp(X, y, config=MLPConfig.from_dict(dict(max_epochs=2)), seed=0)
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.get_rng_state(), rng_state)


def test_torch_threads_restores() -> None:
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before


# ---------------------------------------------------------------- early stopping, validation split


def test_validation_split(easy_model: tuple[np.ndarray, np.ndarray, TrainedMLP]) -> None:
    X, _, model = easy_model
    idx = model.validation_indices
    assert len(idx) == int(np.ceil(0.2 * len(X)))  # like train_test_split(test_size=0.2)
    assert len(np.unique(idx)) == len(idx) and idx.min() >= 0 and idx.max() < len(X)
    assert np.all(np.diff(idx) > 0)


def test_early_stopping_restores_best(easy_model: tuple[np.ndarray, np.ndarray, TrainedMLP]) -> None:
    X, y, model = easy_model
    val = model.history["val_loss"]
    assert len(val) == len(model.history["train_loss"]) == model.epochs_run
    assert model.epochs_run < model.config.train.max_epochs
    assert model.best_epoch == int(np.argmin(val))
    # Default rule (the 2023 benchmark's): stop after `patience` epochs in a row that do not
    # beat their predecessor, and not earlier.
    patience = model.config.train.patience
    assert model.config.train.stopping == "previous"
    worse = [val[i] >= val[i - 1] for i in range(1, len(val))]
    assert all(worse[-patience:])
    assert not any(all(worse[i : i + patience]) for i in range(len(worse) - patience))
    # "best" rule: stop exactly `patience` epochs after the best one.
    strict = train_mlp(X, y, config=MLPConfig.from_dict(dict(lr=5e-3, stopping="best")), seed=0)
    assert strict.epochs_run == strict.best_epoch + 1 + patience
    assert min(strict.history["val_loss"][strict.best_epoch + 1 :]) >= strict.history["val_loss"][strict.best_epoch]
    # The returned weights are the best epoch's: recompute its validation loss.
    idx = model.validation_indices
    assert not model.module.training
    with torch.no_grad():
        logits = model.module(torch.from_numpy(X[idx])).reshape(-1)
        loss = F.binary_cross_entropy_with_logits(logits, torch.from_numpy(y[idx]).float()).item()
    assert loss == pytest.approx(min(val), rel=1e-6, abs=1e-7)
    # ... and not the last epoch's (whose loss is higher).
    assert loss < val[-1]


def test_noise_only_in_training(easy_model: tuple[np.ndarray, np.ndarray, TrainedMLP]) -> None:
    X, _, model = easy_model
    noise = model.module[0]
    assert isinstance(noise, GaussianNoise) and noise.sigma > 0
    assert noise.generator is None  # restored after training
    p1 = model.predict_proba(X)
    np.testing.assert_array_equal(p1, model.predict_proba(X))  # eval mode: no noise
    x = torch.from_numpy(X[:5])
    assert torch.equal(noise(x), x)
    noise.train()
    try:
        assert not torch.equal(noise(x), x)
    finally:
        noise.eval()


def test_noise_is_used_in_training() -> None:
    X, y = _linear_problem(n=100)
    with_noise = train_mlp(X, y, config=MLPConfig.from_dict(dict(max_epochs=3, noise_sigma=0.1)), seed=0)
    without = train_mlp(X, y, config=MLPConfig.from_dict(dict(max_epochs=3, noise_sigma=0.0)), seed=0)
    # Same initialisation and split; the training differs only through the noise draws.
    np.testing.assert_array_equal(with_noise.validation_indices, without.validation_indices)
    assert with_noise.history["train_loss"] != without.history["train_loss"]


# ---------------------------------------------------------------- learning, prediction API


def test_learns_xor() -> None:
    ds = datasets.make("xor", n_samples=1000, n_decoys=10, seed=0)
    n_train = 800
    # The benchmark's own settings and initialisation learn xor for every one of these seeds.
    for seed in range(3):
        model = train_mlp(ds.X[:n_train], ds.y[:n_train], config=MLPConfig(), seed=seed)
        proba = model.predict_proba(ds.X[n_train:])
        assert roc_auc_score(ds.y[n_train:], proba[:, 1]) > 0.9, seed


def test_predict_api(easy_model: tuple[np.ndarray, np.ndarray, TrainedMLP]) -> None:
    X, y, model = easy_model
    np.testing.assert_array_equal(model.classes_, [0, 1])
    proba = model.predict_proba(X)
    assert proba.shape == (len(X), 2) and proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all((proba >= 0) & (proba <= 1))
    pred = model.predict(X)
    assert pred.shape == (len(X),)
    np.testing.assert_array_equal(pred, (proba[:, 1] > 0.5).astype(int))
    assert np.mean(pred == y) > 0.9
    # Batched prediction agrees with one big batch.
    old = networks.PREDICT_BATCH
    networks.PREDICT_BATCH = 7
    try:
        np.testing.assert_allclose(model.predict_proba(X), proba, rtol=1e-6, atol=1e-7)
    finally:
        networks.PREDICT_BATCH = old
    with pytest.raises(ValueError, match="shape"):
        model.predict_proba(X[:, :3])


def test_pickle_round_trip(easy_model: tuple[np.ndarray, np.ndarray, TrainedMLP]) -> None:
    X, _, model = easy_model
    rng_state = torch.get_rng_state()
    clone = pickle.loads(pickle.dumps(model))
    assert torch.equal(torch.get_rng_state(), rng_state)
    _assert_same_weights(model.module, clone.module)
    assert not clone.module.training
    assert clone.device == torch.device("cpu")
    assert clone.history == model.history and clone.best_epoch == model.best_epoch
    assert clone.config == model.config
    np.testing.assert_array_equal(clone.predict_proba(X), model.predict_proba(X))


# ---------------------------------------------------------------- disk cache


_CALLS: list[int] = []


def _counting_train_mlps(members, **kwargs):
    """train_mlps that records each member's seed (the cache keys a trainer by its module and name)."""
    _CALLS.extend(m.seed for m in members)
    return train_mlps(members, **kwargs)


def _cached(trainer, X, y, *, seed, config=QUICK, **kwargs):
    (model,) = cached_train_many(trainer, [MemberData(X, y, seed)], config=config, **kwargs)
    return model


def test_cache_loads_instead_of_training(tmp_path) -> None:
    X, y = _linear_problem(n=120)
    _CALLS.clear()
    first = _cached(_counting_train_mlps, X, y, seed=1, device="cpu", cache_dir=tmp_path)
    assert _CALLS == [1]
    second = _cached(_counting_train_mlps, X, y, seed=1, device="cpu", cache_dir=tmp_path)
    assert _CALLS == [1]  # loaded, not trained
    _assert_same_weights(first.module, second.module)
    assert second.history == first.history
    # float64 input with the same values hits the same entry.
    _cached(_counting_train_mlps, X.astype(np.float64), y, seed=1, device="cpu", cache_dir=tmp_path)
    assert _CALLS == [1]
    # Any change of seed, config or data trains anew.
    _cached(_counting_train_mlps, X, y, seed=2, device="cpu", cache_dir=tmp_path)
    _cached(
        _counting_train_mlps,
        X,
        y,
        config=MLPConfig.from_dict(dict(max_epochs=8, patience=100, lr=1e-3)),
        seed=1,
        cache_dir=tmp_path,
    )
    X2 = X.copy()
    X2[0, 0] += 1.0
    _cached(_counting_train_mlps, X2, y, seed=1, device="cpu", cache_dir=tmp_path)
    assert _CALLS == [1, 2, 1, 1]
    # another trainer is another entry
    _cached(train_mlps, X, y, seed=3, device="cpu", cache_dir=tmp_path)
    _cached(_counting_train_mlps, X, y, seed=3, device="cpu", cache_dir=tmp_path)
    assert _CALLS == [1, 2, 1, 1, 3]


def test_a_batch_is_read_from_the_cache_only_whole(tmp_path) -> None:
    """Which members share a batch never depends on the cache: one member missing trains the whole batch again."""
    X, y = _linear_problem(n=120)
    _CALLS.clear()
    batch = [MemberData(X, y, 1), MemberData(X, y, 2)]
    first = cached_train_many(_counting_train_mlps, batch, config=QUICK, cache_dir=tmp_path)
    again = cached_train_many(_counting_train_mlps, batch, config=QUICK, cache_dir=tmp_path)
    assert _CALLS == [1, 2]
    _assert_same_weights(first[1].module, again[1].module)
    cached_train_many(_counting_train_mlps, [*batch, MemberData(X, y, 3)], config=QUICK, cache_dir=tmp_path)
    assert _CALLS == [1, 2, 1, 2, 3]


def test_cache_key_uses_device_type(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = _linear_problem(n=60)
    keys: list[tuple] = []
    real = cache._train_cached

    def spy(
        trainer_name,
        X_train,
        y_train,
        config,
        seed,
        n_classes,
        device_type,
        torch_version,
        training_version,
        device,
        trained,
    ):
        keys.append((trainer_name, n_classes, device_type, torch_version, training_version, str(device)))
        return real(
            trainer_name,
            X_train,
            y_train,
            config,
            seed,
            n_classes,
            device_type,
            torch_version,
            training_version,
            device,
            trained,
        )

    # joblib keys on the cached function's name and code, so wrap the one cached_train_many uses.
    spy.__name__ = real.__name__
    monkeypatch.setattr(cache, "_train_cached", spy)
    _cached(train_mlps, X, y, seed=0, device="cpu", cache_dir=tmp_path)
    assert keys == [("synthbench.models.mlp.train_mlps", None, "cpu", torch.__version__, loop.TRAINING_VERSION, "cpu")]


def test_no_cache_dir_trains() -> None:
    X, y = _linear_problem(n=60)
    a = _cached(train_mlps, X, y, seed=0, cache_dir=None)
    b = train_mlp(X, y, config=QUICK, seed=0)
    _assert_same_weights(a.module, b.module)


# ---------------------------------------------------------------- the 2023 code's behaviour and the competent options


def test_restore_last_keeps_the_final_weights_and_best_restores_the_best_epoch() -> None:
    """``restore="last"`` is what the 2023 code did (its state_dict history aliased the live weights)."""
    X, y = _linear_problem()
    config = MLPConfig.from_dict(dict(lr=5e-3, stopping="best", patience=5, max_epochs=60))
    best = train_mlp(X, y, config=config, seed=0)
    last = train_mlp(X, y, config=MLPConfig.from_dict({**config.to_dict(), "restore": "last"}), seed=0)
    assert best.history == last.history and best.best_epoch < best.epochs_run - 1  # the same run, stopped past its best
    # Training again for exactly epochs_run epochs with no stopping gives the final weights.
    final = train_mlp(
        X,
        y,
        config=MLPConfig.from_dict(
            {**config.to_dict(), "restore": "last", "patience": 10**6, "max_epochs": last.epochs_run}
        ),
        seed=0,
    )
    _assert_same_weights(last.module, final.module)
    with pytest.raises(AssertionError):
        _assert_same_weights(best.module, last.module)
    val_idx = best.validation_indices
    loss = lambda m: F.binary_cross_entropy_with_logits(  # noqa: E731
        m.module(torch.from_numpy(X[val_idx])).reshape(-1), torch.from_numpy(y[val_idx]).float()
    ).item()
    assert loss(best) == pytest.approx(min(best.history["val_loss"]), rel=1e-5)
    assert loss(last) == pytest.approx(last.history["val_loss"][-1], rel=1e-5)


def test_noisy_batch_validation_is_the_sum_of_noisy_batch_means() -> None:
    """The 2023 code measured validation in training mode (noise on), summed over batches of 64."""
    X, y = _linear_problem(n=400)
    clean = train_mlp(X, y, config=MLPConfig.from_dict(dict(max_epochs=4, patience=100)), seed=0)
    noisy = train_mlp(
        X, y, config=MLPConfig.from_dict(dict(max_epochs=4, patience=100, validation="noisy_batches")), seed=0
    )
    n_batches = -(-len(noisy.validation_indices) // 64)  # 80 rows: batches of 64 and 16
    assert n_batches == 2
    # Same training on the first epoch; the noisy sum of two batch means is near twice the clean mean.
    assert noisy.history["train_loss"][0] == clean.history["train_loss"][0]
    ratio = np.array(noisy.history["val_loss"]) / np.array(clean.history["val_loss"])
    assert np.all((ratio > 1.5) & (ratio < 2.5)) and not np.allclose(ratio, 2.0, atol=1e-3)


def test_plateau_schedule_lowers_the_learning_rate_only_when_the_training_loss_stalls(monkeypatch) -> None:
    steps: list[float] = []
    original = loop._Plateau.step

    def record(self, value, lrs):
        steps.append(float(value))
        return original(self, value, lrs)

    monkeypatch.setattr(loop._Plateau, "step", record)
    X, y = _linear_problem()
    model = train_mlp(
        X, y, config=MLPConfig.from_dict(dict(max_epochs=5, patience=100, lr_schedule="plateau2023")), seed=0
    )
    n_batches = -(-(len(X) - len(model.validation_indices)) // 64)
    # Stepped once per epoch on the *summed* batch losses (the mean times the number of batches).
    assert np.allclose(steps, np.array(model.history["train_loss"]) * n_batches, rtol=1e-5)
    unscheduled = train_mlp(X, y, config=MLPConfig.from_dict(dict(max_epochs=5, patience=100)), seed=0)
    assert model.history == unscheduled.history  # 5 epochs are too few for the plateau rule (patience 10) to act


def test_the_plateau_schedule_is_torchs_reduce_lr_on_plateau() -> None:
    """Each member's schedule steps as torch's ReduceLROnPlateau (factor 0.9, patience 10, cooldown 5, floor 1e-5)."""
    rng = np.random.default_rng(0)
    values = np.concatenate([np.linspace(10, 5, 20), np.full(60, 5.0), 5.0 - rng.random(40) * 1e-5, np.full(900, 4.0)])
    groups = [{"params": [torch.nn.Parameter(torch.zeros(1))]}, {"params": [torch.nn.Parameter(torch.zeros(1))]}]
    optimizer = torch.optim.Adam(groups, lr=1e-3)
    optimizer.param_groups[1]["lr"] = 0.01
    reference = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, factor=0.9, patience=10, threshold=1e-4, cooldown=5, min_lr=1e-5
    )
    ours, lrs = loop._Plateau(), [1e-3, 0.01]
    for v in values:
        reference.step(float(v))
        lrs = ours.step(float(v), lrs)
        assert lrs == [g["lr"] for g in optimizer.param_groups]
    assert lrs[0] == 1e-5 and 1e-5 < lrs[1] < 0.01  # both lowered, the first to its floor


def test_l1_on_the_first_layer_shrinks_the_decoy_weights() -> None:
    X, y = _linear_problem(p=20)
    config = MLPConfig.from_dict(dict(width=32, noise_sigma=0.0, lr=3e-3, max_epochs=40, patience=100))
    plain = train_mlp(X, y, config=config, seed=0)
    sparse = train_mlp(X, y, config=MLPConfig.from_dict({**config.to_dict(), "l1_first_layer": 3e-3}), seed=0)
    w_plain = plain.module[1].weight.detach().abs().sum(0)
    w_sparse = sparse.module[1].weight.detach().abs().sum(0)
    assert w_sparse[2:].mean() < 0.5 * w_plain[2:].mean()  # decoys 2..19 lose most of their weight
    assert w_sparse[:2].mean() > 3 * w_sparse[2:].mean()  # the two relevant inputs keep theirs


def test_monitoring_validation_auroc_restores_the_epoch_of_highest_auroc() -> None:
    X, y = _linear_problem()
    model = train_mlp(
        X, y, config=MLPConfig.from_dict(dict(lr=5e-3, monitor="auroc", stopping="best", patience=8)), seed=0
    )
    auroc = model.history["val_auroc"]
    assert len(auroc) == model.epochs_run and model.best_epoch == int(np.argmax(auroc))
    idx = model.validation_indices
    assert roc_auc_score(y[idx], model.predict_proba(X[idx])[:, 1]) == pytest.approx(max(auroc))
    assert model.epochs_run - 1 - model.best_epoch >= 8 or model.epochs_run == model.config.train.max_epochs


def test_validation_auroc_equals_scikit_learns_with_ties() -> None:
    rng = np.random.default_rng(3)
    for n in (2, 7, 134, 1000):
        y = rng.integers(0, 2, size=n)
        y[:2] = [0, 1]
        logits = torch.from_numpy(rng.integers(-5, 5, size=(n, 1)).astype(np.float32) / 4)  # many ties
        assert loop._auroc(logits, torch.from_numpy(y)) == pytest.approx(roc_auc_score(y, logits[:, 0]), abs=1e-12)
    assert loop._auroc(torch.zeros(4, 1), torch.ones(4, dtype=torch.int64)) == 0.5


@pytest.mark.parametrize(
    "field,value",
    [
        ("monitor", "accuracy"),
        ("validation", "dirty"),
        ("restore", "first"),
        ("lr_schedule", "cosine"),
        ("l1_first_layer", -1.0),
    ],
)
def test_unknown_training_options_are_refused(field, value) -> None:
    X, y = _linear_problem(n=40)
    with pytest.raises(ValueError, match=field):
        train_mlp(X, y, config=MLPConfig.from_dict({**QUICK.to_dict(), field: value}), seed=0)


# ---------------------------------------------------------------- one loop for every network


def _three_classes(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = np.digitize(X[:, 0] + X[:, 1], [-0.6, 0.6]).astype(np.int64)  # three bands, none a majority
    return X, y


def test_multi_class_mlp_has_one_logit_per_class_and_learns() -> None:
    X, y = _three_classes()
    model = train_mlp(X[:400], y[:400], config=MLPConfig.from_dict(dict(max_epochs=200, patience=20, lr=5e-3)), seed=1)
    out = model.module(torch.from_numpy(X[:5]))
    assert out.shape == (5, 3) and list(model.classes_) == [0, 1, 2]
    proba = model.predict_proba(X[400:])
    assert proba.shape == (200, 3) and np.allclose(proba.sum(1), 1.0)
    majority = np.bincount(y[400:]).max() / 200
    accuracy = (model.predict(X[400:]) == y[400:]).mean()
    assert accuracy > majority + 0.3, (accuracy, majority)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(X[400:]), proba)


def test_fixed_epoch_training_without_validation_passes_each_step_to_the_loss() -> None:
    X, y = _linear_problem(n=100, p=3)
    steps: list[int] = []

    def loss(module, xb, yb, step):
        steps.append(step)
        return loop.classification_loss(module(xb), yb)

    net = mlp.build_seeded_mlp(3, QUICK, torch.Generator().manual_seed(0))
    config = loop.TrainConfig(max_epochs=3, batch_size=32, validation="none", restore="last")
    result = loop.fit_network(
        net, X, y, config=config, loss=loss, generator=torch.Generator().manual_seed(1), device=torch.device("cpu")
    )
    assert result.epochs_run == 3 and result.steps == 12 and steps == list(range(12))
    assert result.validation_indices.size == 0 and "val_loss" not in result.history
    with pytest.raises(ValueError, match="restore='last'"):
        loop.fit_network(
            net,
            X,
            y,
            config=loop.TrainConfig(validation="none"),
            generator=torch.Generator(),
            device=torch.device("cpu"),
        )


def test_epoch_inputs_replace_the_training_rows_each_epoch_and_leave_validation_alone() -> None:
    X, y = _linear_problem(n=200, p=4)
    epochs: list[int] = []

    def same(epoch: int) -> np.ndarray:
        epochs.append(epoch)
        return X

    plain = train_mlp(X, y, config=QUICK, seed=2)
    hooked = train_mlp(X, y, config=QUICK, seed=2, epoch_inputs=same)
    _assert_same_weights(plain.module, hooked.module)  # the same inputs every epoch: the same training
    assert epochs == list(range(hooked.epochs_run))

    def shuffled(epoch: int) -> np.ndarray:  # the label's columns scrambled in every row: nothing to learn
        return np.random.default_rng(epoch).permuted(X, axis=0)

    fast = MLPConfig.from_dict(dict(max_epochs=8, patience=100, lr=1e-2))
    noise = train_mlp(X, y, config=fast, seed=2, epoch_inputs=shuffled)
    assert noise.history["train_loss"][-1] > 2 * train_mlp(X, y, config=fast, seed=2).history["train_loss"][-1]
    with pytest.raises(ValueError, match="epoch_inputs must return inputs of shape"):
        train_mlp(X, y, config=QUICK, seed=2, epoch_inputs=lambda epoch: X[:, :3])


def test_the_loop_trains_a_convolutional_network_on_images() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 1, 6, 6)).astype(np.float32)
    y = (X[:, 0, :3].mean(axis=(1, 2)) > X[:, 0, 3:].mean(axis=(1, 2))).astype(np.int64) * 2  # classes 0 and 2 of 3
    torch.manual_seed(0)  # test-only: default init of the layers
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 3)
    )
    config = loop.TrainConfig(lr=1e-2, max_epochs=30, patience=5)
    result = loop.fit_network(
        net, X, y, config=config, generator=torch.Generator().manual_seed(0), device=torch.device("cpu")
    )
    assert result.history["val_loss"][result.best_epoch] < 0.5 * result.history["val_loss"][0]
    proba = networks.predict_proba(result.module, X, torch.device("cpu"))
    assert proba.shape == (300, 3) and (proba.argmax(1) == y).mean() > 0.9


def test_replicates_are_independent_trainings_and_replicate_zero_is_the_shared_model() -> None:
    from synthbench.models import SharedModels
    from synthbench.protocol import FoldData, make_folds

    ds = datasets.make("xor", n_samples=200, n_decoys=2, seed=0)
    data = FoldData.from_dataset(ds, make_folds(200, ds.n_features, n_folds=2, seed=0)[0])
    models = SharedModels(data)
    first, again, other = models.get("forest"), models.get("forest", replicate=0), models.get("forest", replicate=1)
    assert first is again and other is not first and models.trainings == 2
    assert first.random_state != other.random_state and set(models.info) == {"forest", "forest#1"}
    with pytest.raises(ValueError, match="non-negative"):
        models.get("forest", replicate=-1)
