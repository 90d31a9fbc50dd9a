"""The one training loop trains many members as one: each member is the network it is alone, and independent.

Pinned here for every kind of network the loop trains: the MLP (2023 noise, validation and schedule), the
screened MLP's group penalty, the CNN and a network with its own loss (both trained member by member under one
optimiser). Also: a member whose rows change changes no other
member, to the bit; a member whose loss turns NaN fails alone; a batch too large for its memory budget is
split without changing any member.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from synthbench.models.cnn import CNNConfig, train_cnn, train_cnns
from synthbench.models.loop import (
    GroupPenalty,
    Member,
    MemberData,
    TrainConfig,
    TrainingFailed,
    fit_network,
    fit_networks,
    memory_chunks,
)
from synthbench.models.mlp import MLPConfig, build_seeded_mlp, train_mlp, train_mlps
from synthbench.models.presets import mlp_config
from synthbench.models.stacked import ParameterLayout, StackedAdam


def _problem(n: int, p: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).astype(np.float32)
    y = ((X[:, 0] * X[:, 1] > 0) ^ (rng.random(n) < 0.1)).astype(np.int64)
    return X, y


def _same(a: nn.Module, b: nn.Module, atol: float = 0.0) -> bool:
    pairs = zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    return all(torch.equal(x, y) if atol == 0 else torch.allclose(x, y, rtol=0, atol=atol) for x, y in pairs)


#: Members of different sizes (so their last batches and epochs of steps differ) and seeds.
SIZES_SEEDS = [(300, 1), (257, 2), (300, 3), (190, 4)]


def _members(sizes_seeds=SIZES_SEEDS, p: int = 6) -> list[MemberData]:
    return [MemberData(*_problem(n, p, seed), seed) for n, seed in sizes_seeds]


@pytest.mark.parametrize(
    "config",
    [
        MLPConfig(train=TrainConfig(max_epochs=30, patience=2, lr=2e-2)),  # noise 0.1, clean validation, stops early
        mlp_config("passemiers2023"),  # noisy summed validation, the plateau schedule, last weights
        MLPConfig(width=32, depth=1, noise_sigma=0.0, train=TrainConfig(l1_first_layer=1e-3, max_epochs=20)),
        MLPConfig(train=TrainConfig(monitor="auroc", stopping="best", patience=4, max_epochs=25, weight_decay=1e-3)),
    ],
    ids=["default", "passemiers2023", "l1", "auroc"],
)
def test_an_mlp_trained_in_a_batch_is_the_mlp_trained_alone(config):
    if config.train.max_epochs > 30:
        config = dataclasses.replace(config, train=dataclasses.replace(config.train, max_epochs=30))
    batch = train_mlps(_members(), config=config)
    epochs = set()
    for member, model in zip(_members(), batch, strict=True):
        alone = train_mlp(member.X, member.y, config=config, seed=member.seed)
        assert _same(model.module, alone.module)  # on the CPU, to the bit
        assert model.epochs_run == alone.epochs_run and model.best_epoch == alone.best_epoch
        assert model.history == alone.history
        epochs.add(model.epochs_run)
    if config.train.patience == 2:
        assert len(epochs) > 1  # the members stopped at different epochs: the stopped ones did not change


def test_the_screened_mlp_trained_in_a_batch_is_the_one_trained_alone():
    config = dataclasses.replace(
        mlp_config("screened_mlp"), train=dataclasses.replace(mlp_config("screened_mlp").train, max_epochs=12)
    )
    members = _members(SIZES_SEEDS[:3], p=9)
    batch = train_mlps(members, config=config)
    for member, model in zip(members, batch, strict=True):
        alone = train_mlp(member.X, member.y, config=config, seed=member.seed)
        assert _same(model.module, alone.module)
        assert model.screening == alone.screening and np.array_equal(model.features, alone.features)


def test_the_group_penalty_is_the_same_batched_and_on_one_network():
    weight = torch.randn(3, 16, 4 * 8, generator=torch.Generator().manual_seed(0))
    penalty = GroupPenalty(1e-3, 8)
    stacked = penalty.stacked(weight)
    for k in range(3):
        one = nn.Sequential(nn.Linear(32, 16))
        one[0].weight.data = weight[k].clone()
        expected = 1e-3 * weight[k].reshape(16, 4, 8).pow(2).sum(dim=(0, 2)).add(1e-12).sqrt().sum()
        assert torch.allclose(penalty(one, torch.zeros(1), torch.zeros(())), expected, rtol=1e-6)
        assert torch.allclose(stacked[k], expected, rtol=1e-6)
    # the batched loop's gradient of it, outside autograd, is autograd's
    leaf = weight.clone().requires_grad_(True)
    penalty.stacked(leaf).sum().backward()
    grad, out = torch.randn_like(weight), torch.empty_like(weight)
    assert torch.equal(penalty.add_gradient(weight, grad, out), stacked)
    torch.testing.assert_close(out, grad + leaf.grad, rtol=1e-6, atol=1e-9)


def test_a_cnn_trained_in_a_batch_is_the_cnn_trained_alone():
    """Convolutions are not stacked: the members train module by module under one optimiser, each as alone."""
    rng = np.random.default_rng(0)
    images = [rng.normal(size=(n, 1, 8, 8)).astype(np.float32) for n in (60, 52)]
    labels = [rng.integers(0, 2, size=len(x)) for x in images]
    config = CNNConfig(
        channels=(4, 4),
        hidden=8,
        train=TrainConfig(lr=1e-3, weight_decay=0.0, max_epochs=50, validation="none", restore="last", batch_size=64),
    )
    members = [MemberData(x, y, seed) for x, y, seed in zip(images, labels, (5, 6), strict=True)]
    batch = train_cnns(members, config=config, n_classes=2)
    for member, model in zip(members, batch, strict=True):
        alone = train_cnn(member.X, member.y, config=config, seed=member.seed, n_classes=2)
        assert model.epochs_run == alone.epochs_run == 50  # 50 steps: one batch per epoch
        assert _same(model.module, alone.module)


def test_the_layout_keeps_channels_last_weights_and_adam_updates_them_as_torch_does():
    """A channels-last convolution weight lies in its row in memory order: bound to the row it keeps its strides, and
    one step of the stacked Adam on the row's gradient is torch's Adam on the module, to the bit."""
    gen = torch.Generator().manual_seed(0)
    ours = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 2, 3)).to(memory_format=torch.channels_last)
    reference = copy.deepcopy(ours)
    layout = ParameterLayout.of(ours)
    assert layout.orders[0] == (0, 2, 3, 1) and layout.orders[1] == (0,)
    adam = StackedAdam(
        layout.row(ours)[None].clone(),
        segments=[(a, a + math.prod(s), 0) for a, s in zip(layout.offsets, layout.shapes, strict=True)],
        weight_decay=[0.0],
        eps=1e-8,
    )
    layout.bind(ours, adam.flat[0])
    assert [p.stride() for p in ours.parameters()] == [p.stride() for p in reference.parameters()]
    torch_adam = torch.optim.Adam(reference.parameters(), lr=1e-2, fused=True)
    x = torch.randn(5, 3, 9, 9, generator=gen)
    for module in (ours, reference):
        module(x).square().sum().backward()
    adam.grad[0] = layout.gradient(ours)
    adam.step([[1e-2]], [True])
    torch_adam.step()
    assert _same(ours, reference)


def test_the_trained_cnn_keeps_its_convolutions_channels_last():
    """The layout the CNN is built in (the fast one on the CPU) is the one it trains and is returned in."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 1, 8, 8)).astype(np.float32), rng.integers(0, 2, size=40)
    model = train_cnn(X, y, config=CNNConfig(channels=(4, 4), hidden=8, train=TrainConfig(max_epochs=2)), seed=0)
    convolutions = [m.weight for m in model.module if isinstance(m, nn.Conv2d)]
    assert len(convolutions) == 2
    assert all(w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous() for w in convolutions[1:])


def _custom(seed: int, n: int) -> Member:
    """A member trained through a loss of its own (not stackable: it trains module by module)."""
    X, y = _problem(n, 6, seed)
    gen = torch.Generator().manual_seed(seed)
    net = build_seeded_mlp(6, MLPConfig(), gen)

    def loss(module, xb, yb, step):
        return nn.functional.binary_cross_entropy_with_logits(module(xb)[:, 0], yb.float()) + 1e-3 * step

    return Member(net, X, y, gen, loss=loss)


def test_a_network_with_its_own_loss_trained_in_a_batch_is_the_network_trained_alone():
    config = TrainConfig(max_epochs=15, patience=3)
    batch = fit_networks([_custom(1, 200), _custom(2, 170)], config=config, device=torch.device("cpu"))
    for (seed, n), result in zip([(1, 200), (2, 170)], batch, strict=True):
        one = _custom(seed, n)
        alone = fit_network(
            one.module, one.X, one.y, config=config, generator=one.generator, device=torch.device("cpu"), loss=one.loss
        )
        assert _same(result.module, alone.module)
        assert result.history == alone.history and result.steps == alone.steps


def test_changing_one_members_rows_changes_no_other_member():
    config = MLPConfig(train=TrainConfig(max_epochs=10, patience=3))
    members = _members()
    first = train_mlps(members, config=config)
    X, y = members[1].X.copy(), members[1].y.copy()
    X[:20] *= -1.0
    changed = list(members)
    changed[1] = MemberData(X, y, members[1].seed)
    second = train_mlps(changed, config=config)
    assert not _same(first[1].module, second[1].module)
    for k in (0, 2, 3):
        assert _same(first[k].module, second[k].module)
        assert first[k].history == second[k].history


def test_a_member_whose_loss_turns_nan_fails_alone():
    config = TrainConfig(max_epochs=8, patience=100)
    members = [_custom(1, 120), _custom(2, 120), _custom(3, 120)]
    with torch.no_grad():
        members[1].module[1].weight[0, 0] = float("nan")  # planted
    results = fit_networks(members, config=config, device=torch.device("cpu"))
    assert results[1].failure is not None and "nan" in results[1].failure and results[1].epochs_run == 1
    for k in (0, 2):
        assert results[k].failure is None and results[k].epochs_run == 8
        one = _custom(k + 1, 120)
        alone = fit_network(
            one.module, one.X, one.y, config=config, generator=one.generator, device=torch.device("cpu"), loss=one.loss
        )
        assert _same(results[k].module, alone.module)


def test_a_failed_mlp_is_reported_in_its_place():
    config = MLPConfig(train=TrainConfig(max_epochs=5, patience=100, lr=1e30))  # diverges to inf, then NaN
    X, y = _problem(200)
    (model,) = train_mlps([MemberData(X * 1e20, y, 0)], config=config)
    assert isinstance(model, TrainingFailed)
    with pytest.raises(TrainingFailed, match="training failed"):
        train_mlp(X * 1e20, y, config=config, seed=0)


def test_a_batch_over_its_memory_budget_is_split_and_no_member_changes():
    config = MLPConfig(train=TrainConfig(max_epochs=6, patience=100))
    members = _members()
    whole = train_mlps(members, config=config)
    split = train_mlps(members, config=config, memory_budget=1)  # every member its own batch
    for a, b in zip(whole, split, strict=True):
        assert _same(a.module, b.module)
    assert memory_chunks([10, 10, 10, 10], 60) == [[0, 1], [2, 3]]
    assert memory_chunks([10, 100, 10], 60) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="positive"):
        memory_chunks([1], 0)


def test_the_run_s_batch_memory_reaches_the_trainer(monkeypatch):
    # --batch-memory MIB becomes TrainSettings.batch_memory (bytes), the budget every batched training splits by
    from conftest import fold_of

    from synthbench import datasets
    from synthbench.models import TrainSettings, mlp
    from synthbench.models.neural import train_folds_mlp
    from synthbench.models.shared import TrainRequest

    seen = []
    monkeypatch.setattr(mlp, "memory_chunks", lambda sizes, budget: seen.append(budget) or [list(range(len(sizes)))])
    data = fold_of(datasets.make("xor", n_samples=60, n_decoys=2, seed=0))
    train_folds_mlp(
        [TrainRequest(data, 0, None)],
        TrainSettings(batch_memory=12345),
        "passemiers2023_corrected",
        training={"max_epochs": 1},
    )
    assert seen == [12345]
    with pytest.raises(ValueError, match="batch_memory"):
        TrainSettings(batch_memory=0)


def test_stacked_adam_is_torchs_fused_adam_for_each_member():
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(3, 64, generator=gen)
    ours = StackedAdam(start.clone(), segments=[(0, 30, 0), (30, 40, 1)], weight_decay=[1e-3, 0.0], eps=1e-8)
    params = [[nn.Parameter(start[k, :30].clone()), nn.Parameter(start[k, 30:40].clone())] for k in range(3)]
    reference = [
        torch.optim.Adam(
            [{"params": [a]}, {"params": [b], "weight_decay": 0.0, "lr": 1e-2}], lr=3e-3, weight_decay=1e-3, fused=True
        )
        for a, b in params
    ]
    for step in range(50):
        grad = torch.randn(3, 64, generator=gen)
        active = [True, step % 2 == 0, step < 20]  # members that skip steps, and one that stops
        for k in range(3):
            if active[k]:
                params[k][0].grad, params[k][1].grad = grad[k, :30].clone(), grad[k, 30:40].clone()
                reference[k].step()
        ours.grad.copy_(grad)
        ours.step([[3e-3, 1e-2]] * 3, active)
    for k in range(3):
        assert torch.equal(ours.flat[k, :30], params[k][0].detach()) and torch.equal(
            ours.flat[k, 30:40], params[k][1].detach()
        )
    assert ours.steps == [50, 25, 20] and torch.equal(ours.flat[:, 40:], start[:, 40:])  # padding untouched


def _removal_grid(scorers: tuple[str, ...], fractions: tuple[float, ...] = ()):
    """Saliency and the random control under remove-and-retrain on xor (3 decoys, 90 rows, 3 folds), 2 repeats (data
    randomisation, when asked for, fits 10 to 40 epochs)."""
    from synthbench.runner.grid import GridSpec

    return GridSpec(
        ("xor",),
        ("saliency", "random"),
        (3,),
        n_samples=90,
        n_folds=3,
        seed=1,
        scorers=scorers,
        scorer_options={
            **({"fractions": fractions, "repeats": 2} if {"roar", "kar"} & set(scorers) else {}),
            **({"epochs": 10, "max_epochs": 40} if "data_randomisation" in scorers else {}),
        },
    )


def test_a_grid_stores_the_same_values_whatever_shares_a_batch(tmp_path):
    """ROAR trains a cell's retrainings and clean replicates as one batch, and with a disk cache the folds of a
    setting train their shared network as one, data randomisation's networks on permuted labels as one, and the
    ceiling's networks on the relevant columns as one: the values stored are those of the serial run, of two worker
    processes, of a run interrupted then resumed, of every fold run on its own, and of the folds trained together, to
    the bit."""
    from synthbench.models import TrainSettings
    from synthbench.runner.execute import execute
    from synthbench.runner.executors import ProcessExecutor
    from synthbench.runner.store import ResultStore

    grid = _removal_grid(("roar", "data_randomisation"), (0.5,))
    cells = grid.cells()
    key = ["fold", "method", "metric"]
    cached = TrainSettings(cache_dir=str(tmp_path / "cache"))

    def values(path, *parts, executor=None, settings=TrainSettings()):
        with ResultStore(path) as store:
            for part in parts:
                summary = execute(part, store, settings=settings, **({"executor": executor} if executor else {}))
                assert summary.failed == 0
            rows = store.scores(c.cell_id for c in cells)
        return rows[[*key, "value"]].sort_values(key).reset_index(drop=True)

    serial = values(tmp_path / "serial.sqlite", cells)
    assert serial["fold"].nunique() == 3 and {"roar_accuracy", "data_randomisation_fit"} <= set(serial["metric"])
    by_fold = [[c for c in cells if c.fold == f] for f in range(3)]
    runs = {
        "two processes": values(tmp_path / "jobs.sqlite", cells, executor=ProcessExecutor(2)),
        "interrupted, resumed": values(tmp_path / "resumed.sqlite", by_fold[1], cells),
        "fold by fold": values(tmp_path / "alone.sqlite", *by_fold),
        # a task of one method's cells retrains that method's models alone, not with the other method's
        "method by method": values(
            tmp_path / "methods.sqlite", *[[c for c in cells if c.method == m] for m in ("saliency", "random")]
        ),
        # with a disk cache, the first fold task trains the shared network of all three folds as one batch
        "folds together": values(tmp_path / "cached.sqlite", by_fold[2], cells, settings=cached),
    }
    # one setting, one preset: its shared network, its networks trained on permuted labels, and the ceiling's networks
    # on the relevant columns
    assert len(list((tmp_path / "cache" / "settings").glob("*.lock"))) == 3
    for name, got in runs.items():
        pd.testing.assert_frame_equal(got, serial, check_exact=True, obj=name)


def test_a_task_retrains_the_removal_models_of_all_its_cells_as_one_batch(monkeypatch):
    """ROAR and KAR of two methods in one fold task: their 2 x 2 x 2 fractions x 2 repeats = 16 retrainings are one
    batch, trained before the first cell is scored; each cell's scorer takes its own and counts their shares of the
    batch's seconds; the values are those of each cell run in a task of its own."""
    from synthbench.models.shared import SharedModels
    from synthbench.runner.cells import run_task
    from synthbench.runner.grid import FoldTask

    grid = _removal_grid(("roar", "kar"), (0.3, 0.6))
    cells = [c for c in grid.cells() if c.fold == 0]
    batches: list[int] = []
    train = SharedModels._train

    def spied(self, kind, requests, training):
        batches.append(len(requests))
        return train(self, kind, requests, training)

    monkeypatch.setattr(SharedModels, "_train", spied)
    together = list(run_task(FoldTask(tuple(cells))))
    assert batches == [1, 16, 1]  # the fold's network, every retraining, then its second replicate (the clean curve)
    assert all(r.status == "ok" for r in together) and all(r.scorer_seconds > 0.05 for r in together)
    batches.clear()
    alone = [r for c in cells for r in run_task(FoldTask((c,)))]
    # each cell in a task of its own trains its 2 fractions x 2 repeats alone (random's plan needs no network, so
    # its cells train the retrainings first, then the clean replicates 0 and 1 as one batch)
    assert batches == [1, 4, 1] * 2 + [4, 2] * 2
    assert [r.scores for r in together] == [r.scores for r in alone]


def test_across_setting_gives_each_fold_its_part_and_counts_the_siblings_apart(tmp_path):
    """With siblings and a disk cache the setting's folds are computed at once, under a lock, and each fold takes its
    own part; what the call spent on the other folds' parts is the siblings' seconds. Without a cache, only the fold
    itself is computed."""
    import time

    from synthbench.models import Siblings, TrainSettings
    from synthbench.models.shared import SharedModels
    from synthbench.protocol import setting_folds
    from synthbench.runner.cells import _mark, _not_own

    folds = setting_folds("xor", n_samples=60, seed=0, n_folds=3, n_decoys=2)
    asked: list[list[int]] = []

    def compute(given):
        asked.append([f.fold for f in given])
        for _ in given:
            time.sleep(0.2)
        return [(f"part of fold {f.fold}", 0.2) for f in given]

    siblings = Siblings("xor setting", lambda: folds)
    cached = SharedModels(folds[1], TrainSettings(cache_dir=str(tmp_path)), preset="screened_mlp", siblings=siblings)
    mark = _mark(cached)
    assert cached.across_setting("mlp", ("a tag",), compute) == ("part of fold 1", 0.2)
    assert asked == [[0, 1, 2]] and cached.siblings_seconds >= 0.4
    assert _not_own(cached, mark) >= 0.4  # the runner leaves them out of the timed call's seconds
    # a part read at once whose training took 0.2 s: the call's own time is all the runner leaves out beside the part's
    # recorded seconds (which the method that needs the model counts), so no timed call goes below zero
    read = SharedModels(folds[2], TrainSettings(cache_dir=str(tmp_path)), preset="screened_mlp", siblings=siblings)
    assert read.across_setting("mlp", ("a tag",), lambda given: [(f.fold, 0.2) for f in given]) == (2, 0.2)
    assert -0.2 < read.siblings_seconds < -0.1
    alone = SharedModels(folds[1], TrainSettings(), preset="screened_mlp", siblings=siblings)
    assert alone.across_setting("mlp", ("a tag",), compute) == ("part of fold 1", 0.2)
    assert asked[1:] == [[1]] and alone.siblings_seconds == 0.0


def test_data_randomisation_fits_the_setting_s_networks_as_one_batch(tmp_path, monkeypatch):
    """The first fold task of a setting trains every fold's network on permuted labels as one batch per round of
    doubling (10, 20, 40 epochs: the folds still unfit); the other folds' tasks read theirs from the cache."""
    from synthbench.models import TrainSettings, neural
    from synthbench.runner.cells import run_task
    from synthbench.runner.grid import FoldTask

    cells = [c for c in _removal_grid(("data_randomisation",)).cells() if c.method == "saliency"]
    batches: list[tuple[int, int]] = []
    train = neural.train_mlps

    def spied(members, **kwargs):
        if kwargs["config"].train.validation == "none":  # on permuted labels
            batches.append((len(members), kwargs["config"].train.max_epochs))
        return train(members, **kwargs)

    monkeypatch.setattr(neural, "train_mlps", spied)
    settings = TrainSettings(cache_dir=str(tmp_path))
    (first,) = run_task(FoldTask(tuple(c for c in cells if c.fold == 0)), settings=settings)
    assert first.status == "ok" and first.scores["data_randomisation_fit"] < 0.95  # 40 epochs do not fit them
    assert batches == [(3, 10), (3, 20), (3, 40)]
    batches.clear()
    rest = [r for f in (1, 2) for r in run_task(FoldTask(tuple(c for c in cells if c.fold == f)), settings=settings)]
    assert batches == [] and all(r.status == "ok" for r in rest)
